// Item 89 of the graph behaviour list (streams-graphs-anchors.md (c)): while a
// stream route to a private pool exists (a capture's allocations), the caching
// allocator makes no stream or event query and gives nothing back to the
// device, on any path reachable from the ABI; once the route ends, what it put
// off happens. Run through the counting driver (counting_driver.c) in front of
// the simulator, so every query and free the runtime makes is seen; the test
// itself uses only the public header.
#include "alloc_test_util.hpp"

#include <dlfcn.h>

#include <array>
#include <atomic>

using namespace alloc_test;

namespace {

// The counting driver's counters, in its order: queueQuery, queueGetCounts, queueWait,
// deviceSynchronize, memRelease, memUnmap, vaRelease.
using Counts = std::array<uint64_t, 7>;

Counts counts() {
    using Fn = void (*)(uint64_t*);
    static const Fn fn = [] {
        const char* path = std::getenv("MTIA_DRIVER");
        void* handle = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
        void* sym = handle != nullptr ? dlsym(handle, "countingDriverCounts") : nullptr;
        Fn f = nullptr;
        std::memcpy(&f, &sym, sizeof f);
        return f;
    }();
    Counts c{};
    if (fn == nullptr) {
        ADD_FAILURE() << "MTIA_DRIVER is not the counting driver (or it is not loaded)";
        return c;
    }
    fn(c.data());
    return c;
}
uint64_t queries(const Counts& c) {
    return c[0] + c[1] + c[2] + c[3];
}
uint64_t frees(const Counts& c) {
    return c[4] + c[5] + c[6];
}

std::string describe(const Counts& from, const Counts& to) {
    static const char* const names[] = {"queueQuery",        "queueGetCounts", "queueWait",
                                        "deviceSynchronize", "memRelease",     "memUnmap",
                                        "vaRelease"};
    std::string s;
    for (size_t i = 0; i < from.size(); ++i)
        if (to[i] != from[i])
            s += std::string(s.empty() ? "" : ", ") + names[i] + " +" +
                 std::to_string(to[i] - from[i]);
    return s.empty() ? "none" : s;
}

std::atomic<int> gOoms{0};
std::atomic<int> gCallbacks{0};

class CountingDriver : public AllocTest {
protected:
    static void SetUpTestSuite() {
        mtiaAttachOutOfMemoryObserver([](int, size_t, size_t, size_t, void*) { ++gOoms; }, nullptr);
        mtiaAttachFreeMemoryCallback(
            [](int, size_t, void*) {
                ++gCallbacks;
                return 0;
            },
            nullptr);
    }
};

mtiaMemPoolId_t newPool() {
    mtiaMemPoolId_t id{};
    EXPECT_OK(mtiaGraphPoolHandle(&id));
    return id;
}

void* tryMalloc(size_t size, mtiaStream_t s, mtiaError_t* st) {
    void* p = nullptr;
    *st = mtiaMallocAsync(&p, size, s);
    return p;
}

}  // namespace

TEST_F(CountingDriver, SeesTheSimulatorsCalls) {
    const Counts before = counts();
    void* p = mallocOn(4 * kMiB);
    ASSERT_NE(p, nullptr);
    freeOk(p);
    ASSERT_OK(mtiaDeviceSynchronize());
    ASSERT_OK(mtiaEmptyCache());
    const Counts after = counts();
    EXPECT_GT(queries(after), queries(before)) << describe(before, after);
    EXPECT_GT(frees(after), frees(before)) << describe(before, after);
}

