#include "range_allocator.hpp"

#include <gtest/gtest.h>

using mtia::sim::RangeAllocator;

TEST(SimRangeAllocator, FirstFit) {
    RangeAllocator a(1000, 100);
    EXPECT_EQ(a.allocate(10, 1), 1000u);
    EXPECT_EQ(a.allocate(20, 1), 1010u);
    EXPECT_EQ(a.allocate(30, 1), 1030u);
    EXPECT_EQ(a.freeBytes(), 40u);
    ASSERT_TRUE(a.release(1010, 20));
    // The hole at 1010 is the first that fits, even though the tail is larger.
    EXPECT_EQ(a.allocate(5, 1), 1010u);
    EXPECT_EQ(a.allocate(15, 1), 1015u);
    // Too large for any hole before the tail: goes to the tail.
    ASSERT_TRUE(a.release(1000, 10));
    EXPECT_EQ(a.allocate(20, 1), 1060u);
}

TEST(SimRangeAllocator, CoalescesInAnyOrder) {
    RangeAllocator a(0, 64);
    uint64_t starts[8];
    for (int i = 0; i < 8; ++i) starts[i] = *a.allocate(8, 8);
    EXPECT_EQ(a.freeBytes(), 0u);
    EXPECT_EQ(a.freeRangeCount(), 0u);
    for (int i : {1, 3, 5}) ASSERT_TRUE(a.release(starts[i], 8));
    EXPECT_EQ(a.freeRangeCount(), 3u);
    ASSERT_TRUE(a.release(starts[2], 8));  // joins 1, 2 and 3
    EXPECT_EQ(a.freeRangeCount(), 2u);
    EXPECT_EQ(a.allocate(24, 1), 8u);
    ASSERT_TRUE(a.release(8, 24));
    for (int i : {7, 0, 4, 6}) ASSERT_TRUE(a.release(starts[i], 8));
    EXPECT_EQ(a.freeRangeCount(), 1u);
    EXPECT_EQ(a.freeBytes(), 64u);
    EXPECT_EQ(a.allocate(64, 64), 0u);
}

TEST(SimRangeAllocator, AlignsAbsoluteAddresses) {
    RangeAllocator a(3, 100);
    EXPECT_EQ(a.allocate(8, 16), 16u);
    // The unaligned head stays usable.
    EXPECT_EQ(a.allocate(13, 1), 3u);
    EXPECT_EQ(a.allocate(1, 32), 32u);
    EXPECT_EQ(a.allocate(8, 64), 64u);
    EXPECT_EQ(a.freeBytes(), 100u - 8 - 13 - 1 - 8);
    EXPECT_EQ(a.allocate(1, 128), std::nullopt);  // 128 lies past the end (103)
}

TEST(SimRangeAllocator, Exhaustion) {
    RangeAllocator a(0, 30);
    EXPECT_EQ(a.allocate(31, 1), std::nullopt);
    EXPECT_EQ(a.allocate(10, 1), 0u);
    EXPECT_EQ(a.allocate(10, 1), 10u);
    EXPECT_EQ(a.allocate(10, 1), 20u);
    EXPECT_EQ(a.allocate(1, 1), std::nullopt);
    ASSERT_TRUE(a.release(0, 10));
    ASSERT_TRUE(a.release(20, 10));
    // 20 bytes free, but not in one piece.
    EXPECT_EQ(a.freeBytes(), 20u);
    EXPECT_EQ(a.allocate(20, 1), std::nullopt);
}

TEST(SimRangeAllocator, RejectsBadRequests) {
    RangeAllocator a(100, 100);
    EXPECT_EQ(a.allocate(0, 1), std::nullopt);
    EXPECT_EQ(a.allocate(1, 0), std::nullopt);
    EXPECT_EQ(a.allocate(1, 3), std::nullopt);
    EXPECT_FALSE(a.release(100, 10));  // never allocated: overlaps free space
    ASSERT_EQ(a.allocate(50, 1), 100u);
    EXPECT_FALSE(a.release(100, 0));
    EXPECT_FALSE(a.release(50, 10));   // before the span
    EXPECT_FALSE(a.release(190, 20));  // past the end
    EXPECT_FALSE(a.release(140, 20));  // half free already
    ASSERT_TRUE(a.release(100, 50));
    EXPECT_FALSE(a.release(100, 50));  // double release
    EXPECT_EQ(a.freeBytes(), 100u);
}

TEST(SimRangeAllocator, NearTheTopOfTheAddressSpace) {
    const uint64_t begin = UINT64_MAX - 127;  // 2^64 - 128: a multiple of 128
    RangeAllocator a(begin, 64);
    EXPECT_EQ(a.allocate(8, uint64_t{1} << 63), std::nullopt);  // aligning would wrap around
    EXPECT_EQ(a.allocate(8, 1), begin);
    EXPECT_EQ(a.allocate(16, 16), begin + 16);
    EXPECT_EQ(a.allocate(8, 1), begin + 8);
    EXPECT_EQ(a.freeBytes(), 32u);
}
