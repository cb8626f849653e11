// Conformance: how the caching allocator sizes requests, seen through the statistics (the size
// policy's own unit tests are in tests/unit/allocator/size_policy_test.cpp): 512-byte rounding in
// allocated_bytes, the small pool up to 1 MiB and the large one above, 2 MiB segments for small
// requests, 20 MiB for 1-10 MiB requests, the request rounded up to 2 MiB from 10 MiB on; and
// blocks carved from one segment that merge back when freed.
#include "alloc_test_util.hpp"

using namespace alloc_test;

namespace {

class Sizes : public AllocTest {};
class SplitMerge : public AllocTest {};

struct Rounding {
    size_t request;
    size_t block;
    int pool;
};

}  // namespace

TEST_F(Sizes, AllocatedBytesAreRoundedAndCountedInTheirPool) {
    const Rounding cases[] = {
        {1, 512, mtiaStatSmallPool},
        {511, 512, mtiaStatSmallPool},
        {512, 512, mtiaStatSmallPool},
        {513, 1024, mtiaStatSmallPool},
        {1000, 1024, mtiaStatSmallPool},
        {4096, 4096, mtiaStatSmallPool},
        {4097, 4608, mtiaStatSmallPool},
        {kMiB - 1, kMiB, mtiaStatSmallPool},
        {kMiB, kMiB, mtiaStatSmallPool},  // 1 MiB is still small
        {kMiB + 1, kMiB + 512, mtiaStatLargePool},
        {3 * kMiB + 100, 3 * kMiB + 512, mtiaStatLargePool},
    };
    for (const Rounding& c : cases) {
        SCOPED_TRACE("request " + std::to_string(c.request));
        const mtiaMemoryStats before = memStats();
        void* p = mallocOn(c.request);
        ASSERT_NE(p, nullptr);
        const mtiaMemoryStats after = memStats();
        const int other = c.pool == mtiaStatSmallPool ? mtiaStatLargePool : mtiaStatSmallPool;
        EXPECT_EQ(cur(after.allocated_bytes) - cur(before.allocated_bytes),
                  static_cast<int64_t>(c.block));
        EXPECT_EQ(cur(after.allocated_bytes, c.pool) - cur(before.allocated_bytes, c.pool),
                  static_cast<int64_t>(c.block));
        EXPECT_EQ(cur(after.allocated_bytes, other), cur(before.allocated_bytes, other));
        EXPECT_EQ(cur(after.requested_bytes, c.pool) - cur(before.requested_bytes, c.pool),
                  static_cast<int64_t>(c.request));
        EXPECT_EQ(cur(after.allocation, c.pool) - cur(before.allocation, c.pool), 1);
        EXPECT_EQ(cur(after.active_bytes, c.pool) - cur(before.active_bytes, c.pool),
                  static_cast<int64_t>(c.block));
        freeOk(p);
        const mtiaMemoryStats freed = memStats();
        EXPECT_EQ(cur(freed.allocated_bytes), cur(before.allocated_bytes));
        EXPECT_EQ(cur(freed.requested_bytes), cur(before.requested_bytes));
        EXPECT_EQ(cur(freed.allocation), cur(before.allocation));
    }
}

TEST_F(Sizes, SizeZeroGivesNullAndCountsNothing) {
    const mtiaMemoryStats before = memStats();
    void* p = reinterpret_cast<void*>(0x1);
    ASSERT_OK(mtiaMalloc(&p, 0));
    EXPECT_EQ(p, nullptr);
    p = reinterpret_cast<void*>(0x1);
    ASSERT_OK(mtiaMallocAsync(&p, 0, nullptr));
    EXPECT_EQ(p, nullptr);
    const mtiaMemoryStats after = memStats();
    EXPECT_EQ(after.allocation[mtiaStatAll].allocated, before.allocation[mtiaStatAll].allocated);
    EXPECT_EQ(after.num_device_alloc, before.num_device_alloc);
}

namespace {
struct SegmentCase {
    size_t request;
    size_t segment;
    int pool;
};
}  // namespace

