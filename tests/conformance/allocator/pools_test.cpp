// Conformance: private memory pools (mtiaGraphPoolHandle, mtiaMemPoolBeginAllocateToPool,
// mtiaMemPoolEndAllocateToPool, mtiaMemPoolRelease): which allocations a route sends to a pool,
// that pool blocks and default blocks never serve each other, when a released pool's memory goes
// back, and mtiaEmptyCache while a stream is routed (a capture).
#include "alloc_test_util.hpp"

#include <set>

using namespace alloc_test;

namespace {

class Pools : public AllocTest {};

mtiaMemPoolId_t newPool() {
    mtiaMemPoolId_t id{};
    EXPECT_OK(mtiaGraphPoolHandle(&id));
    return id;
}

}  // namespace

TEST_F(Pools, HandlesAreFresh) {
    std::set<std::pair<uint64_t, uint64_t>> seen;
    for (int i = 0; i < 100; ++i) {
        const mtiaMemPoolId_t id = newPool();
        EXPECT_EQ(id.first, 0u);
        EXPECT_NE(id.second, 0u);
        EXPECT_TRUE(seen.insert({id.first, id.second}).second)
            << "id {0, " << id.second << "} came back";
    }
    // From several threads at once too.
    std::vector<std::pair<uint64_t, uint64_t>> ids(4 * 50);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                mtiaMemPoolId_t id{};
                EXPECT_OK(mtiaGraphPoolHandle(&id));
                ids[static_cast<size_t>(t * 50 + i)] = {id.first, id.second};
            }
        });
    for (auto& th : threads) th.join();
    for (const auto& id : ids) EXPECT_TRUE(seen.insert(id).second);
}

TEST_F(Pools, StreamRouteServesThatStreamFromAnyThread) {
    Stream s, t;
    ASSERT_OK(s.status());
    ASSERT_OK(t.status());
    // Default-pool blocks cached on both streams.
    void* d0 = mallocOn(4096, s);
    void* t0 = mallocOn(4096, t);
    ASSERT_TRUE(d0 && t0);
    freeOk(d0);
    freeOk(t0);
    const mtiaMemPoolId_t id = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, s));
    const mtiaMemoryStats s0 = memStats();
    void* p = nullptr;
    std::thread([&] { p = mallocOn(4096, s); }).join();  // another thread, the routed stream
    ASSERT_NE(p, nullptr);
    EXPECT_NE(p, d0) << "a routed allocation took a block of the default pool";
    EXPECT_EQ(memStats().num_device_alloc - s0.num_device_alloc, 1)
        << "the pool did not get a segment of its own";
    void* onT = mallocOn(4096, t);  // t is not routed
    EXPECT_EQ(onT, t0);
    freeOk(onT);
    freeOk(p);  // back into the pool's cache
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));

    // Routing ended: s allocates from the default pool again, and the pool's cached block stays
    // out.
    void* q = mallocOn(4096, s);
    EXPECT_EQ(q, d0);
    void* q2 = mallocOn(4096, s);
    EXPECT_NE(q2, p) << "a default allocation took a block of the private pool";
    freeOk(q);
    freeOk(q2);

    // Routed again (a second user of the same pool): its cached block serves.
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, s));
    const mtiaMemoryStats s1 = memStats();
    void* r = mallocOn(4096, s);
    EXPECT_EQ(r, p);
    EXPECT_EQ(memStats().num_device_alloc, s1.num_device_alloc);
    freeOk(r);
    // Any thread may end a stream route.
    mtiaError_t ended = mtiaErrorUnknown;
    std::thread([&] { ended = mtiaMemPoolEndAllocateToPool(0, id); }).join();
    EXPECT_EQ(ended, mtiaSuccess) << mtiaGetErrorName(ended);
    void* unrouted = mallocOn(4096, s);
    EXPECT_NE(unrouted, p) << "the stream was still routed after another thread ended its route";
    freeOk(unrouted);
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    EXPECT_STATUS(mtiaErrorNotFound, mtiaMemPoolRelease(0, id));
}

