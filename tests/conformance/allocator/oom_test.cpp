// Conformance: the out-of-memory ladder step by step on a small device (MTIA_SIM_MEMORY=64MiB) and
// with injected driver failures (MTIA_SIM_FAULTS), the out-of-memory message, free-memory callbacks
// and out-of-memory observers.
//   Oom.*        64 MiB device (ctest alloc_oom)
//   OomFaults.*  MTIA_SIM_FAULTS=alloc=2,alloc=4,alloc=5 (ctest alloc_oom_faults)
// The ladder: cached blocks, free-memory callbacks (search again when one freed something), garbage
// collection, a device allocation, cached oversize blocks back (config_test.cpp, MaxSplit), then
// the release-everything retry (num_alloc_retries): wait for pending cross-stream frees, search the
// cache again (PyTorch issue #189504), free every cached segment, allocate again; then the
// observers and mtiaErrorMemoryAllocation.
#include "alloc_test_util.hpp"

using namespace alloc_test;

namespace {

// Hooks stay attached for the life of the process: they act only while a test arms them.
struct Hooks {
    std::mutex mu;
    int sequence = 0;
    // free-memory callback
    enum class Callback { Off, FreeNothing, FreeWorkspace } callback = Callback::Off;
    void* workspace = nullptr;
    int callbackCalls = 0, callbackAt = 0, callbackDev = -1;
    size_t callbackRequested = 0;
    int64_t deviceAllocsSeenByCallback = -1;
    // out-of-memory observer
    bool observing = false;
    bool reenter = false;  // the observer allocates, frees and reads stats itself
    int observerCalls = 0, observerAt = 0, observerDev = -1;
    size_t observedRequested = 0, observedTotal = 0, observedFree = 0;
    mtiaError_t reentrantMalloc = mtiaErrorUnknown, reentrantFree = mtiaErrorUnknown,
                reentrantStats = mtiaErrorUnknown, otherThreadStats = mtiaErrorUnknown;
};
Hooks& hooks() {
    static Hooks h;
    return h;
}

int freeMemoryCallback(int dev, size_t requested, void*) {
    Hooks& h = hooks();
    std::unique_lock lock(h.mu);
    if (h.callback == Hooks::Callback::Off) return 0;
    ++h.callbackCalls;
    h.callbackAt = ++h.sequence;
    h.callbackDev = dev;
    h.callbackRequested = requested;
    lock.unlock();
    mtiaMemoryStats s = MTIA_MEMORY_STATS_INIT;
    const bool statsOk =
        mtiaMemoryGetStats(dev, &s) == mtiaSuccess;  // no allocator lock may be held here
    lock.lock();
    h.deviceAllocsSeenByCallback = statsOk ? s.num_device_alloc : -1;
    if (h.callback != Hooks::Callback::FreeWorkspace || h.workspace == nullptr) return 0;
    void* w = h.workspace;
    h.workspace = nullptr;
    lock.unlock();
    return mtiaFree(w) == mtiaSuccess ? 1 : 0;
}

void oomObserver(int dev, size_t requested, size_t total, size_t free, void*) {
    Hooks& h = hooks();
    std::unique_lock lock(h.mu);
    if (!h.observing) return;
    ++h.observerCalls;
    h.observerAt = ++h.sequence;
    h.observerDev = dev;
    h.observedRequested = requested;
    h.observedTotal = total;
    h.observedFree = free;
    if (!h.reenter) return;
    h.reenter = false;  // once: an allocation failing in here must not recurse forever
    lock.unlock();
    void* p = nullptr;
    const mtiaError_t m = mtiaMalloc(&p, 4096);
    const mtiaError_t f = mtiaFree(p);
    mtiaMemoryStats s = MTIA_MEMORY_STATS_INIT;
    const mtiaError_t st = mtiaMemoryGetStats(dev, &s);
    mtiaError_t other = mtiaErrorUnknown;
    std::thread([&] {
        mtiaMemoryStats t = MTIA_MEMORY_STATS_INIT;
        other = mtiaMemoryGetStats(dev, &t);
    }).join();
    lock.lock();
    h.reentrantMalloc = m;
    h.reentrantFree = f;
    h.reentrantStats = st;
    h.otherThreadStats = other;
}

class OomTest : public AllocTest {
protected:
    void SetUp() override {
        AllocTest::SetUp();
        static const bool attached =
            mtiaAttachFreeMemoryCallback(freeMemoryCallback, nullptr) == mtiaSuccess &&
            mtiaAttachOutOfMemoryObserver(oomObserver, nullptr) == mtiaSuccess;
        ASSERT_TRUE(attached);
        Hooks& h = hooks();
        std::lock_guard lock(h.mu);
        h.callback = Hooks::Callback::Off;
        h.workspace = nullptr;
        h.callbackCalls = h.observerCalls = 0;
        h.callbackAt = h.observerAt = 0;
        h.deviceAllocsSeenByCallback = -1;
        h.observing = h.reenter = false;
    }
    void TearDown() override {
        Hooks& h = hooks();
        {
            std::lock_guard lock(h.mu);
            h.callback = Hooks::Callback::Off;
            h.observing = false;
        }
        AllocTest::TearDown();
    }
};

class Oom : public OomTest {
protected:
    void SetUp() override {
        OomTest::SetUp();
        if (memInfo().total != 64 * kMiB)
            GTEST_SKIP() << "runs with MTIA_SIM_MEMORY=64MiB (ctest alloc_oom)";
    }
};

class OomFaults : public OomTest {};

}  // namespace

