// The caching pinned-host allocator on its own: size classes, reuse, the stream-ordered rule (over
// a fake driver whose queues finish only when a test says so), the background thread, emptyCache,
// the RLIMIT_MEMLOCK budget, NUMA placement and its silent fallback.
#include "allocator/host_allocator.hpp"
#include "allocator/host_numa.hpp"
#include "allocator/host_pages.hpp"
#include "core/error.hpp"

#include "common/eventually.hpp"

#include <gtest/gtest.h>
#include <numa.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace mtia::allocator {
namespace {

// ---- A driver whose queues complete on request --------------------------------------------------

struct FakeQueue {
    std::atomic<uint64_t> submitted{0};
    std::atomic<uint64_t> completed{0};
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
// While set, queries wait in the driver (the allocator's caller holds its lock meanwhile).
std::atomic<bool> gHoldQueries{false};
std::atomic<bool> gQueryHeld{false};

mtiaError_t fakeQuery(mtiaDrvQueue q, uint64_t* done) {
    if (gHoldQueries.load()) {
        gQueryHeld.store(true);
        while (gHoldQueries.load()) std::this_thread::yield();
    }
    *done = fq(q)->completed.load();
    return mtiaSuccess;
}
mtiaError_t fakeCounts(mtiaDrvQueue q, uint64_t* submitted, uint64_t* done) {
    *submitted = fq(q)->submitted.load();
    *done = fq(q)->completed.load();
    return mtiaSuccess;
}
mtiaError_t fakeWait(mtiaDrvQueue q, uint64_t seq, uint32_t) {
    while (fq(q)->completed.load() < seq) std::this_thread::yield();
    return mtiaSuccess;
}
mtiaError_t fakeHealthy(int32_t) {
    return mtiaSuccess;
}
const char* fakeName() {
    return "fake";
}
const char* fakeMessage() {
    return "";
}

mtiaDriverOps fakeOps() {
    mtiaDriverOps o{};
    o.version = MTIA_DRIVER_API_VERSION;
    o.structSize = sizeof(o);
    o.getName = fakeName;
    o.deviceGetStatus = fakeHealthy;
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
    static const driver::Driver d(fakeOps(), "fake driver of host_allocator_test");
    return d;
}

std::shared_ptr<streams::Stream> newStream() {
    return std::make_shared<streams::Stream>(fakeDriver(), 0, 0, 0, 0u);
}

// Queues one command on s; it stays unfinished until finish(s).
void busy(streams::Stream& s) {
    s.submit(mtiaDrvCommand{});
}
void finish(streams::Stream& s) {
    fq(s.queue())->completed.store(fq(s.queue())->submitted.load());
}

// ---- Helpers ------------------------------------------------------------------------------------

// The error code fn throws (mtiaSuccess when none), with its message in *message.
mtiaError_t errorOf(const std::function<void()>& fn, std::string* message = nullptr) {
    try {
        fn();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.code();
    }
    return mtiaSuccess;
}

// Polls pred until it holds or a generous deadline passes (a loaded machine, sanitizers).
using ::mtia_test::eventually;

AllocConfig background(bool on) {
    AllocConfig c;
    c.pinnedUseBackgroundThreads = on;
    return c;
}

const size_t kPage = hostPageSize();

// ---- Size classes -------------------------------------------------------------------------------

TEST(HostSizeClass, PowersOfTwoOfAtLeastAPage) {
    EXPECT_EQ(hostSizeClass(1), kPage);
    EXPECT_EQ(hostSizeClass(kPage - 1), kPage);
    EXPECT_EQ(hostSizeClass(kPage), kPage);
    EXPECT_EQ(hostSizeClass(kPage + 1), 2 * kPage);
    EXPECT_EQ(hostSizeClass(3 << 20), size_t{4} << 20);
    EXPECT_EQ(hostSizeClass(size_t{1} << 40), size_t{1} << 40);
    const size_t largest = (SIZE_MAX >> 1) + 1;
    EXPECT_EQ(hostSizeClass(largest), largest);
    std::string message;
    EXPECT_EQ(errorOf([&] { hostSizeClass(largest + 1); }, &message), mtiaErrorInvalidValue);
    EXPECT_NE(message.find("size"), std::string::npos) << message;
    EXPECT_EQ(errorOf([] { hostSizeClass(SIZE_MAX); }), mtiaErrorInvalidValue);
}

// ---- Allocation, lookup, reuse, bad frees -------------------------------------------------------

TEST(HostAllocator, BlocksAreWritableDistinctAndFoundFromInside) {
    HostAllocator a;
    auto* p = static_cast<unsigned char*>(a.allocate(1000, -1));
    auto* q = static_cast<unsigned char*>(a.allocate(5000, -1));
    ASSERT_NE(p, nullptr);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(p + hostSizeClass(1000) <= q || q + hostSizeClass(5000) <= p) << "blocks overlap";
    std::memset(p, 0x11, 1000);
    std::memset(q, 0x22, 5000);
    EXPECT_EQ(p[999], 0x11);
    EXPECT_EQ(q[4999], 0x22);

    auto info = a.find(p + 999);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->base, p);
    EXPECT_EQ(info->size, 1000u);
    info = a.find(q);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->base, q);
    EXPECT_EQ(info->size, 5000u);
    EXPECT_FALSE(a.find(p + 1000).has_value())
        << "past the requested size is not part of the allocation";
    EXPECT_FALSE(a.find(p - 1).has_value());
    int local = 0;
    EXPECT_FALSE(a.find(&local).has_value());
    EXPECT_FALSE(a.find(nullptr).has_value());

