// Utilisation from a process's busy time without a second reading: the owner
// of a slot keeps two checkpoints per device (when, and how much busy time it
// had then), the newer taken at most once a second while its engines work.
// A reader measures the busy share since the newest checkpoint that is at
// least half a second old, so a one-shot query sees the last one to two
// seconds of a working process, and the share of a process that went idle
// decays as its checkpoint ages (nvidia-smi's "recent sample period").
//
// A checkpoint is one 64-bit word, (monotonic ms << 32 | busy ms), both taken
// mod 2^32: readers never see half of one, and differences stay right for
// spans under 49 days. 0 means "none".
#pragma once

#include <algorithm>
#include <cstdint>
#include <ctime>

namespace mtia::registry {

inline constexpr uint32_t kBusyMarkIntervalMs =
    1000;  // the owner's newest checkpoint is at most this old...
inline constexpr uint32_t kBusyMinWindowMs =
    500;  // ...while it works; readers want this much at least

inline uint64_t monotonicClockNs() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint32_t toMs32(uint64_t ns) noexcept {
    return static_cast<uint32_t>(ns / 1000000u);
}

// Never 0, which means "none": a checkpoint in the clock's first millisecond with no busy time yet
// reads as 1 ms busy (an error of 1 ms in a window of at least 500).
inline uint64_t makeBusyMark(uint64_t nowNs, uint64_t busyNs) noexcept {
    const uint64_t mark = uint64_t{toMs32(nowNs)} << 32 | toMs32(busyNs);
    return mark != 0 ? mark : 1;
}

inline uint32_t busyMarkTimeMs(uint64_t mark) noexcept {
    return static_cast<uint32_t>(mark >> 32);
}
inline uint32_t busyMarkBusyMs(uint64_t mark) noexcept {
    return static_cast<uint32_t>(mark);
}
inline uint32_t busyMarkAgeMs(uint64_t mark, uint64_t nowNs) noexcept {
    return toMs32(nowNs) - busyMarkTimeMs(mark);
}

// The owner's side, after adding busy time (total is the new busyNs): whether marks[1] is due for
// replacement (marks[0] then takes the old marks[1]).
inline bool busyMarkDue(uint64_t newer, uint64_t nowNs) noexcept {
    return newer == 0 || busyMarkAgeMs(newer, nowNs) >= kBusyMarkIntervalMs;
}

// The reader's side: the busy share (0..1) of a device for one process whose busy time is busyNs
// and whose checkpoints are older/newer, at nowNs. 0 without a usable checkpoint.
inline double recentBusyShare(uint64_t busyNs, uint64_t older, uint64_t newer,
                              uint64_t nowNs) noexcept {
    uint64_t mark = newer;
    if (mark == 0 || (busyMarkAgeMs(mark, nowNs) < kBusyMinWindowMs && older != 0)) mark = older;
    if (mark == 0) return 0;
    const uint32_t ageMs = busyMarkAgeMs(mark, nowNs);
    if (ageMs == 0 || ageMs > (uint32_t{1} << 31))
        return 0;  // in the future: another clock; say nothing
    const uint32_t busyMs = toMs32(busyNs) - busyMarkBusyMs(mark);
    if (busyMs > (uint32_t{1} << 31)) return 0;  // the process zeroed its figures since
    return std::min(1.0, static_cast<double>(busyMs) / static_cast<double>(ageMs));
}

}  // namespace mtia::registry