TEST_F(Oom, MessageForARequestLargerThanTheDevice) {
    {
        std::lock_guard lock(hooks().mu);
        hooks().observing = true;
        hooks().callback = Hooks::Callback::FreeNothing;
    }
    const mtiaMemoryStats s0 = memStats();
    void* p = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, 100 * kMiB + 1),
                 "mtiaMalloc|out of memory on device 0|tried to allocate 100.00 MiB|104857601 "
                 "bytes|104858112 once "
                 "rounded|64.00 MiB in total|of which 64.00 MiB is free|0 B allocated|0 B reserved "
                 "but unallocated|"
                 "largest free block 0 B|0 B of its memory is held in private pools|larger than "
                 "the device's memory");
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_ooms - s0.num_ooms, 1);
    EXPECT_EQ(s1.num_device_alloc, s0.num_device_alloc);
    Hooks& h = hooks();
    std::lock_guard lock(h.mu);
    EXPECT_EQ(h.observerCalls, 1);
    EXPECT_EQ(h.observerDev, 0);
    EXPECT_EQ(h.observedRequested, 100 * kMiB + 512) << "the observer gets the rounded request";
    EXPECT_EQ(h.observedTotal, 64 * kMiB);
    EXPECT_EQ(h.observedFree, 64 * kMiB);
    EXPECT_EQ(h.callbackCalls, 1);
    EXPECT_EQ(h.callbackRequested, 100 * kMiB + 512);
    EXPECT_LT(h.callbackAt, h.observerAt) << "the free-memory callbacks run before giving up";
}

TEST_F(Oom, MessageTellsFragmentationFromExhaustion) {
    // One 20 MiB segment with four 5 MiB blocks, two of them freed (holes that cannot merge), and
    // the rest of the device taken: 10 MiB reserved but unallocated, the largest free block 5 MiB.
    void* a = mallocOn(5 * kMiB);
    void* b = mallocOn(5 * kMiB);
    void* c = mallocOn(5 * kMiB);
    void* d = mallocOn(5 * kMiB);
    void* f = mallocOn(44 * kMiB);
    ASSERT_TRUE(a && b && c && d && f);
    freeOk(a);
    freeOk(c);
    ASSERT_EQ(memInfo().free, 0u);
    void* p = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, 8 * kMiB),
                 "tried to allocate 8.00 MiB|of which 0 B is free|54.00 MiB allocated|10.00 MiB "
                 "reserved but "
                 "unallocated|largest free block 5.00 MiB|Fragmentation|expandable_segments:True");
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, 12 * kMiB),
                 "tried to allocate 12.00 MiB|10.00 MiB reserved but unallocated|exhausted");
    const std::string last = mtiaGetLastErrorMessage();
    EXPECT_EQ(last.find("Fragmentation"), std::string::npos) << last;
    // The holes still serve what fits.
    void* e = mallocOn(5 * kMiB);
    EXPECT_TRUE(e == a || e == c);
    for (void* x : {b, d, e, f}) freeOk(x);
}

TEST_F(Oom, MessageCountsPrivatePools) {
    mtiaMemPoolId_t id{};
    ASSERT_OK(mtiaGraphPoolHandle(&id));
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, nullptr));
    void* pooled = mallocOn(12 * kMiB);
    ASSERT_NE(pooled, nullptr);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    void* p = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, 60 * kMiB),
                 "12.00 MiB of its memory is held in private pools");
    freeOk(pooled);
    ASSERT_OK(mtiaMemPoolRelease(0, id));
}