    const HostAllocatorStats s = a.stats();
    EXPECT_EQ(s.liveBlocks, 2u);
    EXPECT_EQ(s.liveBytes, 6000u);
    EXPECT_EQ(s.mapCount, 2u);
    EXPECT_EQ(s.mappedBytes, hostSizeClass(1000) + hostSizeClass(5000));
    a.free(p);
    a.free(q);
    EXPECT_FALSE(a.find(p).has_value()) << "freed memory is no longer pinned memory";
}

TEST(HostAllocator, AFreedBlockServesTheNextRequestOfItsClassOnly) {
    HostAllocator a;
    void* p = a.allocate(1000, -1);
    a.free(p);
    EXPECT_EQ(a.stats().cachedBlocks, 1u);
    void* bigger = a.allocate(kPage + 1, -1);  // another class
    EXPECT_NE(bigger, p);
    void* again = a.allocate(kPage, -1);  // 1000 and a page share the one-page class
    EXPECT_EQ(again, p);
    EXPECT_EQ(a.find(p)->size, kPage) << "the size reported is the new request's";
    EXPECT_EQ(a.stats().mapCount, 2u);
    a.free(again);
    a.free(bigger);
}

TEST(HostAllocator, BadFreesNameTheProblem) {
    HostAllocator a;
    auto* p = static_cast<char*>(a.allocate(100, -1));
    std::string m;
    int local = 0;
    EXPECT_EQ(errorOf([&] { a.free(&local); }, &m), mtiaErrorInvalidValue);
    EXPECT_NE(m.find("not memory from mtiaMallocHost"), std::string::npos) << m;
    EXPECT_EQ(errorOf([&] { a.free(p + 10); }, &m), mtiaErrorInvalidValue);
    EXPECT_NE(m.find("inside"), std::string::npos) << m;
    a.free(p);
    EXPECT_EQ(errorOf([&] { a.free(p); }, &m), mtiaErrorInvalidValue);
    EXPECT_NE(m.find("already freed"), std::string::npos) << m;
    EXPECT_EQ(a.stats().cachedBlocks, 1u) << "a refused free changes nothing";
}

// ---- Stream-ordered reuse -----------------------------------------------------------------------

