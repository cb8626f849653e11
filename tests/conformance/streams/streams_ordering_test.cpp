// Conformance: stream ordering (streams-graphs-anchors.md (c), items 1-11).
#include <algorithm>
#include <climits>
#include <set>

#include "streams_test_util.hpp"

using namespace mtia_test;

namespace {

// Indices appended by host functions, in the order they ran.
struct Recorder {
    std::mutex mu;
    std::vector<int> seen;
    void add(int v) {
        std::lock_guard lock(mu);
        seen.push_back(v);
    }
    std::vector<int> get() {
        std::lock_guard lock(mu);
        return seen;
    }
};

}  // namespace

TEST(Ordering, T01_HostFuncsRunInStreamOrder) {
    auto rec = std::make_shared<Recorder>();
    Stream s;
    ASSERT_OK(s.status());
    for (int i = 0; i < 1000; ++i) ASSERT_OK(launchHost(s, [rec, i] { rec->add(i); }));
    ASSERT_OK(mtiaStreamSynchronize(s));
    const std::vector<int> seen = rec->get();
    ASSERT_EQ(seen.size(), 1000u);
    for (int i = 0; i < 1000; ++i)
        ASSERT_EQ(seen[i], i) << "host function " << i << " ran out of order";
}

TEST(Ordering, T02_IndependentStreamsDoNotWaitForEachOther) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    Latch latch;
    ASSERT_OK(latch.block(a));
    ASSERT_OK(launchNoop(b));
    EXPECT_TRUE(eventually([&] { return mtiaStreamQuery(b) == mtiaSuccess; }))
        << "b waited for the blocked stream a";
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(a));
    latch.open();
    EXPECT_OK(mtiaStreamSynchronize(a));
    EXPECT_OK(mtiaStreamQuery(a));
}

TEST(Ordering, T03_QueryReflectsPendingWork) {
    Stream s;
    ASSERT_OK(s.status());
    EXPECT_OK(mtiaStreamQuery(s));  // fresh stream: nothing pending
    Latch latch;
    ASSERT_OK(latch.block(s));
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(s));
    ASSERT_TRUE(latch.waitEntered());
    std::this_thread::sleep_for(kSettle);
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(s));
    latch.open();
    EXPECT_OK(mtiaStreamSynchronize(s));
    EXPECT_OK(mtiaStreamQuery(s));
}

TEST(Ordering, T04_SynchronizeIgnoresUnrelatedStreams) {
    Stream x, y;
    ASSERT_OK(x.status());
    ASSERT_OK(y.status());
    Latch latch;
    ASSERT_OK(latch.block(y));
    auto ran = std::make_shared<std::atomic<bool>>(false);
    ASSERT_OK(launchNoop(x));
    ASSERT_OK(launchHost(x, [ran] { *ran = true; }));
    bool ranAtReturn = false;
    const bool returned = returnsWithin(
        kHang,
        [&] {
            EXPECT_OK(mtiaStreamSynchronize(x));
            ranAtReturn = *ran;
        },
        [&] { latch.open(); });
    ASSERT_TRUE(returned) << "mtiaStreamSynchronize(x) waited for the blocked, unrelated stream y";
    EXPECT_TRUE(ranAtReturn) << "mtiaStreamSynchronize(x) returned before x's work ran";
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(y));
    latch.open();
    EXPECT_OK(mtiaStreamSynchronize(y));
}

