// The caching allocator's counters for one device: the fields of
// mtiaMemoryStats (ABI.md), with PyTorch's meaning (DeviceStats). Each Stat
// keeps current, peak, allocated (everything ever added) and freed
// (everything ever taken away); a StatArray keeps one per pool view, indexed
// all / small pool / large pool as mtiaStatAll, mtiaStatSmallPool and
// mtiaStatLargePool. Not thread-safe: the allocator updates them under its
// device lock.
#pragma once

#include "allocator/size_policy.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace mtia::allocator {

struct Stat {
    int64_t current = 0;
    int64_t peak = 0;
    int64_t allocated = 0;
    int64_t freed = 0;

    void increase(int64_t n) {
        current += n;
        peak = std::max(peak, current);
        allocated += n;
    }
    void decrease(int64_t n) {
        current -= n;
        freed += n;
    }
    void resetPeak() { peak = current; }
    void resetAccumulated() { allocated = freed = 0; }
    bool operator==(const Stat&) const = default;
};

// Indexes of a StatArray; the same numbers as the ABI's mtiaStat* indexes.
enum StatView : int { kStatAll = 0, kStatSmallPool = 1, kStatLargePool = 2 };

struct StatArray {
    std::array<Stat, 3> views{};

    // Counts n in the "all" view and in the view of pool.
    void increase(PoolKind pool, int64_t n) {
        views[kStatAll].increase(n);
        views[viewOf(pool)].increase(n);
    }
    void decrease(PoolKind pool, int64_t n) {
        views[kStatAll].decrease(n);
        views[viewOf(pool)].decrease(n);
    }
    const Stat& operator[](StatView v) const { return views[v]; }
    void resetPeak() {
        for (Stat& s : views) s.resetPeak();
    }
    void resetAccumulated() {
        for (Stat& s : views) s.resetAccumulated();
    }
    static StatView viewOf(PoolKind pool) {
        return pool == PoolKind::Small ? kStatSmallPool : kStatLargePool;
    }
};

struct DeviceStats {
    StatArray allocation;      // allocation requests served
    StatArray segment;         // device allocations (segments) held
    StatArray active;          // blocks allocated or waiting for other streams before they are free
    StatArray inactiveSplit;   // free blocks inside split segments
    StatArray allocatedBytes;  // rounded bytes handed out
    StatArray reservedBytes;   // bytes held from the device
    StatArray activeBytes;     // bytes of active blocks
    StatArray
        inactiveSplitBytes;       // free bytes inside split segments (not returnable to the device)
    StatArray requestedBytes;     // bytes the callers asked for, unrounded, of active blocks
    int64_t numAllocRetries = 0;  // free-everything-and-retry slow paths taken
    int64_t numOoms = 0;          // requests that failed out of memory
    int64_t numSyncAllStreams = 0;  // waits for every pending cross-stream use
    int64_t numDeviceAlloc = 0;     // driver allocations (and maps)
    int64_t numDeviceFree = 0;      // driver frees (and unmaps)
    Stat oversizeAllocations;       // allocations of at least max_split_size_mb
    Stat oversizeSegments;          // segments of at least max_split_size_mb
    int64_t maxSplitSize = 0;       // the setting, in bytes (-1: no limit, as PyTorch reports it)

    // mtiaMemoryResetPeakStats: every peak becomes the current value.
    void resetPeaks() {
        for (StatArray* a : arrays()) a->resetPeak();
        oversizeAllocations.resetPeak();
        oversizeSegments.resetPeak();
    }
    // mtiaMemoryResetAccumulatedStats: allocated and freed totals and the event counters start
    // over.
    void resetAccumulated() {
        for (StatArray* a : arrays()) a->resetAccumulated();
        oversizeAllocations.resetAccumulated();
        oversizeSegments.resetAccumulated();
        numAllocRetries = numOoms = numSyncAllStreams = numDeviceAlloc = numDeviceFree = 0;
    }

private:
    std::array<StatArray*, 9> arrays() {
        return {&allocation,     &segment,       &active,      &inactiveSplit,
                &allocatedBytes, &reservedBytes, &activeBytes, &inactiveSplitBytes,
                &requestedBytes};
    }
};

}  // namespace mtia::allocator
