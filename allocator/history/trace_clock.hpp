// The time stamps of trace entries: read cheaply when recording (the CPU's
// time-stamp counter on x86-64 when it ticks at a constant rate on every core,
// about a quarter of a clock_gettime call), turned into epoch microseconds only
// when a snapshot is taken, from two (counter, CLOCK_REALTIME) pairs: one when
// the clock was made, one at the conversion. PyTorch converts its approximate
// clock the same way. The rate is measured over at least 10 ms (a snapshot taken
// sooner after start-up waits out the rest) and kept for a minute, so snapshots
// taken close together give an entry the same time.
// Elsewhere the stamps are CLOCK_REALTIME nanoseconds.
#pragma once

#include <cstdint>
#include <mutex>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace mtia::allocator {

class TraceClock {
public:
    TraceClock();

    // A raw stamp. Thread-safe, non-blocking.
    uint64_t now() const noexcept {
#if defined(__x86_64__)
        if (tsc_) return __rdtsc();
#endif
        return realtimeNs();
    }

    // Converts raw stamps to epoch microseconds with the rate seen between construction and the
    // call to converter(). Thread-safe.
    class Converter {
    public:
        int64_t epochUs(uint64_t stamp) const noexcept;

    private:
        friend class TraceClock;
        uint64_t base_ = 0;   // a stamp
        int64_t baseNs_ = 0;  // CLOCK_REALTIME at base_
        double nsPerTick_ = 1;
    };
    Converter converter() const;

    static int64_t realtimeNs() noexcept;

private:
    mutable std::mutex mu_;
    mutable Converter kept_;        // the last conversion measured over a long enough span
    mutable int64_t keptAtNs_ = 0;  // when it was measured (0: none kept)
    bool tsc_ = false;              // stamps are time-stamp-counter ticks
    uint64_t start_ = 0;            // the stamp and the real time when made
    int64_t startNs_ = 0;
};

}  // namespace mtia::allocator