TEST(Ordering, T05_DeviceSynchronizeCoversItsDeviceOnly) {
    if (deviceCount() < 2) GTEST_SKIP() << "needs two devices";
    Stream s0(0), s1(1);
    ASSERT_OK(s0.status());
    ASSERT_OK(s1.status());
    mtiaStream_t default0 = nullptr;
    ASSERT_OK(mtiaGetDefaultStream(0, &default0));
    Latch latch;
    ASSERT_OK(latch.block(s1));  // device 1 stays busy

    auto onStream = std::make_shared<std::atomic<bool>>(false);
    auto onDefault = std::make_shared<std::atomic<bool>>(false);
    ASSERT_OK(launchSleep(s0, 20000));
    ASSERT_OK(launchHost(s0, [onStream] { *onStream = true; }));
    ASSERT_OK(launchSleep(default0, 20000));
    ASSERT_OK(launchHost(default0, [onDefault] { *onDefault = true; }));

    bool streamDone = false, defaultDone = false;
    const bool returned = returnsWithin(
        kHang,
        [&] {
            ASSERT_OK(mtiaSetDevice(0));
            EXPECT_OK(mtiaDeviceSynchronize());
            streamDone = *onStream;
            defaultDone = *onDefault;
        },
        [&] { latch.open(); });
    ASSERT_TRUE(returned) << "mtiaDeviceSynchronize on device 0 waited for device 1";
    EXPECT_TRUE(streamDone)
        << "mtiaDeviceSynchronize returned before a stream of the device finished";
    EXPECT_TRUE(defaultDone) << "mtiaDeviceSynchronize returned before the default stream finished";
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(s1));

    latch.open();
    {
        DeviceScope dev1(1);
        EXPECT_OK(mtiaDeviceSynchronize());
    }
    EXPECT_OK(mtiaStreamQuery(s1));
}

TEST(Ordering, T06_PriorityRangeAndClamping) {
    int least = 12345, greatest = 12345;
    ASSERT_OK(mtiaDeviceGetStreamPriorityRange(&least, &greatest));
    EXPECT_LE(greatest, least);
    EXPECT_LT(greatest, least) << "at least two priority levels are needed for high/low pools";
    EXPECT_EQ(least, 0);
    int only = 12345;
    EXPECT_OK(mtiaDeviceGetStreamPriorityRange(nullptr, &only));  // either pointer may be NULL
    EXPECT_EQ(only, greatest);
    EXPECT_OK(mtiaDeviceGetStreamPriorityRange(&only, nullptr));
    EXPECT_EQ(only, least);

    const std::vector<std::pair<int, int>> cases = {
        {greatest - 1, greatest}, {greatest - 1000, greatest},
        {INT_MIN, greatest},      {least + 1, least},
        {least + 1000, least},    {INT_MAX, least},
        {greatest, greatest},     {least, least},
    };
    for (const auto& [asked, want] : cases) {
        Stream s(0, mtiaStreamDefault, asked);
        ASSERT_OK(s.status()) << "priority " << asked;
        int got = 12345;
        EXPECT_OK(mtiaStreamGetPriority(s, &got));
        EXPECT_EQ(got, want) << "priority " << asked << " should clamp to " << want;
        EXPECT_OK(launchNoop(s));
        EXPECT_OK(mtiaStreamSynchronize(s));
    }
    if (least - greatest >= 2) {
        Stream mid(0, mtiaStreamDefault, greatest + 1);
        ASSERT_OK(mid.status());
        int got = 12345;
        EXPECT_OK(mtiaStreamGetPriority(mid, &got));
        EXPECT_EQ(got, greatest + 1) << "an in-range priority is kept as is";
    }
    mtiaStream_t plain = nullptr;
    ASSERT_OK(mtiaStreamCreate(&plain));
    int got = 12345;
    EXPECT_OK(mtiaStreamGetPriority(plain, &got));
    EXPECT_EQ(got, least) << "mtiaStreamCreate gives the least priority";
    EXPECT_OK(mtiaStreamDestroy(plain));
}

