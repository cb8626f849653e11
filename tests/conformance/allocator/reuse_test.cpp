// Conformance: stream-ordered reuse of freed blocks (a block freed on stream A serves the next
// allocation on A at once, never one on B), mtiaRecordStream deferral (a block used on B is not
// reused until B finished the work queued before the free), and allocation on the stream's device.
// Streams are held busy by latches (host functions the test opens), never by timing.
#include "alloc_test_util.hpp"

using namespace alloc_test;

namespace {
class Reuse : public AllocTest {};
}  // namespace

TEST_F(Reuse, FreedBlockServesTheNextAllocationOnItsStreamAtOnce) {
    Stream a;
    ASSERT_OK(a.status());
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    Latch latch;
    ASSERT_OK(latch.block(a));  // a has work queued that has not run
    ASSERT_TRUE(latch.waitEntered());
    freeOk(p);
    const mtiaMemoryStats before = memStats();
    void* q = mallocOn(4096, a);
    EXPECT_EQ(q, p) << "a block freed on a stream was not reused by the next allocation on it";
    EXPECT_EQ(memStats().num_device_alloc, before.num_device_alloc);
    EXPECT_EQ(mtiaStreamQuery(a), mtiaErrorNotReady) << "the allocation waited for the stream";
    latch.open();
    freeOk(q);
}

TEST_F(Reuse, FreedBlockIsNotReusedByAnotherStream) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    freeOk(p);
    const mtiaMemoryStats before = memStats();
    void* q = mallocOn(4096, b);
    EXPECT_NE(q, p) << "a block freed on stream A served an allocation on stream B";
    EXPECT_EQ(memStats().num_device_alloc - before.num_device_alloc, 1)
        << "stream B did not get a segment of its own";
    void* r = mallocOn(4096, a);
    EXPECT_EQ(r, p);
    // Large blocks follow the same rule.
    void* la = mallocOn(6 * kMiB, a);
    freeOk(la);
    void* lb = mallocOn(6 * kMiB, b);
    EXPECT_NE(lb, la);
    void* la2 = mallocOn(6 * kMiB, a);
    EXPECT_EQ(la2, la);
    for (void* x : {q, r, lb, la2}) freeOk(x);
}

TEST_F(Reuse, RecordStreamDefersReuseUntilThatStreamFinished) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    Latch latch;
    ASSERT_OK(latch.block(b));
    ASSERT_TRUE(latch.waitEntered());
    ASSERT_OK(mtiaRecordStream(p, b));
    const mtiaMemoryStats s0 = memStats();
    freeOk(p);
    const mtiaMemoryStats s1 = memStats();
    // Freed for the caller, still active for the allocator: b may be using it.
    EXPECT_EQ(cur(s1.allocation) - cur(s0.allocation), -1);
    EXPECT_EQ(cur(s1.allocated_bytes) - cur(s0.allocated_bytes), -4096);
    EXPECT_EQ(cur(s1.active), cur(s0.active));
    EXPECT_EQ(cur(s1.active_bytes), cur(s0.active_bytes));

    void* q = mallocOn(4096, a);
    EXPECT_NE(q, p)
        << "a block was reused while a stream named with mtiaRecordStream was still busy";
    ASSERT_EQ(mtiaStreamQuery(b), mtiaErrorNotReady);
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(b));
    void* r = mallocOn(4096, a);
    EXPECT_EQ(r, p) << "the block was not reused after the recorded stream finished";
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(cur(s2.active), cur(s0.active) + 1);  // q and r live, p's old use gone
    freeOk(q);
    freeOk(r);
}

