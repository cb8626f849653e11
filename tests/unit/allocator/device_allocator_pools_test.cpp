// The device allocator's private pools below the ABI, over a fake driver that
// counts its calls and whose queues finish only when a test says so:
// routeStreamToPool, poolInUse, poolOwns, and that while a stream route
// exists (a graph capture) no path asks a stream anything or gives memory back
// to the device, and that what was put off happens once the last route ends.
#include "allocator/allocator_context.hpp"
#include "allocator/device_allocator.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mtia::allocator {
namespace {

constexpr size_t kMiB = AllocConfig::kMiB;
constexpr uint64_t kGranularity = 2 * kMiB;
constexpr uint64_t kTotal = 256 * kMiB;

// ---- A driver that counts -----------------------------------------------------------------------

struct Counters {
    std::atomic<uint64_t> queries{0};  // queueQuery, queueGetCounts, queueWait, deviceSynchronize
    std::atomic<uint64_t> frees{0};    // memRelease, memUnmap, vaRelease
    std::atomic<uint64_t> creates{0};  // memCreate that succeeded
};
Counters gCount;
std::atomic<uint64_t> gCapacity{kTotal};  // physical bytes memCreate hands out in all
std::atomic<uint64_t> gUsed{0};
std::atomic<uint64_t> gNextVa{uint64_t{1} << 40};

struct FakeQueue {
    std::atomic<uint64_t> submitted{0};
    std::atomic<uint64_t> completed{0};
};
struct FakeMem {
    uint64_t size;
};

FakeQueue* fq(mtiaDrvQueue q) {
    return reinterpret_cast<FakeQueue*>(q);
}

mtiaError_t fakeQueueCreate(int32_t, int32_t, uint32_t, mtiaDrvQueue* q) {
    *q = reinterpret_cast<mtiaDrvQueue>(new FakeQueue);
    return mtiaSuccess;
}
mtiaError_t fakeQueueDestroy(mtiaDrvQueue q) {
    delete fq(q);
    return mtiaSuccess;
}
mtiaError_t fakeSubmit(mtiaDrvQueue q, const mtiaDrvCommand*, uint64_t* seq) {
    *seq = fq(q)->submitted.fetch_add(1) + 1;
    return mtiaSuccess;
}
mtiaError_t fakeQuery(mtiaDrvQueue q, uint64_t* done) {
    ++gCount.queries;
    *done = fq(q)->completed.load();
    return mtiaSuccess;
}
mtiaError_t fakeCounts(mtiaDrvQueue q, uint64_t* submitted, uint64_t* done) {
    ++gCount.queries;
    *submitted = fq(q)->submitted.load();
    *done = fq(q)->completed.load();
    return mtiaSuccess;
}
mtiaError_t fakeWait(mtiaDrvQueue q, uint64_t seq, uint32_t) {
    ++gCount.queries;
    // The tests finish what they queued before anything waits for it; never hang.
    if (fq(q)->completed.load() < seq) fq(q)->completed.store(seq);
    return mtiaSuccess;
}
mtiaError_t fakeSynchronize(int32_t) {
    ++gCount.queries;
    return mtiaSuccess;
}
mtiaError_t fakeHealthy(int32_t) {
    return mtiaSuccess;
}
mtiaError_t fakeMemInfo(int32_t, uint64_t* free, uint64_t* total) {
    *free = gCapacity.load() - gUsed.load();
    *total = kTotal;
    return mtiaSuccess;
}
mtiaError_t fakeVaReserve(int32_t, uint64_t size, uint64_t, void** va) {
    *va = reinterpret_cast<void*>(gNextVa.fetch_add(size + kGranularity));  // a gap between ranges
    return mtiaSuccess;
}
mtiaError_t fakeVaRelease(int32_t, void*, uint64_t) {
    ++gCount.frees;
    return mtiaSuccess;
}
mtiaError_t fakeMemCreate(int32_t, uint64_t size, mtiaDrvMem* mem) {
    uint64_t used = gUsed.load();
    do {
        if (used + size > gCapacity.load()) return mtiaErrorMemoryAllocation;
    } while (!gUsed.compare_exchange_weak(used, used + size));
    ++gCount.creates;
    *mem = reinterpret_cast<mtiaDrvMem>(new FakeMem{size});
    return mtiaSuccess;
}
mtiaError_t fakeMemRelease(mtiaDrvMem mem) {
    ++gCount.frees;
    auto* m = reinterpret_cast<FakeMem*>(mem);
    gUsed -= m->size;
    delete m;
    return mtiaSuccess;
}
mtiaError_t fakeMap(void*, uint64_t, mtiaDrvMem, uint64_t) {
    return mtiaSuccess;
}
mtiaError_t fakeUnmap(void*, uint64_t) {
    ++gCount.frees;
    return mtiaSuccess;
}
const char* fakeName() {
    return "counting fake";
}
const char* fakeMessage() {
    return "fake: out of memory";
}

mtiaDriverOps fakeOps() {
    mtiaDriverOps o{};
    o.version = MTIA_DRIVER_API_VERSION;
    o.structSize = sizeof(o);
    o.getName = fakeName;
    o.deviceGetStatus = fakeHealthy;
    o.deviceSynchronize = fakeSynchronize;
    o.memGetInfo = fakeMemInfo;
    o.vaReserve = fakeVaReserve;
    o.vaRelease = fakeVaRelease;
    o.memCreate = fakeMemCreate;
    o.memRelease = fakeMemRelease;
    o.memMap = fakeMap;
    o.memUnmap = fakeUnmap;
    o.queueCreate = fakeQueueCreate;
    o.queueDestroy = fakeQueueDestroy;
    o.queueSubmit = fakeSubmit;
    o.queueQuery = fakeQuery;
    o.queueWait = fakeWait;
    o.queueGetCounts = fakeCounts;
    o.lastErrorMessage = fakeMessage;
    return o;
}

const driver::Driver& fakeDriver() {
    static const driver::Driver d(fakeOps(), "counting fake driver of device_allocator_pools_test");
    return d;
}

std::shared_ptr<streams::Stream> newStream() {
    return std::make_shared<streams::Stream>(fakeDriver(), 0, 0, 0, 0u);
}
void busy(streams::Stream& s) {
    s.submit(mtiaDrvCommand{});
}
void finish(streams::Stream& s) {
    fq(s.queue())->completed.store(fq(s.queue())->submitted.load());
}

mtiaError_t errorOf(const std::function<void()>& fn, std::string* message = nullptr) {
    try {
        fn();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.code();
    }
    return mtiaSuccess;
}

struct Snapshot {
    uint64_t queries = gCount.queries.load();
    uint64_t frees = gCount.frees.load();
};

// ---- Fixture ------------------------------------------------------------------------------------

class Pools : public ::testing::Test {
protected:
    void SetUp() override { gCapacity = kTotal; }
    void TearDown() override { gCapacity = kTotal; }