TEST_F(Pools, ThreadRouteRoutesTheCallingThreadOnly) {
    void* d0 = mallocOn(4096);
    ASSERT_NE(d0, nullptr);
    freeOk(d0);
    const mtiaMemPoolId_t id = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, nullptr));
    const mtiaMemoryStats s0 = memStats();
    void* mine = mallocOn(4096);
    EXPECT_NE(mine, d0);
    EXPECT_EQ(memStats().num_device_alloc - s0.num_device_alloc, 1);
    // Another thread on the same (default) stream is not routed: it gets the default pool's block.
    void* theirs = nullptr;
    mtiaError_t endElsewhere = mtiaSuccess;
    std::thread([&] {
        theirs = mallocOn(4096);
        endElsewhere = mtiaMemPoolEndAllocateToPool(0, id);  // not this thread's route
    }).join();
    EXPECT_EQ(theirs, d0);
    EXPECT_EQ(endElsewhere, mtiaErrorNotFound);
    // Other devices are not routed either.
    if (devices_ > 1) {
        DeviceScope one(1);
        const mtiaMemoryStats d1 = memStats(1);
        void* other = mallocOn(4096);
        EXPECT_NE(other, nullptr);
        EXPECT_EQ(cur(memStats(1).allocation) - cur(d1.allocation), 1);
        freeOk(other);
    }
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    void* after = mallocOn(4096);
    EXPECT_NE(after, mine) << "routing went on after the end";
    freeOk(theirs);
    freeOk(after);
    freeOk(mine);
    ASSERT_OK(mtiaMemPoolRelease(0, id));
}

TEST_F(Pools, ReleaseWithNoLiveBlockGivesSegmentsBackAtOnce) {
    const mtiaMemPoolId_t id = newPool();
    const mtiaMemoryStats s0 = memStats();
    const MemInfo m0 = memInfo();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, nullptr));
    void* a = mallocOn(4096);
    void* b = mallocOn(12 * kMiB);
    ASSERT_TRUE(a && b);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    freeOk(a);
    freeOk(b);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(14 * kMiB));
    // mtiaEmptyCache leaves a pool that still has a user alone.
    ASSERT_OK(mtiaEmptyCache());
    EXPECT_EQ(cur(memStats().reserved_bytes), cur(s1.reserved_bytes))
        << "emptyCache took a private pool's memory";
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(cur(s2.reserved_bytes), cur(s0.reserved_bytes))
        << "the released pool kept its memory";
    EXPECT_EQ(cur(s2.segment), cur(s0.segment));
    EXPECT_EQ(s2.num_device_free - s1.num_device_free, 2);
    EXPECT_EQ(memInfo().free, m0.free);
    EXPECT_STATUS(mtiaErrorNotFound, mtiaMemPoolRelease(0, id));
}

TEST_F(Pools, ReleaseWithALiveBlockGivesBackOnceItIsFreed) {
    const mtiaMemPoolId_t id = newPool();
    const mtiaMemoryStats s0 = memStats();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, nullptr));
    void* live = mallocOn(12 * kMiB);
    ASSERT_NE(live, nullptr);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(12 * kMiB));
    // The block stays valid until freed.
    writePattern(live, 64 * kKiB, 9);
    EXPECT_TRUE(hasPattern(live, 64 * kKiB, 9));
    freeOk(live);
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(cur(s2.reserved_bytes), cur(s0.reserved_bytes))
        << "the segment did not go back when freed";
    EXPECT_EQ(s2.num_device_free - s1.num_device_free, 1);
}

TEST_F(Pools, ReleaseOfAStreamPoolWaitsForItsWork) {
    // The pool's block was last used by work still queued on its stream: it goes back after that
    // work.
    Stream s;
    ASSERT_OK(s.status());
    const mtiaMemPoolId_t id = newPool();
    const mtiaMemoryStats s0 = memStats();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, s));
    float* p = static_cast<float*>(mallocOn(12 * kMiB, s));
    ASSERT_NE(p, nullptr);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    Latch latch;
    ASSERT_OK(latch.block(s));
    ASSERT_OK(launchFill(s, p, 1.0f, 1024));
    freeOk(p);
    {
        Async release([&] { EXPECT_OK(mtiaMemPoolRelease(0, id)); });
        EXPECT_TRUE(release.waitBlocked() || release.done());
        latch.open();
        ASSERT_TRUE(release.waitFor(kHang));
    }
    // Waiting or deferring are both allowed; once the work is done, the next allocator call has it
    // back.
    ASSERT_OK(mtiaStreamSynchronize(s));
    freeOk(mallocOn(4096));
    EXPECT_EQ(cur(memStats().reserved_bytes, mtiaStatLargePool),
              cur(s0.reserved_bytes, mtiaStatLargePool))
        << "the released pool's segment did not go back after its work finished";
}