TEST_F(Reuse, RecordStreamDefersReuseWhileASleepKernelRuns) {
    // The same with a sleep_us kernel as the other stream's work. Whether the kernel still runs at
    // the allocation is checked after it, so a slow machine cannot make the test pass or fail
    // wrongly.
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    bool checked = false;
    for (uint64_t us = 200000; us <= 3200000 && !checked; us *= 2) {
        void* p = mallocOn(8192, a);
        ASSERT_NE(p, nullptr);
        ASSERT_OK(launchSleep(b, us));
        ASSERT_OK(mtiaRecordStream(p, b));
        freeOk(p);
        void* q = mallocOn(8192, a);
        if (mtiaStreamQuery(b) == mtiaErrorNotReady) {
            EXPECT_NE(q, p) << "a block was reused while the recorded stream's sleep_us kernel ran";
            checked = true;
        }
        ASSERT_OK(mtiaStreamSynchronize(b));
        void* r = mallocOn(8192, a);
        EXPECT_TRUE(r == p || q == p)
            << "the block was not reused after the recorded stream finished";
        freeOk(q);
        freeOk(r);
    }
    EXPECT_TRUE(checked) << "the sleep kernel always finished before the allocation returned";
}

TEST_F(Reuse, RecordStreamOnTheAllocatingStreamChangesNothing) {
    Stream a;
    ASSERT_OK(a.status());
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    Latch latch;
    ASSERT_OK(latch.block(a));
    ASSERT_OK(mtiaRecordStream(p, a));
    ASSERT_OK(mtiaRecordStream(p, a));
    freeOk(p);
    void* q = mallocOn(4096, a);
    EXPECT_EQ(q, p);
    latch.open();
    freeOk(q);
}

TEST_F(Reuse, EveryRecordedStreamMustFinish) {
    Stream a, b, c;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    ASSERT_OK(c.status());
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    Latch lb, lc;
    ASSERT_OK(lb.block(b));
    ASSERT_OK(lc.block(c));
    ASSERT_OK(mtiaRecordStream(p, b));
    ASSERT_OK(mtiaRecordStream(p, c));
    ASSERT_OK(mtiaRecordStream(p, b));  // twice: one use
    freeOk(p);
    lb.open();
    ASSERT_OK(mtiaStreamSynchronize(b));
    void* q = mallocOn(4096, a);
    EXPECT_NE(q, p) << "reused while the second recorded stream was still busy";
    lc.open();
    ASSERT_OK(mtiaStreamSynchronize(c));
    void* r = mallocOn(4096, a);
    EXPECT_EQ(r, p);
    freeOk(q);
    freeOk(r);
}

TEST_F(Reuse, WorkQueuedOnTheRecordedStreamAfterTheFreeDoesNotDelayReuse) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    ASSERT_OK(mtiaRecordStream(p, b));
    freeOk(p);  // b has nothing queued before the free
    Latch later;
    ASSERT_OK(later.block(b));
    ASSERT_TRUE(later.waitEntered());
    void* q = mallocOn(4096, a);
    EXPECT_EQ(q, p) << "reuse waited for work queued on the recorded stream after the free";
    later.open();
    freeOk(q);
}

TEST_F(Reuse, FreeFromAnotherThreadIsOrderedOnTheAllocatingStream) {
    Stream a;
    ASSERT_OK(a.status());
    void* p = mallocOn(64 * kKiB, a);
    ASSERT_NE(p, nullptr);
    std::thread([p] { freeOk(p); }).join();
    void* q = mallocOn(64 * kKiB, a);
    EXPECT_EQ(q, p);
    freeOk(q);
}

TEST_F(Reuse, EmptyCacheWaitsForPendingFreesThenGivesTheirMemoryBack) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    const mtiaMemoryStats s0 = memStats();
    void* p = mallocOn(12 * kMiB, a);
    ASSERT_NE(p, nullptr);
    Latch latch;
    ASSERT_OK(latch.block(b));
    ASSERT_OK(mtiaRecordStream(p, b));
    freeOk(p);
    {
        Async empty([] { EXPECT_OK(mtiaEmptyCache()); });
        EXPECT_TRUE(empty.waitBlocked())
            << "mtiaEmptyCache returned while a pending free's stream was busy";
        latch.open();
        EXPECT_TRUE(empty.waitFor(kHang));
    }
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.reserved_bytes), cur(s0.reserved_bytes));
    EXPECT_EQ(cur(s1.active), cur(s0.active));
    EXPECT_EQ(cur(s1.active_bytes), cur(s0.active_bytes));
    EXPECT_GE(s1.num_sync_all_streams - s0.num_sync_all_streams, 1);
}