TEST(Ordering, T07_HighAndLowPriorityPools) {
    // What PyTorch does: per device, a pool of high-priority streams (greatest priority) and a pool
    // of low-priority ones (priority 0), all non-blocking, handed out round-robin and rebuilt from
    // ids.
    constexpr int kPool = 4;
    const int devices = std::min(deviceCount(), 2);
    ASSERT_GE(devices, 1);
    std::set<int64_t> ids;
    for (int dev = 0; dev < devices; ++dev) {
        DeviceScope scope(dev);
        int least = 0, greatest = 0;
        ASSERT_OK(mtiaDeviceGetStreamPriorityRange(&least, &greatest));
        std::vector<std::unique_ptr<Stream>> high, low;
        for (int i = 0; i < kPool; ++i) {
            high.push_back(std::make_unique<Stream>(dev, mtiaStreamNonBlocking, greatest));
            low.push_back(std::make_unique<Stream>(dev, mtiaStreamNonBlocking, 0));
            ASSERT_OK(high.back()->status());
            ASSERT_OK(low.back()->status());
        }
        for (int i = 0; i < 2 * kPool; ++i) {
            const bool isHigh = i < kPool;
            mtiaStream_t s = isHigh ? high[i]->get() : low[i - kPool]->get();
            int priority = 12345, d = -1;
            unsigned flags = 12345;
            int64_t id = 0;
            EXPECT_OK(mtiaStreamGetPriority(s, &priority));
            EXPECT_EQ(priority, isHigh ? greatest : 0);
            EXPECT_OK(mtiaStreamGetFlags(s, &flags));
            EXPECT_EQ(flags, mtiaStreamNonBlocking);
            EXPECT_OK(mtiaStreamGetDevice(s, &d));
            EXPECT_EQ(d, dev);
            EXPECT_OK(mtiaStreamGetId(s, &id));
            EXPECT_GT(id, 0);
            EXPECT_TRUE(ids.insert(id).second) << "stream id " << id << " given out twice";
            mtiaStream_t back = nullptr;
            EXPECT_OK(mtiaStreamFromId(id, &back));
            EXPECT_EQ(back, s) << "mtiaStreamFromId does not round-trip";
            EXPECT_OK(launchNoop(s));
        }
        for (auto& s : high) EXPECT_OK(mtiaStreamSynchronize(*s));
        for (auto& s : low) EXPECT_OK(mtiaStreamSynchronize(*s));
    }
}

namespace {
std::atomic<int> g_staleLaunchRuns{0};
void countStaleLaunch(void*) {
    ++g_staleLaunchRuns;
}
}  // namespace

TEST(Ordering, T08_DestroyWithPendingWork) {
    mtiaStream_t s = nullptr;
    ASSERT_OK(mtiaStreamCreate(&s));
    int64_t id = 0;
    ASSERT_OK(mtiaStreamGetId(s, &id));
    Event recorded;
    ASSERT_OK(recorded.status());
    auto ran = std::make_shared<std::atomic<int>>(0);
    Latch latch;
    ASSERT_OK(latch.block(s));
    ASSERT_OK(launchHost(s, [ran] { ++*ran; }));
    ASSERT_OK(mtiaEventRecord(recorded, s));

    const bool returned = returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaStreamDestroy(s)); }, [&] { latch.open(); });
    ASSERT_TRUE(returned) << "mtiaStreamDestroy waited for pending work";
    EXPECT_EQ(*ran, 0);
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(recorded));

    // The handle is invalid at once.
    Event other;
    ASSERT_OK(other.status());
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamQuery(s));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamSynchronize(s));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaLaunchHostFunc(s, countStaleLaunch, nullptr));
    EXPECT_STATUS(mtiaErrorInvalidHandle, launchNoop(s));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventRecord(other, s));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamWaitEvent(s, other, 0));
    mtiaStream_t back = nullptr;
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamFromId(id, &back));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamDestroy(s));

    // The queued work still runs, and the event recorded before destroy completes.
    latch.open();
    EXPECT_OK(mtiaEventSynchronize(recorded));
    EXPECT_EQ(*ran, 1);
    EXPECT_OK(mtiaDeviceSynchronize());
    EXPECT_EQ(*ran, 1);
    EXPECT_EQ(g_staleLaunchRuns, 0) << "a host function launched on a destroyed stream ran";
}