TEST_F(Sizes, SegmentSizesFollowTheRequest) {
    const SegmentCase cases[] = {
        {1, 2 * kMiB, mtiaStatSmallPool},
        {kMiB, 2 * kMiB, mtiaStatSmallPool},
        {kMiB + 1, 20 * kMiB, mtiaStatLargePool},
        {5 * kMiB, 20 * kMiB, mtiaStatLargePool},
        {10 * kMiB - 512, 20 * kMiB,
         mtiaStatLargePool},                            // below 10 MiB once rounded: shares 20 MiB
        {10 * kMiB - 1, 10 * kMiB, mtiaStatLargePool},  // rounds to 10 MiB: a segment of its own
        {10 * kMiB, 10 * kMiB, mtiaStatLargePool},
        {10 * kMiB + 1, 12 * kMiB, mtiaStatLargePool},  // rounded up to 2 MiB
        {21 * kMiB, 22 * kMiB, mtiaStatLargePool},
        {22 * kMiB, 22 * kMiB, mtiaStatLargePool},
        {100 * kMiB + 4096, 102 * kMiB, mtiaStatLargePool},
    };
    for (const SegmentCase& c : cases) {
        SCOPED_TRACE("request " + std::to_string(c.request));
        ASSERT_OK(mtiaEmptyCache());
        const mtiaMemoryStats before = memStats();
        const MemInfo infoBefore = memInfo();
        void* p = mallocOn(c.request);
        ASSERT_NE(p, nullptr);
        const mtiaMemoryStats after = memStats();
        const MemInfo infoAfter = memInfo();
        EXPECT_EQ(cur(after.reserved_bytes) - cur(before.reserved_bytes),
                  static_cast<int64_t>(c.segment));
        EXPECT_EQ(cur(after.reserved_bytes, c.pool) - cur(before.reserved_bytes, c.pool),
                  static_cast<int64_t>(c.segment));
        EXPECT_EQ(cur(after.segment, c.pool) - cur(before.segment, c.pool), 1);
        EXPECT_EQ(cur(after.segment) - cur(before.segment), 1);
        EXPECT_EQ(after.num_device_alloc - before.num_device_alloc, 1);
        EXPECT_EQ(infoBefore.free - infoAfter.free, c.segment)
            << "mtiaMemGetInfo disagrees with reserved_bytes";
        freeOk(p);
        // Freed blocks stay cached: the segment is still reserved until the cache is emptied.
        EXPECT_EQ(cur(memStats().reserved_bytes), cur(after.reserved_bytes));
        ASSERT_OK(mtiaEmptyCache());
        const mtiaMemoryStats emptied = memStats();
        EXPECT_EQ(cur(emptied.reserved_bytes), cur(before.reserved_bytes));
        EXPECT_EQ(emptied.num_device_free - after.num_device_free, 1);
        EXPECT_EQ(memInfo().free, infoBefore.free);
    }
}

TEST_F(Sizes, RequestsOfOneSizeClassShareASegment) {
    const mtiaMemoryStats before = memStats();
    void* small[8];
    for (void*& p : small) ASSERT_NE(p = mallocOn(100 * kKiB), nullptr);
    void* large[3];
    for (void*& p : large)
        ASSERT_NE(p = mallocOn(6 * kMiB), nullptr);  // 18 MiB of one 20 MiB segment
    const mtiaMemoryStats after = memStats();
    EXPECT_EQ(cur(after.segment, mtiaStatSmallPool) - cur(before.segment, mtiaStatSmallPool), 1);
    EXPECT_EQ(cur(after.segment, mtiaStatLargePool) - cur(before.segment, mtiaStatLargePool), 1);
    EXPECT_EQ(cur(after.reserved_bytes) - cur(before.reserved_bytes),
              static_cast<int64_t>(22 * kMiB));
    EXPECT_EQ(after.num_device_alloc - before.num_device_alloc, 2);
    for (void* p : small) freeOk(p);
    for (void* p : large) freeOk(p);
}

