// Conformance: bounded launch queues. A thread that launches to a stream whose queue holds the
// device's depth of pending work (the simulator: MTIA_SIM_QUEUE_DEPTH, default 1024) blocks until
// there is room, as CUDA's launches do: kernels, host functions and graph replays alike. Each test
// holds the stream with a latch, launches from another thread, sees the launcher stop at the depth
// (the latch's host function is one of the pending entries), then opens the latch and sees all the
// work run. Resident memory stays bounded because the launcher stops.
#include "streams_test_util.hpp"

#include <cstdlib>
#include <string>

using namespace mtia_test;

namespace {

constexpr uint64_t kLaunches = 100'000;

uint64_t queueDepth() {
    const char* env = std::getenv("MTIA_SIM_QUEUE_DEPTH");
    return env != nullptr ? std::strtoull(env, nullptr, 10) : 1024;
}

// Runs launch() n times on a thread of its own (stopping at the first error), with the stream held
// by a latch: the launcher stops at the depth and stays there; after the latch opens every launch
// went in.
void expectBlocksAtDepth(const Stream& s, const std::function<mtiaError_t()>& launch, uint64_t n) {
    const uint64_t depth = queueDepth();
    Latch latch;
    ASSERT_OK(latch.block(s));
    std::atomic<uint64_t> launched{0};
    std::atomic<int> error{mtiaSuccess};
    std::thread launcher([&] {
        for (uint64_t i = 0; i < n; ++i) {
            if (const mtiaError_t st = launch(); st != mtiaSuccess) {
                error = st;
                return;
            }
            launched.fetch_add(1);
        }
    });
    const bool reached = eventually([&] { return launched.load() >= depth - 1; });
    std::this_thread::sleep_for(
        kSettle);  // a launcher that does not block runs far past the depth meanwhile
    const uint64_t held = launched.load();
    latch.open();
    launcher.join();
    EXPECT_TRUE(reached) << "launched " << launched.load() << " of " << depth - 1;
    EXPECT_EQ(held, depth - 1) << "launches queued behind a held stream (depth " << depth << ")";
    EXPECT_EQ(error.load(), mtiaSuccess)
        << mtiaGetErrorName(static_cast<mtiaError_t>(error.load()));
    EXPECT_EQ(launched.load(), n);
    EXPECT_OK(mtiaStreamSynchronize(s));
}

}  // namespace

TEST(QueueDepth, KernelLaunchesBlockAtTheDepth) {
    Stream s;
    ASSERT_OK(s.status());
    expectBlocksAtDepth(
        s, [&] { return launchNoop(s); }, kLaunches);
}

TEST(QueueDepth, HostFunctionsBlockAtTheDepth) {
    Stream s;
    ASSERT_OK(s.status());
    static std::atomic<uint64_t> ran{0};
    ran = 0;
    auto count = [](void*) { ran.fetch_add(1, std::memory_order_relaxed); };
    const uint64_t n = 4 * queueDepth();
    expectBlocksAtDepth(
        s, [&] { return mtiaLaunchHostFunc(s, count, nullptr); }, n);
    EXPECT_EQ(ran.load(), n);
}

TEST(QueueDepth, AsyncMemsetsBlockAtTheDepth) {
    Stream s;
    ASSERT_OK(s.status());
    void* p = nullptr;
    ASSERT_OK(mtiaMalloc(&p, 256));
    expectBlocksAtDepth(
        s, [&] { return mtiaMemsetAsync(p, 7, 256, s); }, 4 * queueDepth());
    EXPECT_OK(mtiaFree(p));
}

// A replay of a graph whose nodes form one chain is one entry of the queue (its commands go as one
// command list); a graph whose nodes run on several lanes submits an entry per step and per lane.
TEST(QueueDepth, GraphReplaysBlockAtTheDepth) {
    Stream s;
    ASSERT_OK(s.status());
    mtiaGraph_t g = nullptr;
    ASSERT_OK(mtiaGraphCreate(&g, 0));
    ASSERT_OK(mtiaGraphCaptureBegin(g, s, mtiaMemPoolId_t{0, 0}, mtiaStreamCaptureModeGlobal));
    for (int i = 0; i < 3; ++i) EXPECT_OK(launchNoop(s));
    ASSERT_OK(mtiaGraphCaptureEnd(g));
    expectBlocksAtDepth(
        s, [&] { return mtiaGraphReplay(g, s); }, 4 * queueDepth());
    EXPECT_OK(mtiaGraphDestroy(g));
}

// During capture nothing is queued, so nothing blocks: a full stream captures as much as it likes.
TEST(QueueDepth, CaptureOfAFullStreamNeverBlocks) {
    Stream s;
    ASSERT_OK(s.status());
    Latch latch;
    ASSERT_OK(latch.block(s));
    const uint64_t depth = queueDepth();
    for (uint64_t i = 0; i + 1 < depth; ++i)
        ASSERT_OK(launchNoop(s));  // full now: latch + depth - 1
    mtiaGraph_t g = nullptr;
    ASSERT_OK(mtiaGraphCreate(&g, 0));
    std::atomic<bool> done{false};
    std::atomic<int> error{mtiaSuccess};
    std::thread capturer([&] {
        mtiaError_t st =
            mtiaGraphCaptureBegin(g, s, mtiaMemPoolId_t{0, 0}, mtiaStreamCaptureModeThreadLocal);
        for (uint64_t i = 0; i < 2 * depth && st == mtiaSuccess; ++i) st = launchNoop(s);
        if (st == mtiaSuccess) st = mtiaGraphCaptureEnd(g);
        error = st;
        done = true;
    });
    const bool finished = eventually([&] { return done.load(); });
    latch.open();  // releases a capture that blocked, so the join cannot hang
    capturer.join();
    EXPECT_TRUE(finished) << "capturing on a full stream blocked";
    EXPECT_EQ(error.load(), mtiaSuccess)
        << mtiaGetErrorName(static_cast<mtiaError_t>(error.load()));
    EXPECT_OK(mtiaStreamSynchronize(s));
    EXPECT_OK(mtiaGraphDestroy(g));
}