TEST(HostAllocator, ARecordedStreamDelaysReuseUntilItsWorkFinished) {
    HostAllocator a;
    auto s = newStream();
    void* p = a.allocate(4096, -1);
    a.recordStream(p, s);
    busy(*s);
    a.free(p);
    EXPECT_EQ(a.stats().pendingBlocks, 1u);
    EXPECT_FALSE(a.find(p).has_value());
    void* other = a.allocate(4096, -1);
    EXPECT_NE(other, p) << "reused while the recorded stream's work was unfinished";
    finish(*s);
    void* again = a.allocate(4096, -1);
    EXPECT_EQ(again, p);
    EXPECT_EQ(a.stats().pendingBlocks, 0u);
    a.free(other);
    a.free(again);
}

TEST(HostAllocator, WorkQueuedAfterTheFreeDoesNotDelayReuse) {
    HostAllocator a;
    auto s = newStream();
    void* p = a.allocate(100, -1);
    a.recordStream(p, s);
    busy(*s);
    a.free(p);
    finish(*s);
    busy(*s);  // someone else's work, queued after the free
    EXPECT_EQ(a.allocate(100, -1), p);
    a.free(p);
}

TEST(HostAllocator, AnIdleRecordedStreamDoesNotDelayReuse) {
    HostAllocator a;
    auto s = newStream();
    void* p = a.allocate(100, -1);
    a.recordStream(p, s);
    a.free(p);
    EXPECT_EQ(a.stats().pendingBlocks, 0u);
    EXPECT_EQ(a.stats().cachedBlocks, 1u);
    EXPECT_EQ(a.allocate(100, -1), p);
    a.free(p);
}

TEST(HostAllocator, EveryRecordedStreamMustFinish) {
    HostAllocator a;
    auto s1 = newStream(), s2 = newStream();
    auto* p = static_cast<char*>(a.allocate(100, -1));
    a.recordStream(p, s1);
    a.recordStream(p + 50, s2);  // interior pointers resolve
    a.recordStream(p, s1);       // twice is once
    busy(*s1);
    busy(*s2);
    a.free(p);
    finish(*s1);
    void* other = a.allocate(100, -1);
    EXPECT_NE(other, p) << "reused while the second recorded stream was busy";
    finish(*s2);
    EXPECT_EQ(a.allocate(100, -1), p);
    a.free(other);
    a.free(p);
}

TEST(HostAllocator, RecordingNeedsALiveAllocation) {
    HostAllocator a;
    auto s = newStream();
    auto* p = static_cast<char*>(a.allocate(100, -1));
    std::string m;
    int local = 0;
    EXPECT_EQ(errorOf([&] { a.recordStream(&local, s); }, &m), mtiaErrorInvalidValue);
    EXPECT_NE(m.find("hostPtr"), std::string::npos) << m;
    EXPECT_EQ(errorOf([&] { a.recordStream(p + 100, s); }), mtiaErrorInvalidValue)
        << "past the requested size";
    EXPECT_EQ(a.stats().mapCount, 1u);
    a.free(p);
    EXPECT_EQ(errorOf([&] { a.recordStream(p, s); }, &m), mtiaErrorInvalidValue);
    EXPECT_NE(m.find("freed"), std::string::npos) << m;
}

TEST(HostAllocator, TheStreamsOfAReusedBlockStartAfresh) {
    HostAllocator a;
    auto s = newStream();
    void* p = a.allocate(100, -1);
    a.recordStream(p, s);
    a.free(p);  // s idle: cached at once
    ASSERT_EQ(a.allocate(100, -1), p);
    busy(*s);  // s works, but the new owner never recorded it
    a.free(p);
    EXPECT_EQ(a.stats().pendingBlocks, 0u);
    finish(*s);
}

// ---- emptyCache ---------------------------------------------------------------------------------

