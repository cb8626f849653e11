// Bounded queues (MTIA_SIM_QUEUE_DEPTH): a host thread that submits to a queue holding the depth's
// worth of commands that have not completed waits for room, whatever it submits (kernels, host
// functions, command lists); engine threads never wait; a sticky fault, a destroyed queue handle or
// a wait on another full queue never leaves a submitter hanging. The queue's own counts show the
// bound: the commands submitted never exceed the depth while its head is held.
#include "config.hpp"
#include "sim_test_util.hpp"

#include "common/eventually.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

using namespace simtest;

namespace {

constexpr uint64_t kDepth = mtia::sim::kDefaultQueueDepth;
constexpr uint64_t kLaunches = 100'000;

// Polls (bounded) until pred() holds.
using ::mtia_test::eventually;

// A host function that holds its queue's engine until release().
struct Gate {
    std::atomic<bool> open{false};
    std::function<void()> fn = [this] { open.wait(false); };
    void release() {
        open = true;
        open.notify_all();
    }
    ~Gate() { release(); }
};

class SimQueueDepth : public SimTest {
protected:
    void SetUp() override {
        if (std::getenv("MTIA_SIM_QUEUE_DEPTH") != nullptr)
            GTEST_SKIP() << "expects the default queue depth";
        SimTest::SetUp();
    }
    void counts(mtiaDrvQueue q, uint64_t& submitted, uint64_t& completed) {
        ASSERT_EQ(d.queueGetCounts(q, &submitted, &completed), mtiaSuccess) << lastError();
    }
    // Submits (on a thread of its own) until n commands went in or one failed; launched counts
    // them.
    std::thread feeder(std::function<mtiaError_t()> one, uint64_t n,
                       std::atomic<uint64_t>& launched, std::atomic<int>& firstError) {
        return std::thread([one = std::move(one), n, &launched, &firstError] {
            for (uint64_t i = 0; i < n; ++i) {
                const mtiaError_t err = one();
                if (err != mtiaSuccess) {
                    firstError = err;
                    return;
                }
                launched.fetch_add(1);
            }
        });
    }
    // The feeder filled q (held by a gate) up to the depth and stays there.
    void expectHeldAtDepth(mtiaDrvQueue q, const std::atomic<uint64_t>& launched,
                           uint64_t already = 1) {
        ASSERT_TRUE(eventually([&] { return launched.load() >= kDepth - already; }))
            << launched.load();
        // A submitter that does not block overruns the depth long before this.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        uint64_t submitted = 0, completed = 0;
        counts(q, submitted, completed);
        EXPECT_EQ(submitted, kDepth);
        EXPECT_EQ(completed, 0u);
        EXPECT_EQ(launched.load(), kDepth - already);
    }
    mtiaError_t noop(mtiaDrvQueue q) {
        uint64_t seq = 0;
        return launchStatus(q, builtin("noop"), {1, 1, 1}, &seq);
    }
};

}  // namespace