    // A fresh allocator (its own segments and pools) with settings c.
    std::unique_ptr<DeviceAllocator> make(AllocConfig c = {}) {
        context_ = std::make_unique<AllocatorContext>(c);
        return std::make_unique<DeviceAllocator>(fakeDriver(), 0, 0, kTotal, kGranularity, 0,
                                                 *context_);
    }

    std::unique_ptr<AllocatorContext> context_;
    std::shared_ptr<streams::Stream> s_ = newStream(), t_ = newStream(), u_ = newStream();
};

const PoolId kA{0, 101};
const PoolId kB{0, 102};
const PoolId kC{0, 103};
const PoolId kD{0, 104};

// ---- routeStreamToPool --------------------------------------------------------------------------

TEST_F(Pools, RouteStreamToPoolSendsThatStreamToThePool) {
    auto a = make();
    std::string m;
    EXPECT_EQ(errorOf([&] { a->routeStreamToPool(kA, *t_); }, &m), mtiaErrorNotFound);
    EXPECT_NE(m.find("no pool {0, 101}"), std::string::npos) << m;

    a->beginAllocateToPool(kA, s_.get());
    a->routeStreamToPool(kA, *t_);
    void* onS = a->allocate(4096, *s_);
    void* onT = a->allocate(4096, *t_);
    void* onU = a->allocate(4096, *u_);
    EXPECT_TRUE(a->poolOwns(kA, onS, 4096));
    EXPECT_TRUE(a->poolOwns(kA, onT, 4096));
    EXPECT_FALSE(a->poolOwns(kA, onU, 4096)) << "an unrouted stream allocated from the pool";

    // One route per stream, whoever added it.
    EXPECT_EQ(errorOf([&] { a->routeStreamToPool(kA, *t_); }), mtiaErrorIllegalState);
    EXPECT_EQ(errorOf([&] { a->routeStreamToPool(kA, *s_); }), mtiaErrorIllegalState);
    a->beginAllocateToPool(kB, nullptr);  // a thread route to another pool
    EXPECT_EQ(errorOf([&] { a->routeStreamToPool(kB, *t_); }, &m), mtiaErrorIllegalState);
    EXPECT_NE(m.find("already allocates to pool {0, 101}"), std::string::npos) << m;
    EXPECT_EQ(errorOf([&] { a->beginAllocateToPool(kB, t_.get()); }), mtiaErrorIllegalState);
    a->endAllocateToPool(kB);
    a->releasePool(kB);

    // endAllocateToPool ends every stream route to the pool, the joined one too.
    a->endAllocateToPool(kA);
    void* later = a->allocate(4096, *t_);
    EXPECT_FALSE(a->poolOwns(kA, later, 4096));
    EXPECT_EQ(errorOf([&] { a->endAllocateToPool(kA); }), mtiaErrorNotFound);

    // The joined route added no user: the one release the begin calls for ends the pool's use.
    EXPECT_TRUE(a->poolInUse(kA));
    a->releasePool(kA);
    EXPECT_FALSE(a->poolInUse(kA));
    for (void* p : {onS, onT, onU, later}) a->free(p);
}

TEST_F(Pools, RouteStreamToPoolFromAnotherThreadEndsWithTheCapture) {
    auto a = make();
    a->beginAllocateToPool(kA, s_.get());
    std::thread([&] { a->routeStreamToPool(kA, *t_); }).join();
    void* p = nullptr;
    std::thread([&] { p = a->allocate(4096, *t_); }).join();
    EXPECT_TRUE(a->poolOwns(kA, p, 4096));
    a->endAllocateToPool(kA);  // this thread ends the route the other thread added
    void* q = a->allocate(4096, *t_);
    EXPECT_FALSE(a->poolOwns(kA, q, 4096));
    a->free(p);
    a->free(q);
    a->releasePool(kA);
}

TEST_F(Pools, RouteStreamToPoolKeepsAReleasedPoolUntilItEnds) {
    auto a = make();
    a->beginAllocateToPool(kA, nullptr);
    void* p = a->allocate(4096, *s_);  // the thread route
    a->endAllocateToPool(kA);
    a->releasePool(kA);  // no users; its live block keeps it
    EXPECT_FALSE(a->poolInUse(kA));
    a->routeStreamToPool(kA, *t_);  // it still exists
    void* q = a->allocate(4096, *t_);
    EXPECT_TRUE(a->poolOwns(kA, q, 4096));
    a->free(p);
    a->free(q);
    a->endAllocateToPool(kA);
    // Nothing routes to it, no user, no live block: its segment goes back and the pool is
    // forgotten.
    EXPECT_FALSE(a->poolOwns(kA, q, 4096));
    EXPECT_EQ(errorOf([&] { a->routeStreamToPool(kA, *t_); }), mtiaErrorNotFound);
    EXPECT_EQ(a->reservedBytes(), 0);
}

// ---- poolInUse ----------------------------------------------------------------------------------

TEST_F(Pools, PoolInUseCountsUsersNotRoutes) {
    auto a = make();
    EXPECT_FALSE(a->poolInUse(kA));
    EXPECT_FALSE(a->poolInUse(PoolId{}));
    a->beginAllocateToPool(kA, s_.get());
    EXPECT_TRUE(a->poolInUse(kA));
    a->endAllocateToPool(kA);
    EXPECT_TRUE(a->poolInUse(kA)) << "ending the route is not a release";
    a->beginAllocateToPool(kA, nullptr);  // a second user
    a->endAllocateToPool(kA);
    a->releasePool(kA);
    EXPECT_TRUE(a->poolInUse(kA));
    a->releasePool(kA);
    EXPECT_FALSE(a->poolInUse(kA));
    EXPECT_EQ(errorOf([&] { a->releasePool(kA); }), mtiaErrorNotFound);
    // From other threads while this one changes it.
    std::atomic<bool> stop{false};
    std::thread reader([&] {
        while (!stop.load()) (void)a->poolInUse(kA);
    });
    for (int i = 0; i < 200; ++i) {
        a->beginAllocateToPool(kA, nullptr);
        a->endAllocateToPool(kA);
        a->releasePool(kA);
    }
    stop = true;
    reader.join();
    EXPECT_FALSE(a->poolInUse(kA));
}

// ---- poolOwns -----------------------------------------------------------------------------------

TEST_F(Pools, PoolOwnsRangesInsideOneSegmentOfThePool) {
    auto a = make();
    void* outside = a->allocate(4096, *s_);
    a->beginAllocateToPool(kA, s_.get());
    const size_t big = 12 * kMiB;  // a large segment of its own (rounded to 12 MiB)
    auto* p = static_cast<char*>(a->allocate(big, *s_));
    auto* small = static_cast<char*>(a->allocate(1000, *s_));
    a->endAllocateToPool(kA);
    a->beginAllocateToPool(kB, s_.get());
    void* inB = a->allocate(4096, *s_);
    a->endAllocateToPool(kB);

    EXPECT_TRUE(a->poolOwns(kA, p, big));
    EXPECT_TRUE(a->poolOwns(kA, p + 100, 1000));
    EXPECT_TRUE(a->poolOwns(kA, p + big - 1, 1));
    EXPECT_TRUE(a->poolOwns(kA, p, 0));
    EXPECT_FALSE(a->poolOwns(kA, p, big + 1)) << "past the end of the segment";
    EXPECT_FALSE(a->poolOwns(kA, p + big, 1));
    EXPECT_FALSE(a->poolOwns(kA, p + 1, SIZE_MAX)) << "a size that wraps";
    // The small block's segment is 2 MiB: the rest of it (cached) is the pool's too.
    EXPECT_TRUE(a->poolOwns(kA, small, 2 * kMiB));
    EXPECT_FALSE(a->poolOwns(kA, small, 2 * kMiB + 1));
    EXPECT_FALSE(a->poolOwns(kA, outside, 4096)) << "the default pool's";
    EXPECT_FALSE(a->poolOwns(kB, p, 1)) << "another pool's";
    EXPECT_TRUE(a->poolOwns(kB, inB, 4096));
    EXPECT_FALSE(a->poolOwns(kA, nullptr, 0));
    EXPECT_FALSE(a->poolOwns(PoolId{}, outside, 1));

    a->free(p);  // cached in the pool: still its memory
    EXPECT_TRUE(a->poolOwns(kA, p, big));
    a->releasePool(kA);  // the idle segment goes back
    EXPECT_FALSE(a->poolOwns(kA, p, 1));
    EXPECT_TRUE(a->poolOwns(kA, small, 1000));  // a live block keeps its segment
    a->free(small);
    EXPECT_FALSE(a->poolOwns(kA, small, 1));
    a->free(inB);
    a->free(outside);
    a->releasePool(kB);
}

TEST_F(Pools, PoolOwnsOnlyTheMappedChunksOfExpandableSegments) {
    AllocConfig c;
    c.expandableSegments = true;
    auto a = make(c);
    a->beginAllocateToPool(kA, s_.get());
    auto* p = static_cast<char*>(
        a->allocate(30 * kMiB, *s_));  // two 20 MiB chunks of a large reservation
    a->endAllocateToPool(kA);
    EXPECT_TRUE(a->poolOwns(kA, p, 30 * kMiB));
    EXPECT_TRUE(a->poolOwns(kA, p, 40 * kMiB)) << "the rest of the second chunk is mapped";
    EXPECT_FALSE(a->poolOwns(kA, p, 40 * kMiB + 1)) << "the third chunk is not mapped";
    EXPECT_FALSE(a->poolOwns(kA, p + 40 * kMiB, 0));
    a->free(p);
    a->releasePool(kA);
    EXPECT_FALSE(a->poolOwns(kA, p, 1));
}

// ---- No queries, no frees while a stream route exists -------------------------------------------

class CaptureQuiet : public Pools, public ::testing::WithParamInterface<bool> {
protected:
    AllocConfig config() const {
        AllocConfig c;
        c.expandableSegments = GetParam();
        return c;
    }
};

// Every path of the allocator during a capture, then the end of the capture.
TEST_P(CaptureQuiet, NoQueriesNoFreesUntilTheLastStreamRouteEnds) {
    auto a = make(config());
    // Before the capture: cached default blocks on t (large and small), a released pool whose last
    // block is still live, and a block of pool C on s with work queued after it.
    a->free(a->allocate(30 * kMiB, *t_));
    a->free(a->allocate(4096, *t_));
    a->beginAllocateToPool(kB, nullptr);
    void* inB = a->allocate(4096, *u_);
    a->endAllocateToPool(kB);
    a->releasePool(kB);
    a->beginAllocateToPool(kC, nullptr);
    void* inC = a->allocate(6 * kMiB, *s_);
    a->endAllocateToPool(kC);
    busy(*s_);
    void* recorded = a->allocate(8192, *t_);
    a->recordStream(recorded, u_);
    busy(*u_);
    const int64_t reservedBefore = a->reservedBytes();

    a->beginAllocateToPool(kA, s_.get());
    a->routeStreamToPool(kA, *u_);
    const Snapshot begin;

    // Mallocs and frees on the routed streams and on another one; reuse; a new segment.
    void* x = a->allocate(4096, *s_);
    void* y = a->allocate(3 * kMiB, *s_);
    a->free(x);
    EXPECT_EQ(a->allocate(4096, *s_), x) << "a block freed in the capture serves the capture again";
    void* onU = a->allocate(4096, *u_);
    void* onT = a->allocate(30 * kMiB, *t_);  // the cached default block
    a->free(onT);
    a->recordStream(y, t_);
    a->free(y);         // used by t: put off
    a->free(recorded);  // used by u: put off
    a->free(inB);       // the released pool's last block: its segment waits
    a->free(inC);       // pool C's segment is stamped later
    a->releasePool(kC);
    a->setMemoryFraction(0.9);
    a->setMemoryFraction(1.0);

    // The out-of-memory ladder: nothing cached fits and the device is full; cached memory stays.
    gCapacity = gUsed.load() + 4 * kMiB;
    std::string m;
    EXPECT_EQ(errorOf([&] { a->allocate(40 * kMiB, *s_); }, &m), mtiaErrorMemoryAllocation);
    EXPECT_NE(m.find("capture is underway"), std::string::npos) << m;
    EXPECT_EQ(errorOf([&] { a->allocate(50 * kMiB, *t_); }), mtiaErrorMemoryAllocation);
    // A growth that gets part of what it needs: the chunks it mapped stay (expandable segments).
    gCapacity = gUsed.load() + 20 * kMiB;
    EXPECT_EQ(errorOf([&] { a->allocate(50 * kMiB, *s_); }), mtiaErrorMemoryAllocation);
    EXPECT_EQ(errorOf([&] { a->allocate(50 * kMiB, *s_); }), mtiaErrorMemoryAllocation)
        << "and again";
    EXPECT_EQ(errorOf([&] { a->emptyCache(); }, &m), mtiaErrorIllegalState);
    EXPECT_NE(m.find("capture in progress"), std::string::npos) << m;
    gCapacity = kTotal;

    // Another stream route ends and its pool is released; the capture goes on.
    a->beginAllocateToPool(kD, t_.get());
    void* z = a->allocate(4096, *t_);
    EXPECT_TRUE(a->poolOwns(kD, z, 4096));
    a->free(z);
    a->endAllocateToPool(kD);
    a->releasePool(kD);

    const Snapshot end;
    EXPECT_EQ(end.queries, begin.queries)
        << "the allocator asked a stream or the device during a capture";
    EXPECT_EQ(end.frees, begin.frees) << "the allocator gave memory back during a capture";
    EXPECT_GE(a->reservedBytes(), reservedBefore);

    a->endAllocateToPool(kA);
    const Snapshot after;
    EXPECT_GT(after.queries, end.queries) << "the put-off stamps and frees were not asked for";
    EXPECT_GT(after.frees, end.frees)
        << "pool D's idle segment (its stream is done) did not go back";
    EXPECT_FALSE(a->poolOwns(kD, z, 1));

    // Pool B's segment waits for the work queued on u, pool C's for the work queued on s, before
    // their blocks were freed; `recorded` waits for u.
    void* again = a->allocate(8192, *t_);
    EXPECT_NE(again, recorded) << "reused before the stream that used it finished";
    finish(*t_);
    finish(*u_);
    void* r = a->allocate(8192, *t_);
    EXPECT_EQ(r, recorded) << "the put-off free never completed";
    EXPECT_FALSE(a->poolOwns(kB, inB, 1)) << "pool B's segment stayed after its stream finished";
    EXPECT_TRUE(a->poolOwns(kC, inC, 6 * kMiB))
        << "pool C's segment went back before its stream finished";
    finish(*s_);
    a->free(a->allocate(4096, *t_));  // processes what waits
    EXPECT_FALSE(a->poolOwns(kC, inC, 1));

    for (void* p : {again, r, onU, x}) a->free(p);
    a->releasePool(kA);
    a->emptyCache();
    EXPECT_EQ(a->reservedBytes(), 0);
}

// A capture that keeps the reservations of failed device allocations gives them back at its end.
TEST_P(CaptureQuiet, WhatFailedAllocationsLeftGoesBackAtTheEnd) {
    auto a = make(config());
    a->beginAllocateToPool(kA, s_.get());
    gCapacity = gUsed.load() + 10 * kMiB;
    const Snapshot begin;
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(errorOf([&] { a->allocate(64 * kMiB, *s_); }), mtiaErrorMemoryAllocation);
    EXPECT_EQ(Snapshot{}.frees, begin.frees);
    gCapacity = kTotal;
    void* p = a->allocate(64 * kMiB, *s_);  // the device has room again
    EXPECT_TRUE(a->poolOwns(kA, p, 64 * kMiB));
    a->free(p);
    a->endAllocateToPool(kA);
    a->releasePool(kA);
    a->emptyCache();
    EXPECT_EQ(a->reservedBytes(), 0);
    EXPECT_EQ(gUsed.load(), 0u) << "physical memory left behind";
}

// Failed growth during a capture keeps what it reserved (a reservation; an expandable segment that
// maps nothing); the end of the capture gives it back.
TEST_P(CaptureQuiet, KeptReservationsGoWhenTheCaptureEnds) {
    auto a = make(config());
    const int64_t segments = a->stats().segment[kStatAll].current;
    a->beginAllocateToPool(kA, s_.get());
    gCapacity = gUsed.load() + 4 * kMiB;
    const Snapshot begin;
    EXPECT_EQ(errorOf([&] { a->allocate(64 * kMiB, *s_); }), mtiaErrorMemoryAllocation);
    EXPECT_EQ(errorOf([&] { a->allocate(64 * kMiB, *t_); }), mtiaErrorMemoryAllocation);
    EXPECT_EQ(Snapshot{}.frees, begin.frees);
    a->endAllocateToPool(kA);
    EXPECT_GT(Snapshot{}.frees, begin.frees);
    EXPECT_EQ(a->stats().segment[kStatAll].current, segments);
    a->releasePool(kA);
}

INSTANTIATE_TEST_SUITE_P(Segments, CaptureQuiet, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Expandable" : "Plain"; });

// A thread route alone is no capture: the allocator works as usual.
TEST_F(Pools, ThreadRouteIsNoCapture) {
    auto a = make();
    a->beginAllocateToPool(kA, nullptr);
    void* p = a->allocate(4096, *s_);
    a->recordStream(p, t_);
    busy(*t_);
    const Snapshot before;
    a->free(p);
    EXPECT_GT(Snapshot{}.queries, before.queries);
    a->endAllocateToPool(kA);
    finish(*t_);
    a->releasePool(kA);
    a->emptyCache();
    EXPECT_EQ(a->reservedBytes(), 0);
}

// ---- Publishing the allocated bytes (driver ABI 1.7) --------------------------------------------

int gReports = 0;  // memReportAllocated calls
uint64_t gReported = 0;
bool gWordsReady = false;  // whether memGetAllocatedWords has words to give yet
uint64_t gAllocatedWord = 0;
uint64_t gPeakWord = 0;

mtiaError_t countReport(int32_t, uint64_t bytes) {
    ++gReports;
    gReported = bytes;
    return mtiaSuccess;
}
mtiaError_t giveWords(int32_t, uint64_t** allocated, uint64_t** peak) {
    *allocated = gWordsReady ? &gAllocatedWord : nullptr;
    *peak = gWordsReady ? &gPeakWord : nullptr;
    return mtiaSuccess;
}
mtiaError_t healthyWord(int32_t, const uint32_t** word) {
    static const uint32_t zero = 0;
    *word = &zero;
    return mtiaSuccess;
}

// While the driver has no words to give (before its process has a registry slot), the allocator
// calls memReportAllocated; once it has them, it stores into them instead, raising the peak only
// when exceeded.
TEST_F(Pools, PublishesThroughTheSharedWordsOnceTheDriverHasThem) {
    mtiaDriverOps o = fakeOps();
    o.memReportAllocated = countReport;
    o.memGetAllocatedWords = giveWords;
    o.deviceGetFaultWord = healthyWord;
    const driver::Driver d(o, "fake driver with shared words");
    AllocatorContext context{AllocConfig{}};
    {
        DeviceAllocator a(d, 0, 0, kTotal, kGranularity, 0, context);
        void* p = a.allocate(4096, *s_);
        EXPECT_EQ(gReports, 1);
        EXPECT_EQ(gReported, 4096u);
        gWordsReady = true;
        void* q = a.allocate(8192, *s_);
        EXPECT_EQ(gReports, 1) << "called the driver although it shares its words";
        EXPECT_EQ(gAllocatedWord, 12288u);
        EXPECT_EQ(gPeakWord, 12288u);
        a.free(q);
        EXPECT_EQ(gAllocatedWord, 4096u);
        EXPECT_EQ(gPeakWord, 12288u);
        a.free(p);
        EXPECT_EQ(gAllocatedWord, 0u);
        EXPECT_EQ(gReports, 1);
    }
    gWordsReady = false;
}

}  // namespace
}  // namespace mtia::allocator