TEST(HostAllocator, EmptyCacheReturnsOnlyFreeBlocks) {
    HostAllocator a;
    auto s = newStream();
    void* live = a.allocate(100, -1);
    void* pending = a.allocate(100, -1);
    void* cached = a.allocate(100, -1);
    a.recordStream(pending, s);
    busy(*s);
    a.free(pending);
    a.free(cached);
    a.emptyCache();
    HostAllocatorStats st = a.stats();
    EXPECT_EQ(st.cachedBlocks, 0u);
    EXPECT_EQ(st.pendingBlocks, 1u);
    EXPECT_EQ(st.liveBlocks, 1u);
    EXPECT_EQ(st.unmapCount, 1u);
    EXPECT_EQ(st.mappedBytes, 2 * kPage);
    EXPECT_TRUE(a.find(live).has_value());
    finish(*s);
    a.emptyCache();  // the finished pending block goes as well
    st = a.stats();
    EXPECT_EQ(st.pendingBlocks, 0u);
    EXPECT_EQ(st.unmapCount, 2u);
    EXPECT_EQ(st.mappedBytes, kPage);
    a.free(live);
}

// ---- pinned_use_background_threads --------------------------------------------------------------

TEST(HostAllocator, WithoutTheBackgroundThreadAnAllocationPollsPendingBlocks) {
    HostAllocator a(background(false));
    auto s = newStream();
    void* p = a.allocate(100, -1);
    a.recordStream(p, s);
    busy(*s);
    a.free(p);
    finish(*s);
    EXPECT_EQ(a.stats().pendingBlocks, 1u) << "nothing but an allocation should have looked at it";
    EXPECT_EQ(a.allocate(100, -1), p);
    a.free(p);
}

TEST(HostAllocator, TheBackgroundThreadCachesFinishedBlocksWithoutAnAllocation) {
    HostAllocator a(background(true));
    auto s = newStream();
    void* p = a.allocate(100, -1);
    a.recordStream(p, s);
    busy(*s);
    a.free(p);
    EXPECT_EQ(a.stats().pendingBlocks, 1u);
    finish(*s);
    EXPECT_TRUE(eventually([&] { return a.stats().cachedBlocks == 1; }))
        << "the background thread never cached it";
    EXPECT_EQ(a.stats().pendingBlocks, 0u);
    EXPECT_EQ(a.allocate(100, -1), p);

    // Switched off, allocations poll again; switched on again, the thread comes back.
    a.setConfig(background(false));
    a.recordStream(p, s);
    busy(*s);
    a.free(p);
    finish(*s);
    EXPECT_EQ(a.stats().pendingBlocks, 1u);
    EXPECT_EQ(a.allocate(100, -1), p);
    a.setConfig(background(true));
    a.setConfig(background(true));  // already running: nothing changes
    a.recordStream(p, s);
    busy(*s);
    a.free(p);
    finish(*s);
    EXPECT_TRUE(eventually([&] { return a.stats().cachedBlocks == 1; }));
}

// A forked child has no copy of the background thread: stopping it there (the runtime's exit
// handler does) must neither join it nor wait for the allocator's lock, which the fork may have
// caught in the thread's hands (here it does: the thread is held inside a driver query).
TEST(HostAllocator, AForkedChildForgetsTheParentsBackgroundThread) {
    HostAllocator a(background(true));
    auto s = newStream();
    void* p = a.allocate(100, -1);
    a.recordStream(p, s);
    busy(*s);
    a.free(p);
    gQueryHeld = false;
    gHoldQueries = true;
    ASSERT_TRUE(eventually([] { return gQueryHeld.load(); }))
        << "the background thread never polled";
    const pid_t child = fork();
    if (child == 0) {
        a.stopBackgroundThread();
        a.stopBackgroundThread();  // and again: nothing left to forget
        _exit(0);
    }
    int status = -1;
    const bool ended =
        child > 0 && eventually([&] { return waitpid(child, &status, WNOHANG) == child; });
    if (child > 0 && !ended) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    gHoldQueries = false;
    ASSERT_GT(child, 0) << "fork failed";
    EXPECT_TRUE(ended) << "the child hung stopping a thread it does not have";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    finish(*s);
    EXPECT_TRUE(eventually([&] { return a.stats().cachedBlocks == 1; }))
        << "the parent's thread still works";
}

