// Conformance: concurrency (streams-graphs-anchors.md (c), items 91, 94, 95).
#include "../../stress/stream_stress.hpp"
#include "streams_test_util.hpp"

using namespace mtia_test;

TEST(Concurrency, T91_RandomOperationsFromSixteenThreads) {
    // The short form of the stress test (tests/stress runs 3000 operations per thread).
    mtia_stress::Options options;
    options.threads = 16;
    options.opsPerThread = 300;
    const mtia_stress::Report report = mtia_stress::runStreamStress(options);
    for (const std::string& f : report.failures) ADD_FAILURE() << f;
    for (int op = 0; op < mtia_stress::kOpCount; ++op)
        EXPECT_GT(report.perOp[op], 0u) << mtia_stress::opName(op) << " never ran";
    EXPECT_GT(report.hostFuncsLaunched, 0u);
    mtiaSetDevice(0);
    EXPECT_OK(mtiaDeviceSynchronize());
}

TEST(Concurrency, T94_SynchronizeWhileAnotherThreadReRecords) {
    Stream first, second;
    ASSERT_OK(first.status());
    ASSERT_OK(second.status());
    Event e(
        mtiaEventBlockingSync);  // A sleeps in the kernel while it waits, which the test can see
    ASSERT_OK(e.status());
    Latch latch1, latch2;
    ASSERT_OK(latch1.block(first));
    ASSERT_TRUE(latch1.waitEntered());
    ASSERT_OK(mtiaEventRecord(e, first));  // the record thread A will see

    std::atomic<bool> calling{false}, released{false};
    std::atomic<pid_t> aTid{0};
    Async a(
        [&] {
            aTid = gettid();
            calling = true;
            EXPECT_OK(mtiaEventSynchronize(e));
            EXPECT_TRUE(released)
                << "mtiaEventSynchronize returned before the record it saw completed";
        },
        [&] {
            latch1.open();
            latch2.open();
        });
    ASSERT_TRUE(eventually([&] { return calling.load(); }));
    // A must have taken its snapshot before B re-records. It takes it first thing, before it waits,
    // so once A sleeps in the kernel the snapshot is taken.
    ASSERT_TRUE(waitUntilAsleep(aTid.load()))
        << "thread A never went to sleep in mtiaEventSynchronize";
    EXPECT_FALSE(a.done());

    // Thread B re-records e behind a second blocked op while A waits.
    std::thread b([&] {
        EXPECT_OK(latch2.block(second));
        EXPECT_OK(mtiaEventRecord(e, second));
    });
    b.join();
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e));

    released = true;
    latch1.open();
    EXPECT_TRUE(a.waitFor(kHang)) << "mtiaEventSynchronize hung after the record it saw completed "
                                     "(it followed the re-record instead)";
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e))
        << "the re-record on the blocked stream completed early";
    latch2.open();
    EXPECT_OK(mtiaEventSynchronize(e));
    EXPECT_OK(mtiaStreamSynchronize(second));
}

namespace {

std::atomic<int> g_drained{0};
constexpr int kTeardownStreams = 6;

void markDrained(void*) {
    if (g_drained.fetch_add(1) + 1 == kTeardownStreams) {
        static const char kMessage[] = "teardown: all 6 streams drained\n";
        [[maybe_unused]] ssize_t n = write(2, kMessage, sizeof kMessage - 1);
    }
}

// Runs in the death-test child: leaves work in flight on several streams of both devices (half of
// the streams already destroyed) and exits without synchronizing.
[[noreturn]] void exitWithWorkInFlight() {
    alarm(60);  // a hang at exit kills the child, which the test reports
    const int devices = std::min(deviceCount(), 2);
    std::vector<mtiaStream_t> streams;
    for (int i = 0; i < kTeardownStreams; ++i) {
        mtiaSetDevice(i % devices);
        mtiaStream_t s = nullptr;
        if (mtiaStreamCreate(&s) != mtiaSuccess) std::_Exit(3);
        launchSleep(s, 30000);
        launchHost(s, [] { std::this_thread::sleep_for(10ms); });
        launchSleep(s, 20000);
        if (mtiaLaunchHostFunc(s, markDrained, nullptr) != mtiaSuccess) std::_Exit(4);
        streams.push_back(s);
    }
    for (size_t i = 0; i < streams.size(); i += 2) mtiaStreamDestroy(streams[i]);
    std::exit(0);
}

}  // namespace

TEST(Concurrency, T95_TeardownDrainsInFlightWork) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(exitWithWorkInFlight(), ::testing::ExitedWithCode(0), "all 6 streams drained");
}