TEST_F(Oom, ObserversRunWithNoLockHeld) {
    {
        std::lock_guard lock(hooks().mu);
        hooks().observing = true;
        hooks().reenter = true;
    }
    const size_t freeBefore = memInfo().free;
    mtiaError_t st = mtiaErrorUnknown;
    {
        Async call([&] {
            void* p = nullptr;
            st = mtiaMalloc(&p, 100 * kMiB);
        });
        ASSERT_TRUE(call.waitFor(kHang)) << "an observer that allocates deadlocked";
    }
    EXPECT_EQ(st, mtiaErrorMemoryAllocation);
    Hooks& h = hooks();
    std::lock_guard lock(h.mu);
    EXPECT_EQ(h.observerCalls, 1);
    EXPECT_EQ(h.observerDev, 0);
    EXPECT_EQ(h.observedRequested, 100 * kMiB);
    EXPECT_EQ(h.observedTotal, 64 * kMiB);
    EXPECT_EQ(h.observedFree, freeBefore);
    EXPECT_EQ(h.reentrantMalloc, mtiaSuccess);
    EXPECT_EQ(h.reentrantFree, mtiaSuccess);
    EXPECT_EQ(h.reentrantStats, mtiaSuccess);
    EXPECT_EQ(h.otherThreadStats, mtiaSuccess)
        << "another thread could not read the stats during the observer";
}

TEST_F(Oom, SuccessfulFreeMemoryCallbackAvoidsADeviceAllocation) {
    // A library's 12 MiB workspace fills a segment of its own; the callback frees it on request.
    void* workspace = mallocOn(12 * kMiB);
    ASSERT_NE(workspace, nullptr);
    {
        std::lock_guard lock(hooks().mu);
        hooks().callback = Hooks::Callback::FreeWorkspace;
        hooks().workspace = workspace;
    }
    const mtiaMemoryStats s0 = memStats();
    void* p = mallocOn(12 * kMiB);
    EXPECT_EQ(p, workspace) << "the block the callback freed was not found again";
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_device_alloc, s0.num_device_alloc);
    EXPECT_EQ(s1.num_alloc_retries, s0.num_alloc_retries);
    {
        Hooks& h = hooks();
        std::lock_guard lock(h.mu);
        EXPECT_EQ(h.callbackCalls, 1);
        EXPECT_EQ(h.callbackDev, 0);
        EXPECT_EQ(h.callbackRequested, 12 * kMiB);
        EXPECT_EQ(h.deviceAllocsSeenByCallback, s0.num_device_alloc)
            << "the callback ran after a device allocation";
    }
    // A cached block that fits is served without asking the callbacks.
    freeOk(p);
    void* q = mallocOn(12 * kMiB);
    EXPECT_EQ(q, workspace);
    {
        std::lock_guard lock(hooks().mu);
        EXPECT_EQ(hooks().callbackCalls, 1);
    }
    freeOk(q);
}

TEST_F(Oom, CallbackThatFreesNothingLeadsToADeviceAllocation) {
    {
        std::lock_guard lock(hooks().mu);
        hooks().callback = Hooks::Callback::FreeNothing;
    }
    const mtiaMemoryStats s0 = memStats();
    void* p = mallocOn(12 * kMiB);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(memStats().num_device_alloc - s0.num_device_alloc, 1);
    {
        std::lock_guard lock(hooks().mu);
        EXPECT_EQ(hooks().callbackCalls, 1);
        EXPECT_EQ(hooks().deviceAllocsSeenByCallback, s0.num_device_alloc);
    }
    freeOk(p);
}

TEST_F(Oom, ReleaseEverythingRetryFreesCachedSegmentsAndIsCounted) {
    // A cached 12 MiB segment and a live 40 MiB one leave 12 MiB free: 14 MiB fits only after the
    // cached segment went back.
    void* cached = mallocOn(12 * kMiB);
    void* live = mallocOn(40 * kMiB);
    ASSERT_TRUE(cached && live);
    freeOk(cached);
    const mtiaMemoryStats s0 = memStats();
    void* p = mallocOn(14 * kMiB);
    ASSERT_NE(p, nullptr);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_alloc_retries - s0.num_alloc_retries, 1);
    EXPECT_GE(s1.num_sync_all_streams - s0.num_sync_all_streams, 1);
    EXPECT_EQ(s1.num_device_free - s0.num_device_free, 1);
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 1);
    EXPECT_EQ(s1.num_ooms, s0.num_ooms);
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(2 * kMiB));
    freeOk(p);
    freeOk(live);
}