TEST(Ordering, T09_DestroyMisuse) {
    mtiaStream_t s = nullptr;
    ASSERT_OK(mtiaStreamCreate(&s));
    EXPECT_OK(mtiaStreamDestroy(s));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamDestroy(s));  // double destroy
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamDestroy(s));
    // NULL: ABI rule 4 (mtiaXxxDestroy(NULL) succeeds); the current (default) stream is untouched.
    EXPECT_OK(mtiaStreamDestroy(nullptr));
    for (int dev = 0; dev < std::min(deviceCount(), 2); ++dev) {
        mtiaStream_t def = nullptr;
        ASSERT_OK(mtiaGetDefaultStream(dev, &def));
        EXPECT_STATUS(mtiaErrorInvalidValue, mtiaStreamDestroy(def));
        EXPECT_OK(launchNoop(def)) << "the default stream broke after a refused destroy";
        EXPECT_OK(mtiaStreamSynchronize(def));
        mtiaStream_t again = nullptr;
        EXPECT_OK(mtiaGetDefaultStream(dev, &again));
        EXPECT_EQ(again, def);
    }
    EXPECT_OK(launchNoop(nullptr));
    EXPECT_OK(mtiaStreamSynchronize(nullptr));
}

TEST(Ordering, T10_ConcurrentEnqueuersKeepPerThreadOrder) {
    constexpr int kThreads = 8, kOps = 1000;
    auto rec = std::make_shared<Recorder>();
    Stream s;
    ASSERT_OK(s.status());
    std::atomic<int> ready{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            ++ready;
            while (ready < kThreads) std::this_thread::yield();
            for (int i = 0; i < kOps; ++i)
                if (launchHost(s, [rec, v = t * kOps + i] { rec->add(v); }) != mtiaSuccess)
                    ++failures;
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures, 0);
    ASSERT_OK(mtiaStreamSynchronize(s));
    const std::vector<int> seen = rec->get();
    ASSERT_EQ(seen.size(), static_cast<size_t>(kThreads * kOps));
    std::vector<int> next(kThreads, 0);
    for (int v : seen) {
        const int t = v / kOps, i = v % kOps;
        ASSERT_EQ(i, next[t]) << "thread " << t << "'s host functions ran out of order";
        ++next[t];
    }
}

TEST(Ordering, T11_NonBlockingFlagAndNoLegacyDefaultStream) {
    Stream blocking(0, mtiaStreamDefault), nonBlocking(0, mtiaStreamNonBlocking);
    ASSERT_OK(blocking.status());
    ASSERT_OK(nonBlocking.status());
    unsigned flags = 12345;
    EXPECT_OK(mtiaStreamGetFlags(nonBlocking, &flags));
    EXPECT_EQ(flags, mtiaStreamNonBlocking);
    EXPECT_OK(mtiaStreamGetFlags(blocking, &flags));
    EXPECT_EQ(flags, mtiaStreamDefault);
    mtiaStream_t viaFlags = nullptr;
    ASSERT_OK(mtiaStreamCreateWithFlags(&viaFlags, mtiaStreamNonBlocking));
    EXPECT_OK(mtiaStreamGetFlags(viaFlags, &flags));
    EXPECT_EQ(flags, mtiaStreamNonBlocking);
    EXPECT_OK(mtiaStreamDestroy(viaFlags));

    // No legacy default stream: the default stream orders against neither kind of stream.
    mtiaStream_t def = nullptr;
    ASSERT_OK(mtiaGetDefaultStream(0, &def));
    ASSERT_OK(mtiaStreamSynchronize(def));
    {
        Latch latch;
        ASSERT_OK(latch.block(blocking));
        ASSERT_OK(launchNoop(def));
        EXPECT_TRUE(eventually([&] { return mtiaStreamQuery(def) == mtiaSuccess; }))
            << "default-stream work waited for a blocking stream";
        EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(blocking));
        latch.open();
        EXPECT_OK(mtiaStreamSynchronize(blocking));
    }
    {
        Latch latch;
        ASSERT_OK(latch.block(def));
        ASSERT_OK(launchNoop(blocking));
        ASSERT_OK(launchNoop(nonBlocking));
        EXPECT_TRUE(eventually([&] { return mtiaStreamQuery(blocking) == mtiaSuccess; }))
            << "a blocking stream waited for the default stream";
        EXPECT_TRUE(eventually([&] { return mtiaStreamQuery(nonBlocking) == mtiaSuccess; }));
        EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(def));
        latch.open();
        EXPECT_OK(mtiaStreamSynchronize(def));
    }
}