TEST_F(Pools, EmptyCacheDuringAStreamRouteIsIllegal) {
    Stream s;
    ASSERT_OK(s.status());
    // Device 1 has cached memory that mtiaEmptyCache still frees.
    int64_t dev1Before = 0;
    if (devices_ > 1) {
        DeviceScope one(1);
        dev1Before = cur(memStats(1).reserved_bytes);
        freeOk(mallocOn(4096));
        EXPECT_EQ(cur(memStats(1).reserved_bytes) - dev1Before, static_cast<int64_t>(2 * kMiB));
    }
    void* cached = mallocOn(4096);
    freeOk(cached);
    const int64_t dev0Cached = cur(memStats().reserved_bytes);
    const mtiaMemPoolId_t id = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, s));
    EXPECT_FAILS(mtiaErrorIllegalState, mtiaEmptyCache(), "mtiaEmptyCache|capture");
    EXPECT_EQ(cur(memStats().reserved_bytes), dev0Cached)
        << "device 0 was emptied during its capture";
    if (devices_ > 1) {
        EXPECT_EQ(cur(memStats(1).reserved_bytes), dev1Before) << "device 1 was not emptied";
    }
    // A thread route is not a capture.
    const mtiaMemPoolId_t other = newPool();
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, other, nullptr));
    EXPECT_OK(mtiaEmptyCache());
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, other));
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    ASSERT_OK(mtiaMemPoolRelease(0, other));
    EXPECT_OK(mtiaEmptyCache());
}

TEST_F(Pools, FreeOfARecordedBlockDuringACaptureWaitsForThatStream) {
    Stream s, b;
    ASSERT_OK(s.status());
    ASSERT_OK(b.status());
    Latch latch;
    ASSERT_OK(latch.block(b));
    const mtiaMemPoolId_t id = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, s));
    void* p = mallocOn(4096, s);
    ASSERT_NE(p, nullptr);
    ASSERT_OK(mtiaRecordStream(p, b));
    freeOk(p);
    void* q = mallocOn(4096, s);
    EXPECT_NE(q, p) << "a block used on a busy stream was reused during the capture";
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(b));
    freeOk(mallocOn(4096));  // an allocation outside the capture looks at finished streams
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, s));
    void* r = mallocOn(4096, s);
    EXPECT_EQ(r, p) << "the block did not come back to its pool once the stream finished";
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    freeOk(q);
    freeOk(r);
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    ASSERT_OK(mtiaMemPoolRelease(0, id));
}

TEST_F(Pools, TwoPoolsDoNotShareBlocks) {
    const mtiaMemPoolId_t one = newPool(), two = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, one, nullptr));
    void* a = mallocOn(4096);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, one));
    freeOk(a);
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, two, nullptr));
    const mtiaMemoryStats s0 = memStats();
    void* b = mallocOn(4096);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, two));
    EXPECT_NE(b, a);
    EXPECT_EQ(memStats().num_device_alloc - s0.num_device_alloc, 1);
    freeOk(b);
    ASSERT_OK(mtiaMemPoolRelease(0, one));
    ASSERT_OK(mtiaMemPoolRelease(0, two));
}

TEST_F(Pools, Errors) {
    const mtiaMemPoolId_t id = newPool();
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemPoolBeginAllocateToPool(0, mtiaMemPoolId_t{0, 0}, nullptr),
                 "mtiaMemPoolBeginAllocateToPool|id");
    EXPECT_FAILS(mtiaErrorNotFound, mtiaMemPoolEndAllocateToPool(0, id),
                 "mtiaMemPoolEndAllocateToPool");
    EXPECT_FAILS(mtiaErrorNotFound, mtiaMemPoolRelease(0, id), "mtiaMemPoolRelease");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemPoolBeginAllocateToPool(99, id, nullptr), "dev");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemPoolBeginAllocateToPool(-1, id, nullptr), "dev");
    EXPECT_STATUS(mtiaErrorInvalidDevice, mtiaMemPoolEndAllocateToPool(99, id));
    EXPECT_STATUS(mtiaErrorInvalidDevice, mtiaMemPoolRelease(99, id));
    // A stream filter must be a live stream of that device.
    mtiaStream_t dead = nullptr;
    ASSERT_OK(mtiaStreamCreate(&dead));
    ASSERT_OK(mtiaStreamDestroy(dead));
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaMemPoolBeginAllocateToPool(0, id, dead), "filter");
    if (devices_ > 1) {
        Stream onOne(1);
        ASSERT_OK(onOne.status());
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemPoolBeginAllocateToPool(0, id, onOne),
                     "filter|device 1");
    }
    // None of the failures created the pool.
    EXPECT_STATUS(mtiaErrorNotFound, mtiaMemPoolRelease(0, id));
    // A stream routes to one pool at a time.
    Stream s;
    ASSERT_OK(s.status());
    const mtiaMemPoolId_t other = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, s));
    EXPECT_FAILS(mtiaErrorIllegalState, mtiaMemPoolBeginAllocateToPool(0, other, s), "filter");
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    EXPECT_STATUS(mtiaErrorNotFound, mtiaMemPoolEndAllocateToPool(0, id)) << "ended twice";
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    EXPECT_FAILS(mtiaErrorNotFound, mtiaMemPoolRelease(0, id), "mtiaMemPoolRelease")
        << "released twice";
    EXPECT_STATUS(mtiaErrorNotFound, mtiaMemPoolRelease(0, other));
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphPoolHandle(nullptr), "id");
}