TEST_F(SimQueueDepth, KernelLaunchesBlockAtTheDepth) {
    mtiaDrvQueue q = makeQueue(0);
    Gate gate;
    submitHost(q, &gate.fn);
    std::atomic<uint64_t> launched{0};
    std::atomic<int> error{mtiaSuccess};
    std::thread t = feeder([&] { return noop(q); }, kLaunches, launched, error);
    expectHeldAtDepth(q, launched);
    gate.release();
    t.join();
    EXPECT_EQ(error.load(), mtiaSuccess) << lastError();
    EXPECT_EQ(launched.load(), kLaunches);
    EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
    uint64_t submitted = 0, completed = 0;
    counts(q, submitted, completed);
    EXPECT_GE(submitted, kLaunches + 1);  // the gate, the launches (and whatever finish() queued)
    EXPECT_EQ(completed, submitted);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueueDepth, HostFunctionsBlockAtTheDepth) {
    mtiaDrvQueue q = makeQueue(0);
    Gate gate;
    submitHost(q, &gate.fn);
    std::atomic<uint64_t> ran{0};
    std::function<void()> count = [&] { ran.fetch_add(1, std::memory_order_relaxed); };
    std::atomic<uint64_t> launched{0};
    std::atomic<int> error{mtiaSuccess};
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdHostFunc;
    c.u.hostFunc.fn = [](void* p) { (*static_cast<std::function<void()>*>(p))(); };
    c.u.hostFunc.userData = &count;
    std::thread t = feeder(
        [&] {
            uint64_t seq = 0;
            return d.queueSubmit(q, &c, &seq);
        },
        4 * kDepth, launched, error);
    expectHeldAtDepth(q, launched);
    gate.release();
    t.join();
    EXPECT_EQ(error.load(), mtiaSuccess) << lastError();
    EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(ran.load(), 4 * kDepth);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

// A command list is one entry however many commands it holds (a graph replay step). A submitter
// that waits gives up the driver's handle lock: creating and destroying queues meanwhile works.
TEST_F(SimQueueDepth, CommandListsBlockAtTheDepthWithoutHoldingHandles) {
    mtiaDrvQueue q = makeQueue(0);
    std::vector<mtiaDrvCommand> cmds(3);
    for (mtiaDrvCommand& c : cmds) {
        void* none[1] = {nullptr};
        c = kernelCommand(builtin("noop"), {1, 1, 1}, none);
    }
    mtiaDrvCommandList list = nullptr;
    ASSERT_EQ(d.commandListCreate(0, cmds.data(), cmds.size(), &list), mtiaSuccess) << lastError();
    Gate gate;
    submitHost(q, &gate.fn);
    std::atomic<uint64_t> launched{0};
    std::atomic<int> error{mtiaSuccess};
    mtiaDrvCommand run{};
    run.type = mtiaDrvCmdList;
    run.u.list.list = list;
    std::thread t = feeder(
        [&] {
            uint64_t seq = 0;
            return d.queueSubmit(q, &run, &seq);
        },
        3 * kDepth, launched, error);
    expectHeldAtDepth(q, launched);
    mtiaDrvQueue other = nullptr;
    EXPECT_EQ(d.queueCreate(0, 0, 0, &other), mtiaSuccess) << lastError();
    EXPECT_EQ(d.queueDestroy(other), mtiaSuccess) << lastError();
    gate.release();
    t.join();
    EXPECT_EQ(error.load(), mtiaSuccess) << lastError();
    EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(d.commandListDestroy(list), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

// A host function (an engine thread) that fills its own queue would wait for itself: it never
// waits.
TEST_F(SimQueueDepth, EngineThreadsNeverBlock) {
    mtiaDrvQueue q = makeQueue(0);
    std::atomic<uint64_t> accepted{0};
    std::function<void()> flood = [&] {
        for (uint64_t i = 0; i < 3 * kDepth; ++i)
            if (noop(q) == mtiaSuccess) accepted.fetch_add(1);
    };
    const uint64_t seq = submitHost(q, &flood);
    EXPECT_EQ(d.queueWait(q, seq, MTIA_DRV_WAIT_SLEEP), mtiaSuccess) << lastError();
    EXPECT_EQ(accepted.load(), 3 * kDepth);
    EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

// Queue a waits on the last command of queue b; both are full and their submitters blocked. Opening
// b's gate lets everything finish.
TEST_F(SimQueueDepth, WaitOnAnotherFullQueue) {
    mtiaDrvQueue a = makeQueue(0);
    mtiaDrvQueue b = makeQueue(0);
    Gate gate;
    submitHost(b, &gate.fn);
    std::atomic<uint64_t> launchedB{0}, launchedA{0};
    std::atomic<int> errorB{mtiaSuccess}, errorA{mtiaSuccess};
    std::thread tb = feeder([&] { return noop(b); }, 2 * kDepth, launchedB, errorB);
    expectHeldAtDepth(b, launchedB);
    submitWait(a, b, kDepth);
    std::thread ta = feeder([&] { return noop(a); }, 2 * kDepth, launchedA, errorA);
    expectHeldAtDepth(a, launchedA);
    gate.release();
    tb.join();
    ta.join();
    EXPECT_EQ(errorA.load(), mtiaSuccess);
    EXPECT_EQ(errorB.load(), mtiaSuccess);
    EXPECT_EQ(finish(a), mtiaSuccess) << lastError();
    EXPECT_EQ(finish(b), mtiaSuccess) << lastError();
    EXPECT_EQ(d.queueDestroy(a), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(b), mtiaSuccess);
}

// The handle goes while its submitter waits: the waiting submit still completes (it started while
// the handle was live), later ones are refused, and what was queued runs.
TEST_F(SimQueueDepth, DestroyedWhileASubmitterWaits) {
    mtiaDrvQueue q = makeQueue(0);
    Gate gate;
    submitHost(q, &gate.fn);
    std::atomic<uint64_t> launched{0};
    std::atomic<int> error{mtiaSuccess};
    std::thread t = feeder([&] { return noop(q); }, kLaunches, launched, error);
    expectHeldAtDepth(q, launched);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess) << lastError();
    gate.release();
    t.join();
    EXPECT_EQ(error.load(), mtiaErrorInvalidHandle);
    EXPECT_GE(launched.load(), kDepth);
    EXPECT_EQ(d.deviceSynchronize(0), mtiaSuccess) << lastError();
}

namespace {

class SimQueueDepthIsolated : public SimQueueDepth {
protected:
    void SetUp() override {
        if (!isolatedChild())
            GTEST_SKIP() << "runs in a child process of the matching SimQueueDepth test";
        SimQueueDepth::SetUp();
    }
};

}  // namespace

// A fault on the device ends the wait of a blocked submitter with the fault, although the queue it
// waits on is still held by a host function.
TEST_F(SimQueueDepth, FaultReleasesBlockedSubmitter) {
    EXPECT_TRUE(runIsolated("SimQueueDepthIsolated.FaultReleasesBlockedSubmitter"));
}
TEST_F(SimQueueDepthIsolated, FaultReleasesBlockedSubmitter) {
    mtiaDrvQueue q = makeQueue(0);
    mtiaDrvQueue other = makeQueue(0);
    Gate gate;
    submitHost(q, &gate.fn);
    std::atomic<uint64_t> launched{0};
    std::atomic<int> error{mtiaSuccess};
    std::thread t = feeder([&] { return noop(q); }, kLaunches, launched, error);
    expectHeldAtDepth(q, launched);
    std::vector<float> host(16, 0.0f);
    // A host pointer: a fault. (Not finish(): after a fault it synchronizes the device, which waits
    // for q.)
    const uint64_t fill = launch(other, "fill_f32", {1, 1, 1}, host.data(), 1.0f, uint64_t{16});
    EXPECT_EQ(d.queueWait(other, fill, MTIA_DRV_WAIT_SLEEP), mtiaErrorLaunchFailure);
    t.join();  // returns although the gate is still closed
    EXPECT_EQ(error.load(), mtiaErrorLaunchFailure);
    EXPECT_EQ(launched.load(), kDepth - 1);
    gate.release();
    EXPECT_EQ(d.deviceSynchronize(0), mtiaErrorLaunchFailure);
}