TEST_F(Sizes, LargeBlockWithLittleLeftIsNotSplit) {
    // 19 MiB + 512 takes a 20 MiB segment of its own; what is left (1 MiB - 512) is not worth a
    // block.
    const mtiaMemoryStats before = memStats();
    void* p = mallocOn(19 * kMiB + 512);
    ASSERT_NE(p, nullptr);
    const mtiaMemoryStats after = memStats();
    EXPECT_EQ(cur(after.reserved_bytes) - cur(before.reserved_bytes),
              static_cast<int64_t>(20 * kMiB));
    EXPECT_EQ(cur(after.allocated_bytes) - cur(before.allocated_bytes),
              static_cast<int64_t>(20 * kMiB));
    EXPECT_EQ(cur(after.requested_bytes) - cur(before.requested_bytes),
              static_cast<int64_t>(19 * kMiB + 512));
    EXPECT_EQ(cur(after.inactive_split) - cur(before.inactive_split), 0);
    freeOk(p);

    // 18 MiB + 512 leaves 2 MiB - 512: split off as a free block of the segment.
    ASSERT_OK(mtiaEmptyCache());
    const mtiaMemoryStats before2 = memStats();
    void* q = mallocOn(18 * kMiB + 512);
    ASSERT_NE(q, nullptr);
    const mtiaMemoryStats after2 = memStats();
    EXPECT_EQ(cur(after2.reserved_bytes) - cur(before2.reserved_bytes),
              static_cast<int64_t>(20 * kMiB));
    EXPECT_EQ(cur(after2.allocated_bytes) - cur(before2.allocated_bytes),
              static_cast<int64_t>(18 * kMiB + 512));
    EXPECT_EQ(cur(after2.inactive_split, mtiaStatLargePool) -
                  cur(before2.inactive_split, mtiaStatLargePool),
              1);
    EXPECT_EQ(cur(after2.inactive_split_bytes, mtiaStatLargePool) -
                  cur(before2.inactive_split_bytes, mtiaStatLargePool),
              static_cast<int64_t>(2 * kMiB - 512));
    freeOk(q);
}

TEST_F(SplitMerge, SmallBlocksAreCarvedFromOneSegmentAndMergeBack) {
    const mtiaMemoryStats s0 = memStats();
    char* a = static_cast<char*>(mallocOn(4096));
    char* b = static_cast<char*>(mallocOn(4096));
    char* c = static_cast<char*>(mallocOn(4096));
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(b, a + 4096) << "the second block is not carved right after the first";
    EXPECT_EQ(c, b + 4096);
    const mtiaMemoryStats s1 = memStats();
    const auto view = mtiaStatSmallPool;
    EXPECT_EQ(cur(s1.segment, view) - cur(s0.segment, view), 1);
    EXPECT_EQ(cur(s1.reserved_bytes, view) - cur(s0.reserved_bytes, view),
              static_cast<int64_t>(2 * kMiB));
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 1);
    // The rest of the segment is one free block inside a split segment.
    EXPECT_EQ(cur(s1.inactive_split, view) - cur(s0.inactive_split, view), 1);
    EXPECT_EQ(cur(s1.inactive_split_bytes, view) - cur(s0.inactive_split_bytes, view),
              static_cast<int64_t>(2 * kMiB - 3 * 4096));

    freeOk(b);  // a hole between two live blocks
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(cur(s2.inactive_split, view) - cur(s0.inactive_split, view), 2);
    EXPECT_EQ(cur(s2.inactive_split_bytes, view) - cur(s0.inactive_split_bytes, view),
              static_cast<int64_t>(2 * kMiB - 2 * 4096));
    EXPECT_EQ(cur(s2.active, view) - cur(s0.active, view), 2);

    freeOk(a);  // merges with b's hole
    const mtiaMemoryStats s3 = memStats();
    EXPECT_EQ(cur(s3.inactive_split, view) - cur(s0.inactive_split, view), 2);
    EXPECT_EQ(cur(s3.inactive_split_bytes, view) - cur(s0.inactive_split_bytes, view),
              static_cast<int64_t>(2 * kMiB - 4096));

    freeOk(c);  // everything merges into the whole segment again
    const mtiaMemoryStats s4 = memStats();
    EXPECT_EQ(cur(s4.inactive_split, view), cur(s0.inactive_split, view));
    EXPECT_EQ(cur(s4.inactive_split_bytes, view), cur(s0.inactive_split_bytes, view));
    EXPECT_EQ(cur(s4.reserved_bytes), cur(s1.reserved_bytes))
        << "freeing gave memory back without emptyCache";
    EXPECT_EQ(cur(s4.segment), cur(s1.segment));
    EXPECT_EQ(s4.num_device_free, s1.num_device_free);

    // The merged segment serves the largest small request from its start.
    void* whole = mallocOn(kMiB);
    EXPECT_EQ(whole, a);
    EXPECT_EQ(memStats().num_device_alloc, s4.num_device_alloc);
    freeOk(whole);
}

