// Polling with growing gaps. A look at a cache line that another CPU writes
// pulls the line over, and that CPU has to fetch it back for its next write;
// looking less and less often bounds what a poller costs the thread it waits
// for, at the price of noticing the change up to one gap late.
#pragma once

#include "clock.hpp"
#include "cpu_relax.hpp"

#include <algorithm>
#include <cstdint>

namespace mtia::sim {

class Backoff {
public:
    // The first gap is firstGapNs; each later one doubles, up to maxGapNs.
    Backoff(uint64_t firstGapNs, uint64_t maxGapNs)
        : start_(monotonicNs()), last_(start_), gap_(firstGapNs), max_(maxGapNs) {}

    uint64_t start() const { return start_; }
    // Pauses (without a system call) until the next look is due; returns the time then.
    uint64_t pause() {
        const uint64_t due = last_ + gap_;
        uint64_t now = 0;
        do {
            cpuRelax();
            cpuRelax();
            now = monotonicNs();
        } while (now < due);
        last_ = now;
        gap_ = std::min(gap_ * 2, max_);
        return now;
    }

private:
    const uint64_t start_;
    uint64_t last_;
    uint64_t gap_;
    const uint64_t max_;
};

}  // namespace mtia::sim
