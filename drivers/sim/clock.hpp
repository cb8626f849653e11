// The one clock of the simulator: timestamp commands and clockNow() must agree,
// and CLOCK_MONOTONIC is what other processes (and the runtime) can read too.
#pragma once

#include <cstdint>
#include <ctime>

namespace mtia::sim {

inline uint64_t monotonicNs() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Sleeps at least ns nanoseconds, resuming after signals.
void sleepNs(uint64_t ns) noexcept;

}  // namespace mtia::sim
