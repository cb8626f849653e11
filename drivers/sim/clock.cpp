#include "clock.hpp"

#include <cerrno>

namespace mtia::sim {

void sleepNs(uint64_t ns) noexcept {
    if (ns == 0) return;
    // An absolute deadline keeps the total right however often a signal interrupts the sleep.
    const uint64_t deadline = monotonicNs() + ns;
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(deadline / 1000000000ull);
    ts.tv_nsec = static_cast<long>(deadline % 1000000000ull);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
}

}  // namespace mtia::sim
