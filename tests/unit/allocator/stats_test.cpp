// The allocator's counters: PyTorch's Stat arithmetic, the all / small / large views, and the two
// resets.
#include "allocator/stats.hpp"

#include <gtest/gtest.h>

using namespace mtia::allocator;

TEST(AllocatorStats, StatTracksCurrentPeakAndTotals) {
    Stat s;
    s.increase(100);
    s.increase(50);
    s.decrease(120);
    s.increase(10);
    EXPECT_EQ(s, (Stat{40, 150, 160, 120}));
    s.resetPeak();
    EXPECT_EQ(s.peak, 40);
    s.resetAccumulated();
    EXPECT_EQ(s, (Stat{40, 40, 0, 0}));
    s.decrease(40);
    EXPECT_EQ(s, (Stat{0, 40, 0, 40}));  // a reset peak stays until exceeded
}

TEST(AllocatorStats, PoolViewsAddUpToAll) {
    StatArray bytes;
    bytes.increase(PoolKind::Small, 512);
    bytes.increase(PoolKind::Large, 4 << 20);
    bytes.decrease(PoolKind::Small, 512);
    EXPECT_EQ(bytes[kStatAll], (Stat{4 << 20, (4 << 20) + 512, (4 << 20) + 512, 512}));
    EXPECT_EQ(bytes[kStatSmallPool], (Stat{0, 512, 512, 512}));
    EXPECT_EQ(bytes[kStatLargePool], (Stat{4 << 20, 4 << 20, 4 << 20, 0}));
    EXPECT_EQ(bytes[kStatAll].current,
              bytes[kStatSmallPool].current + bytes[kStatLargePool].current);
}

TEST(AllocatorStats, DeviceResetsCoverEveryCounter) {
    DeviceStats d;
    d.allocation.increase(PoolKind::Small, 3);
    d.requestedBytes.increase(PoolKind::Large, 1000);
    d.requestedBytes.decrease(PoolKind::Large, 400);
    d.oversizeAllocations.increase(2);
    d.oversizeAllocations.decrease(1);
    d.numAllocRetries = 2;
    d.numOoms = 1;
    d.numSyncAllStreams = 4;
    d.numDeviceAlloc = 5;
    d.numDeviceFree = 3;
    d.maxSplitSize = 64 << 20;

    d.resetPeaks();
    EXPECT_EQ(d.requestedBytes[kStatAll].peak, 600);
    EXPECT_EQ(d.oversizeAllocations.peak, 1);
    EXPECT_EQ(d.allocation[kStatSmallPool].peak, 3);
    EXPECT_EQ(d.numOoms, 1);  // peaks only

    d.resetAccumulated();
    EXPECT_EQ(d.requestedBytes[kStatAll], (Stat{600, 600, 0, 0}));
    EXPECT_EQ(d.requestedBytes[kStatLargePool], (Stat{600, 600, 0, 0}));
    EXPECT_EQ(d.allocation[kStatAll], (Stat{3, 3, 0, 0}));
    EXPECT_EQ(d.oversizeAllocations, (Stat{1, 1, 0, 0}));
    EXPECT_EQ(d.numAllocRetries + d.numOoms + d.numSyncAllStreams + d.numDeviceAlloc +
                  d.numDeviceFree,
              0);
    EXPECT_EQ(d.maxSplitSize, 64 << 20);  // a setting, not a counter
}