TEST(HostAllocator, ManyThreadsNeverShareALiveBlock) {
    for (bool bg : {false, true}) {
        HostAllocator a(background(bg));
        constexpr int kThreads = 4, kRounds = 300;
        std::vector<std::thread> threads;
        std::atomic<int> corrupt{0};
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                auto s = newStream();
                std::mt19937 rng(static_cast<unsigned>(t));
                for (int r = 0; r < kRounds; ++r) {
                    const size_t n = 1 + rng() % (3 * kPage);
                    auto* p = static_cast<unsigned char*>(a.allocate(n, -1));
                    std::memset(p, t + 1, n);
                    if (r % 3 == 0) {
                        a.recordStream(p + n / 2, s);
                        busy(*s);
                    }
                    std::this_thread::yield();
                    for (size_t i = 0; i < n; i += 97)
                        if (p[i] != t + 1) ++corrupt;
                    if (!a.find(p + n - 1).has_value()) ++corrupt;
                    a.free(p);
                    if (r % 5 == 0) finish(*s);
                    if (r % 50 == 0) a.emptyCache();
                }
                finish(*s);
            });
        }
        for (auto& th : threads) th.join();
        EXPECT_EQ(corrupt.load(), 0) << "background thread " << bg;
        EXPECT_EQ(a.stats().liveBlocks, 0u);
    }
}

TEST(HostAllocator, DestroyingItWithBlocksInEveryStateReturnsThemAll) {
    auto s = newStream();
    {
        HostAllocator a(background(true));
        a.allocate(100, -1);
        void* p = a.allocate(100, -1);
        a.recordStream(p, s);
        busy(*s);
        a.free(p);
        a.free(a.allocate(5000, -1));
        EXPECT_EQ(a.stats().mapCount, 3u);
    }
    finish(*s);
}

TEST(HostAllocator, AnImpossibleMappingIsOutOfMemory) {
    HostAllocator a;
    void* cached = a.allocate(100, -1);
    a.free(cached);
    std::string m;
    // 2^62 bytes: no address space has room, whatever the overcommit policy.
    EXPECT_EQ(errorOf([&] { a.allocate(size_t{1} << 62, -1); }, &m), mtiaErrorMemoryAllocation);
    EXPECT_NE(m.find("out of host memory"), std::string::npos) << m;
    EXPECT_EQ(a.stats().cachedBlocks, 0u) << "the cache is emptied before giving up";
    EXPECT_EQ(errorOf([&] { a.allocate(SIZE_MAX, -1); }), mtiaErrorInvalidValue);
}

// ---- RLIMIT_MEMLOCK -----------------------------------------------------------------------------

// Lowers the soft RLIMIT_MEMLOCK for the scope (never above the hard limit).
class MemlockLimit {
public:
    explicit MemlockLimit(rlim_t soft) {
        ok_ = getrlimit(RLIMIT_MEMLOCK, &saved_) == 0 &&
              (saved_.rlim_max == RLIM_INFINITY || soft <= saved_.rlim_max);
        if (!ok_) return;
        rlimit lowered = saved_;
        lowered.rlim_cur = soft;
        ok_ = setrlimit(RLIMIT_MEMLOCK, &lowered) == 0;
    }
    ~MemlockLimit() {
        if (ok_) setrlimit(RLIMIT_MEMLOCK, &saved_);
    }
    bool ok() const { return ok_; }

private:
    rlimit saved_{};
    bool ok_ = false;
};

TEST(HostAllocator, LocksWhileTheLimitAllowsAndReportsTheRestUnlocked) {
    MemlockLimit limit(3 * kPage);
    if (!limit.ok()) GTEST_SKIP() << "RLIMIT_MEMLOCK cannot be set to 3 pages here";
    HostAllocator a;
    void* first = a.allocate(2 * kPage, -1);
    void* second = a.allocate(2 * kPage, -1);  // 4 pages would pass the limit
    void* small = a.allocate(1, -1);           // 3 pages do not
    EXPECT_TRUE(a.find(first)->locked);
    EXPECT_FALSE(a.find(second)->locked);
    EXPECT_TRUE(a.find(small)->locked);
    EXPECT_EQ(a.stats().lockedBytes, 3 * kPage);
    std::memset(second, 7, 2 * kPage);  // unlocked memory works all the same
    a.free(first);
    a.free(small);
    a.emptyCache();
    EXPECT_EQ(a.stats().lockedBytes, 0u) << "returned blocks give their share of the limit back";
    void* third = a.allocate(2 * kPage, -1);
    EXPECT_TRUE(a.find(third)->locked);
    a.free(second);
    a.free(third);
}