TEST_F(Oom, SearchesAgainAfterWaitingForPendingFrees) {
    // PyTorch issue #189504: the block the request needs is free but waits for another stream; the
    // device is full and no cached segment can go back (the block's segment holds a live block).
    // The allocator must wait for the stream and find the block again instead of failing.
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    void* x = mallocOn(5 * kMiB, a);
    void* y = mallocOn(15 * kMiB, a);  // the rest of x's 20 MiB segment
    void* f = mallocOn(44 * kMiB, a);  // the rest of the device
    ASSERT_TRUE(x && y && f);
    ASSERT_EQ(memInfo().free, 0u);
    Latch latch;
    ASSERT_OK(latch.block(b));
    ASSERT_TRUE(latch.waitEntered());
    ASSERT_OK(mtiaRecordStream(x, b));
    freeOk(x);
    const mtiaMemoryStats s0 = memStats();
    void* again = nullptr;
    mtiaError_t st = mtiaErrorUnknown;
    {
        Async call([&] { st = mtiaMallocAsync(&again, 5 * kMiB, a); });
        const bool blocked = call.waitBlocked();
        latch.open();
        ASSERT_TRUE(call.waitFor(kHang));
        EXPECT_TRUE(blocked) << "the allocation returned without waiting for the busy stream";
    }
    ASSERT_EQ(st, mtiaSuccess) << mtiaGetErrorName(st)
                               << " though the freed block became available";
    EXPECT_EQ(again, x);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_device_alloc, s0.num_device_alloc);
    EXPECT_EQ(s1.num_device_free, s0.num_device_free);
    EXPECT_EQ(s1.num_alloc_retries - s0.num_alloc_retries, 1);
    EXPECT_EQ(s1.num_ooms, s0.num_ooms);
    for (void* p : {again, y, f}) freeOk(p);
}

TEST_F(Oom, DuringACaptureNothingIsFreedToTheDevice) {
    // While a stream is routed to a private pool (a capture) the allocator frees nothing to the
    // device: the request fails out of memory with the cached segment still there; after the
    // capture the same request succeeds through the release-everything retry.
    Stream capture;
    ASSERT_OK(capture.status());
    void* cached = mallocOn(20 * kMiB);
    ASSERT_NE(cached, nullptr);
    freeOk(cached);
    mtiaMemPoolId_t id{};
    ASSERT_OK(mtiaGraphPoolHandle(&id));
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, capture));
    const mtiaMemoryStats s0 = memStats();
    void* p = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMallocAsync(&p, 50 * kMiB, capture),
                 "tried to allocate 50.00 MiB");
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_device_free, s0.num_device_free)
        << "memory went back to the device during a capture";
    EXPECT_EQ(s1.num_alloc_retries, s0.num_alloc_retries);
    EXPECT_EQ(cur(s1.reserved_bytes), cur(s0.reserved_bytes));
    EXPECT_EQ(s1.num_ooms - s0.num_ooms, 1);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    void* q = mallocOn(50 * kMiB);
    EXPECT_NE(q, nullptr);
    EXPECT_EQ(memStats().num_alloc_retries - s1.num_alloc_retries, 1);
    freeOk(q);
}

TEST_F(OomFaults, LadderStepByStepWithInjectedFailures) {
    // MTIA_SIM_FAULTS=alloc=2,alloc=4,alloc=5: the 2nd, 4th and 5th device allocations of the
    // process fail.
    const char* faults = std::getenv("MTIA_SIM_FAULTS");
    if (faults == nullptr || std::string(faults) != "alloc=2,alloc=4,alloc=5")
        GTEST_SKIP()
            << "runs with MTIA_SIM_FAULTS=alloc=2,alloc=4,alloc=5 (ctest alloc_oom_faults)";
    {
        std::lock_guard lock(hooks().mu);
        hooks().observing = true;
    }
    const mtiaMemoryStats s0 = memStats();
    void* x = mallocOn(12 * kMiB);  // allocation 1
    ASSERT_NE(x, nullptr);
    freeOk(x);

    // 2 fails; the retry frees the cached 12 MiB segment and 3 succeeds.
    void* p = mallocOn(14 * kMiB);
    ASSERT_NE(p, nullptr);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_alloc_retries - s0.num_alloc_retries, 1);
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 2);
    EXPECT_EQ(s1.num_device_free - s0.num_device_free, 1);
    EXPECT_EQ(s1.num_ooms, s0.num_ooms);

    // 4 fails, the retry frees p's cached segment, 5 fails too: out of memory, with the driver's
    // word.
    freeOk(p);
    void* q = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&q, 16 * kMiB),
                 "tried to allocate 16.00 MiB|driver");
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(s2.num_alloc_retries - s1.num_alloc_retries, 1);
    EXPECT_EQ(s2.num_ooms - s1.num_ooms, 1);
    EXPECT_EQ(s2.num_device_free - s1.num_device_free, 1);
    EXPECT_EQ(s2.num_device_alloc, s1.num_device_alloc);
    EXPECT_EQ(cur(s2.reserved_bytes), cur(s0.reserved_bytes));
    {
        std::lock_guard lock(hooks().mu);
        EXPECT_EQ(hooks().observerCalls, 1);
        EXPECT_EQ(hooks().observedRequested, 16 * kMiB);
    }
    // Not sticky: 6 succeeds.
    void* r = mallocOn(16 * kMiB);
    EXPECT_NE(r, nullptr);
    freeOk(r);
}