TEST_F(Reuse, RecordedStreamMayBeDestroyedBeforeItsWorkIsDone) {
    Stream a;
    ASSERT_OK(a.status());
    mtiaStream_t b = nullptr;
    ASSERT_OK(mtiaStreamCreate(&b));
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    Latch latch;
    ASSERT_OK(latch.block(b));
    ASSERT_OK(mtiaRecordStream(p, b));
    ASSERT_OK(mtiaStreamDestroy(b));  // its queued work still runs
    freeOk(p);
    void* q = mallocOn(4096, a);
    EXPECT_NE(q, p) << "reused while the destroyed stream's queued work had not run";
    latch.open();
    ASSERT_OK(mtiaEmptyCache());  // waits for that work
    void* r = mallocOn(4096, a);
    freeOk(q);
    freeOk(r);
    EXPECT_EQ(cur(memStats().active), 0);
}

TEST_F(Reuse, RecordStreamOfAnotherDevice) {
    if (devices_ < 2) GTEST_SKIP() << "needs two devices";
    Stream a;
    Stream other(1);
    ASSERT_OK(a.status());
    ASSERT_OK(other.status());
    void* p = mallocOn(4096, a);
    ASSERT_NE(p, nullptr);
    Latch latch;
    ASSERT_OK(latch.block(other));
    ASSERT_OK(mtiaRecordStream(p, other));
    freeOk(p);
    void* q = mallocOn(4096, a);
    EXPECT_NE(q, p) << "reused while a stream of device 1 named with mtiaRecordStream was busy";
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(other));
    void* r = mallocOn(4096, a);
    EXPECT_EQ(r, p);
    freeOk(q);
    freeOk(r);
}

TEST_F(Reuse, MallocAsyncAllocatesOnTheStreamsDevice) {
    if (devices_ < 2) GTEST_SKIP() << "needs two devices";
    Stream s1(1);
    ASSERT_OK(s1.status());
    ASSERT_OK(mtiaSetDevice(0));
    const mtiaMemoryStats d0 = memStats(0), d1 = memStats(1);
    void* p = nullptr;
    ASSERT_OK(mtiaMallocAsync(&p, 4096, s1));
    mtiaPointerAttributes attr = MTIA_POINTER_ATTRIBUTES_INIT;
    ASSERT_OK(mtiaPointerGetAttributes(&attr, p));
    EXPECT_EQ(attr.type, mtiaMemoryTypeDevice);
    EXPECT_EQ(attr.device, 1);
    EXPECT_EQ(attr.base, p);
    EXPECT_EQ(attr.size, 4096u);
    EXPECT_EQ(cur(memStats(1).allocation) - cur(d1.allocation), 1);
    EXPECT_EQ(cur(memStats(0).allocation), cur(d0.allocation));
    int current = -1;
    ASSERT_OK(mtiaGetDevice(&current));
    EXPECT_EQ(current, 0) << "mtiaMallocAsync changed the current device";
    // The block is device 1's: usable by a kernel there, freed back into device 1's cache.
    ASSERT_OK(launchFill(s1, static_cast<float*>(p), 2.5f, 1024));
    ASSERT_OK(mtiaStreamSynchronize(s1));
    float back[4] = {};
    ASSERT_OK(mtiaMemcpy(back, p, sizeof back, mtiaMemcpyDeviceToHost));
    EXPECT_EQ(back[3], 2.5f);
    freeOk(p);
    EXPECT_EQ(cur(memStats(1).allocation), cur(d1.allocation));
    void* q = nullptr;
    ASSERT_OK(mtiaMallocAsync(&q, 4096, s1));
    EXPECT_EQ(q, p);
    freeOk(q);
}