TEST(HostAllocator, NothingIsLockedUnderAZeroLimit) {
    MemlockLimit limit(0);
    ASSERT_TRUE(limit.ok());
    HostAllocator a;
    void* p = a.allocate(100, -1);
    EXPECT_FALSE(a.find(p)->locked);
    EXPECT_EQ(a.stats().lockedBytes, 0u);
    a.free(p);
}

// ---- NUMA --------------------------------------------------------------------------------------

// Everything written to stderr (fd 2) while fn runs.
std::string stderrOf(const std::function<void()>& fn) {
    std::fflush(stderr);
    FILE* capture = std::tmpfile();
    if (capture == nullptr) return "(tmpfile failed)";
    const int saved = dup(2);
    dup2(fileno(capture), 2);
    fn();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string out;
    std::rewind(capture);
    for (int c; (c = std::fgetc(capture)) != EOF;) out.push_back(static_cast<char>(c));
    std::fclose(capture);
    return out;
}

TEST(HostNuma, OnlyNodesOfThisHostAreUsable) {
    EXPECT_EQ(usableHostNode(-1), -1);
    EXPECT_EQ(usableHostNode(INT_MIN), -1);
    EXPECT_EQ(usableHostNode(INT_MAX), -1);
    if (!hostNumaUsable()) return;  // then every node is unusable, which the lines above covered
    EXPECT_EQ(usableHostNode(numa_max_node() + 1), -1);
    int allowed = 0;
    for (int n = 0; n <= numa_max_node(); ++n) {
        const bool ok = numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(n)) != 0;
        EXPECT_EQ(usableHostNode(n), ok ? n : -1) << "node " << n;
        allowed += ok;
    }
    EXPECT_GE(allowed, 1);
}

TEST(HostNuma, BlocksArePlacedOnTheNodeAskedFor) {
    if (!hostNumaUsable())
        GTEST_SKIP() << "no usable NUMA on this host (placement is skipped silently there)";
    HostAllocator a;
    for (int n = 0; n <= numa_max_node(); ++n) {
        if (usableHostNode(n) != n) continue;
        auto* p = static_cast<char*>(a.allocate(3 * kPage, n));
        const auto info = a.find(p);
        ASSERT_TRUE(info.has_value());
        EXPECT_EQ(info->node, n);
        for (size_t off = 0; off < hostSizeClass(3 * kPage); off += kPage)
            EXPECT_EQ(hostNodeOfPage(p + off), n) << "page at offset " << off;
        a.free(p);
    }
}

TEST(HostNuma, ANodeTheHostLacksFallsBackSilently) {
    HostAllocator a;
    const int missing = hostNumaUsable() ? numa_max_node() + 1 : 1;
    std::vector<void*> blocks;
    const std::string printed = stderrOf([&] {
        for (int node : {missing, 7, 1000, INT_MAX}) blocks.push_back(a.allocate(100, node));
    });
    EXPECT_EQ(printed, "") << "something printed while placing on a missing node";
    for (void* p : blocks) {
        const auto info = a.find(p);
        ASSERT_TRUE(info.has_value());
        EXPECT_EQ(info->node, -1);
        static_cast<char*>(p)[99] = 1;
    }
    // Missing nodes all mean "no placement", so they share one cache.
    a.free(blocks[0]);
    EXPECT_EQ(a.allocate(100, -1), blocks[0]);
    for (void* p : blocks) a.free(p);
}

}  // namespace
}  // namespace mtia::allocator
