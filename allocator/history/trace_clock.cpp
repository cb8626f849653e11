#include "allocator/history/trace_clock.hpp"

#include <time.h>

#include <fstream>
#include <string>

namespace mtia::allocator {

namespace {

// Whether the time-stamp counter runs at one constant rate on every core, through sleep states
// (the kernel's constant_tsc and nonstop_tsc flags).
bool invariantTsc() {
#if defined(__x86_64__)
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        const std::string padded = line + " ";
        return padded.find(" constant_tsc ") != std::string::npos &&
               padded.find(" nonstop_tsc ") != std::string::npos;
    }
#endif
    return false;
}

}  // namespace

TraceClock::TraceClock() : tsc_(invariantTsc()) {
    startNs_ = realtimeNs();
    start_ = now();
}

int64_t TraceClock::realtimeNs() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

TraceClock::Converter TraceClock::converter() const {
    constexpr int64_t kMinSpanNs =
        10'000'000;  // 10 ms: a rate measured over less is too rough to keep
    constexpr int64_t kKeepNs = 60'000'000'000;  // a minute
    std::lock_guard<std::mutex> lock(mu_);
    int64_t nowNs = realtimeNs();
    if (keptAtNs_ != 0 && nowNs - keptAtNs_ < kKeepNs) return kept_;
    // A rate measured over less than 10 ms is too rough: a snapshot that early waits out the rest
    // (once per process; snapshots are not cheap anyway).
    while (tsc_ && nowNs - startNs_ < kMinSpanNs) nowNs = realtimeNs();
    Converter c;  // anchored where the clock was made: later conversions with the same rate agree
    c.base_ = start_;
    c.baseNs_ = startNs_;
    if (tsc_) {
        const uint64_t nowStamp = now();
        const double ticks = static_cast<double>(nowStamp - start_);
        const double ns = static_cast<double>(nowNs - startNs_);
        c.nsPerTick_ = ticks > 0 && ns > 0 ? ns / ticks : 1.0;
    }
    kept_ = c;
    keptAtNs_ = nowNs;
    return c;
}

int64_t TraceClock::Converter::epochUs(uint64_t stamp) const noexcept {
    const double deltaNs = (static_cast<double>(stamp) - static_cast<double>(base_)) * nsPerTick_;
    return (baseNs_ + static_cast<int64_t>(deltaNs)) / 1000;
}

}  // namespace mtia::allocator