// PyTorch counts a split or merge by its net change: the accumulated totals of inactive_split and
// inactive_split_bytes grow by the net of each step (a cached block shrinking by a request adds its
// size to freed, not its old size to freed and its new size to allocated).
TEST_F(SplitMerge, InactiveSplitTotalsGrowByTheNetOfEachStep) {
    const auto view = mtiaStatSmallPool;
    struct Totals {
        int64_t blocksIn, blocksOut, bytesIn, bytesOut;
    };
    const mtiaMemoryStats s0 = memStats();
    auto since = [&](const mtiaMemoryStats& s) {
        return Totals{s.inactive_split[view].allocated - s0.inactive_split[view].allocated,
                      s.inactive_split[view].freed - s0.inactive_split[view].freed,
                      s.inactive_split_bytes[view].allocated -
                          s0.inactive_split_bytes[view].allocated,
                      s.inactive_split_bytes[view].freed - s0.inactive_split_bytes[view].freed};
    };
    const auto k4 = static_cast<int64_t>(4096);
    const auto seg = static_cast<int64_t>(2 * kMiB);
    void* a = mallocOn(4096);  // a new segment: its rest becomes an inactive split block
    void* b = mallocOn(4096);  // the rest shrinks by 4 KiB
    void* c = mallocOn(4096);
    ASSERT_TRUE(a && b && c);
    Totals t = since(memStats());
    EXPECT_EQ(t.blocksIn, 1);
    EXPECT_EQ(t.blocksOut, 0);
    EXPECT_EQ(t.bytesIn, seg - k4);
    EXPECT_EQ(t.bytesOut, 2 * k4);
    freeOk(b);  // a hole: one more inactive split block
    freeOk(a);  // merges with the hole: net +4 KiB, no block count change
    t = since(memStats());
    EXPECT_EQ(t.blocksIn, 2);
    EXPECT_EQ(t.blocksOut, 0);
    EXPECT_EQ(t.bytesIn, seg + k4);
    EXPECT_EQ(t.bytesOut, 2 * k4);
    freeOk(c);  // both neighbours merge into the whole segment: two blocks and their bytes leave
    t = since(memStats());
    EXPECT_EQ(t.blocksIn, 2);
    EXPECT_EQ(t.blocksOut, 2);
    EXPECT_EQ(t.bytesIn, seg + k4);
    EXPECT_EQ(t.bytesOut, seg + k4);
}

TEST_F(SplitMerge, LargeBlocksMergeAndServeALargerRequest) {
    const mtiaMemoryStats s0 = memStats();
    char* a = static_cast<char*>(mallocOn(5 * kMiB));
    char* b = static_cast<char*>(mallocOn(5 * kMiB));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(b, a + 5 * kMiB);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 1);
    EXPECT_EQ(cur(s1.inactive_split, mtiaStatLargePool) - cur(s0.inactive_split, mtiaStatLargePool),
              1);
    freeOk(a);
    freeOk(b);
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(cur(s2.inactive_split, mtiaStatLargePool), cur(s0.inactive_split, mtiaStatLargePool));
    // 18 MiB fits only in the merged 20 MiB block.
    void* c = mallocOn(18 * kMiB);
    EXPECT_EQ(c, a);
    const mtiaMemoryStats s3 = memStats();
    EXPECT_EQ(s3.num_device_alloc, s2.num_device_alloc);
    EXPECT_EQ(cur(s3.reserved_bytes), cur(s1.reserved_bytes));
    EXPECT_EQ(cur(s3.allocated_bytes) - cur(s0.allocated_bytes), static_cast<int64_t>(18 * kMiB));
    freeOk(c);
}

TEST_F(SplitMerge, EmptyCacheKeepsSegmentsWithLiveBlocks) {
    const mtiaMemoryStats s0 = memStats();
    void* live = mallocOn(4096);
    void* gone = mallocOn(4096);
    void* bigGone = mallocOn(12 * kMiB);
    ASSERT_TRUE(live && gone && bigGone);
    freeOk(gone);
    freeOk(bigGone);
    ASSERT_OK(mtiaEmptyCache());
    const mtiaMemoryStats s1 = memStats();
    // The 12 MiB segment went back; the small one holds a live block and stays, with its free rest
    // counted as inactive split memory.
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(2 * kMiB));
    EXPECT_EQ(cur(s1.segment) - cur(s0.segment), 1);
    EXPECT_EQ(cur(s1.inactive_split_bytes, mtiaStatSmallPool) -
                  cur(s0.inactive_split_bytes, mtiaStatSmallPool),
              static_cast<int64_t>(2 * kMiB - 4096));
    freeOk(live);
    ASSERT_OK(mtiaEmptyCache());
    EXPECT_EQ(cur(memStats().reserved_bytes), cur(s0.reserved_bytes));
}