TEST_F(CountingDriver, Allocator89_NoQueriesNoFreesWhileCapturing) {
    Stream s, t,
        u;  // s: routed (the capture's stream); t: another stream; u: uses blocks (recordStream)
    ASSERT_OK(s.status());
    ASSERT_OK(t.status());
    ASSERT_OK(u.status());
    const int64_t baseline = cur(memStats().reserved_bytes);

    // Before the capture: cached default blocks on t, a pool that is used and left unused (released
    // during the capture), and u held busy by a latch so that what it used stays in use after the
    // end.
    freeOk(mallocOn(30 * kMiB, t));
    freeOk(mallocOn(4096, t));
    const mtiaMemPoolId_t unused = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, unused, nullptr));
    void* old = mallocOn(4096);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, unused));
    freeOk(old);
    Latch latch;
    ASSERT_OK(latch.block(u));
    ASSERT_TRUE(latch.waitEntered());
    const int oomsBefore = gOoms.load();
    const mtiaMemoryStats s0 = memStats();

    const mtiaMemPoolId_t pool = newPool();
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, pool, s));
    const Counts begin = counts();

    // Mallocs and frees on the routed stream and on another one; reuse of freed blocks.
    void* a = mallocOn(4096, s);
    void* b = mallocOn(3 * kMiB, s);
    freeOk(a);
    void* a2 = mallocOn(4096, s);
    EXPECT_EQ(a2, a) << "a block freed during the capture did not serve the capture again";
    void* onT = mallocOn(30 * kMiB, t);  // the cached default block
    freeOk(onT);
    void* c = mallocOn(4096, t);
    freeOk(c);
    // Frees of blocks another stream used: put off.
    void* e = mallocOn(8192, t);
    ASSERT_OK(mtiaRecordStream(e, u));
    freeOk(e);
    ASSERT_OK(mtiaRecordStream(b, u));
    freeOk(b);
    void* e2 = mallocOn(8192, t);
    EXPECT_NE(e2, e) << "a block u uses was reused";
    // A new segment.
    void* big = mallocOn(40 * kMiB, s);
    ASSERT_NE(big, nullptr);
    // The out-of-memory ladder: requests the device cannot hold (the driver refuses them), with
    // memory cached that it could give back outside a capture. They fail as usual (observers told)
    // and nothing cached goes back.
    mtiaError_t st = mtiaSuccess;
    const MemInfo mi = memInfo();
    for (mtiaStream_t on : {s.get(), t.get()}) {
        EXPECT_EQ(tryMalloc(mi.free + 8 * kMiB, on, &st), nullptr);
        EXPECT_EQ(st, mtiaErrorMemoryAllocation) << mtiaGetErrorName(st);
        const std::string m = mtiaGetLastErrorMessage();
        EXPECT_NE(m.find("capture is underway"), std::string::npos) << m;
        EXPECT_NE(m.find("The driver said"), std::string::npos)
            << "the driver was not asked: " << m;
    }
    EXPECT_EQ(tryMalloc(mi.total + kMiB, s, &st), nullptr);
    EXPECT_EQ(st, mtiaErrorMemoryAllocation);
    // The memory fraction: lowered until growth is refused (before the driver is asked), then
    // raised.
    ASSERT_OK(mtiaSetMemoryFraction(0.05, 0));
    EXPECT_EQ(tryMalloc(48 * kMiB, t, &st), nullptr);
    EXPECT_EQ(st, mtiaErrorMemoryAllocation);
    ASSERT_OK(mtiaSetMemoryFraction(1.0, 0));
    EXPECT_EQ(gOoms.load() - oomsBefore, 4) << "every failed request reports out of memory";
    EXPECT_GT(gCallbacks.load(), 0) << "the free-memory callbacks were not asked";
    // mtiaEmptyCache is refused; releasing an unused pool puts its segments off.
    EXPECT_FAILS(mtiaErrorIllegalState, mtiaEmptyCache(), "capture");
    ASSERT_OK(mtiaMemPoolRelease(0, unused));
    EXPECT_EQ(memStats().num_device_free, s0.num_device_free);

    const Counts end = counts();
    EXPECT_EQ(queries(end), queries(begin))
        << "queries during the capture: " << describe(begin, end);
    EXPECT_EQ(frees(end), frees(begin)) << "frees during the capture: " << describe(begin, end);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, pool));

    // The capture is over: the put-off work happens (stamps, waits for u, the unused pool's
    // memory).
    const Counts after = counts();
    EXPECT_GT(queries(after), queries(end)) << describe(end, after);
    EXPECT_GT(frees(after), frees(end)) << describe(end, after);
    EXPECT_GT(memStats().num_device_free, s0.num_device_free)
        << "the unused pool's segment did not go back";
    void* e3 = mallocOn(8192, t);
    EXPECT_NE(e3, e) << "reused before u finished";
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(u));
    void* e4 = mallocOn(8192, t);
    EXPECT_EQ(e4, e) << "the block u used did not come back once u finished";
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, pool, s));
    void* b2 = mallocOn(3 * kMiB, s);
    EXPECT_EQ(b2, b) << "the pool's block u used did not come back once u finished";
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, pool));

    for (void* p : {a2, b2, big, e2, e3, e4}) freeOk(p);
    ASSERT_OK(mtiaMemPoolRelease(0, pool));  // one release per begin
    ASSERT_OK(mtiaMemPoolRelease(0, pool));
    ASSERT_OK(mtiaEmptyCache());
    EXPECT_EQ(cur(memStats().reserved_bytes), baseline) << "memory did not come back";
}
