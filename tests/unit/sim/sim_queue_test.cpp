// Queues and engines: order, concurrency, priorities, waits, destruction,
// timestamps, host functions, idle behaviour and submit validation.
#include "sim_test_util.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace simtest;

namespace {

class SimQueue : public SimTest {};

uint64_t nowNs() {
    uint64_t ns = 0;
    table().clockNow(&ns);
    return ns;
}

double cpuSeconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

TEST_F(SimQueue, ThousandCommandsRunInOrder) {
    mtiaDrvQueue q = makeQueue(0);
    std::vector<int> seen;
    std::vector<std::function<void()>> fns;
    fns.reserve(1000);
    for (int i = 0; i < 1000; ++i) fns.emplace_back([&seen, i] { seen.push_back(i); });
    for (int i = 0; i < 1000; ++i)
        EXPECT_EQ(submitHost(q, &fns[static_cast<size_t>(i)]), static_cast<uint64_t>(i + 1));
    EXPECT_EQ(d.queueWait(q, 1000, MTIA_DRV_WAIT_SLEEP), mtiaSuccess);
    uint64_t completed = 0;
    EXPECT_EQ(d.queueQuery(q, &completed), mtiaSuccess);
    EXPECT_EQ(completed, 1000u);
    ASSERT_EQ(seen.size(), 1000u);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, CountsAreReadTogether) {
    mtiaDrvQueue q = makeQueue(0);
    uint64_t submitted = 99, completed = 99;
    ASSERT_NE(d.queueGetCounts, nullptr);
    EXPECT_EQ(d.queueGetCounts(q, &submitted, &completed), mtiaSuccess);
    EXPECT_EQ(submitted, 0u);
    EXPECT_EQ(completed, 0u);
    const uint64_t s1 = submitSleep(q, 30'000);
    EXPECT_EQ(d.queueGetCounts(q, &submitted, &completed), mtiaSuccess);
    EXPECT_EQ(submitted, s1);
    EXPECT_EQ(completed, 0u);  // still sleeping
    ASSERT_EQ(d.queueWait(q, s1, MTIA_DRV_WAIT_SLEEP), mtiaSuccess);
    EXPECT_EQ(d.queueGetCounts(q, &submitted, &completed), mtiaSuccess);
    EXPECT_EQ(submitted, s1);
    EXPECT_EQ(completed, s1);
    EXPECT_EQ(d.queueGetCounts(q, nullptr, &completed), mtiaErrorInvalidValue);
    EXPECT_EQ(d.queueGetCounts(q, &submitted, nullptr), mtiaErrorInvalidValue);
    EXPECT_NE(std::string(d.lastErrorMessage()).find("queueGetCounts"), std::string::npos);
    EXPECT_EQ(d.queueGetCounts(nullptr, &submitted, &completed), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    EXPECT_EQ(d.queueGetCounts(q, &submitted, &completed), mtiaErrorInvalidHandle);
}

TEST_F(SimQueue, KernelsOnOneQueueSeeEachOthersResults) {
    // 1000 dependent device commands: each adds 1 to the running value, so any reordering shows.
    mtiaDrvQueue q = makeQueue(0);
    DeviceBuffer buf(0, kGran);
    DeviceBuffer ones(0, kGran);
    launch(q, "fill_f32", {1, 1, 1}, buf.f32(), 0.0f, uint64_t{1024});
    launch(q, "fill_f32", {1, 1, 1}, ones.f32(), 1.0f, uint64_t{1024});
    for (int i = 0; i < 1000; ++i)
        launch(q, "add_f32", {4, 1, 1}, buf.f32(), static_cast<const float*>(buf.f32()),
               static_cast<const float*>(ones.f32()), uint64_t{1024});
    ASSERT_EQ(finish(q), mtiaSuccess);
    for (int i = 0; i < 1024; ++i) ASSERT_EQ(buf.f32()[i], 1000.0f) << i;
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, QueryAndWait) {
    mtiaDrvQueue q = makeQueue(0);
    uint64_t completed = 99;
    EXPECT_EQ(d.queueQuery(q, &completed), mtiaSuccess);
    EXPECT_EQ(completed, 0u);
    EXPECT_EQ(d.queueWait(q, 0, MTIA_DRV_WAIT_SPIN), mtiaSuccess);  // nothing to wait for
    const uint64_t s1 = submitSleep(q, 30'000);
    EXPECT_EQ(d.queueQuery(q, &completed), mtiaSuccess);
    EXPECT_EQ(completed, 0u);  // still sleeping
    EXPECT_EQ(d.queueWait(q, s1, MTIA_DRV_WAIT_SPIN), mtiaSuccess);
    EXPECT_EQ(d.queueQuery(q, &completed), mtiaSuccess);
    EXPECT_EQ(completed, s1);
    const uint64_t s2 = submitSleep(q, 10'000);
    EXPECT_EQ(d.queueWait(q, s2, MTIA_DRV_WAIT_SLEEP), mtiaSuccess);
    EXPECT_EQ(d.queueWait(q, s2 + 1, MTIA_DRV_WAIT_SLEEP),
              mtiaErrorInvalidValue);  // never submitted
    EXPECT_EQ(d.queueWait(q, s2, 7), mtiaErrorInvalidValue);
    EXPECT_EQ(d.queueQuery(q, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.queueQuery(nullptr, &completed), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.queueWait(nullptr, 1, 0), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    EXPECT_EQ(d.queueQuery(q, &completed), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.queueDestroy(q), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.queueDestroy(nullptr), mtiaErrorInvalidHandle);
}

TEST_F(SimQueue, QueuesRunConcurrentlyUpToTheEngines) {
    const int32_t engines = info(0).engines;
    std::vector<mtiaDrvQueue> queues;
    std::vector<uint64_t> start(static_cast<size_t>(engines)), end(static_cast<size_t>(engines));
    for (int32_t i = 0; i < engines; ++i) queues.push_back(makeQueue(0));
    for (int32_t i = 0; i < engines; ++i) {
        submitTimestamp(queues[static_cast<size_t>(i)], &start[static_cast<size_t>(i)]);
        submitSleep(queues[static_cast<size_t>(i)], 100'000);
        submitTimestamp(queues[static_cast<size_t>(i)], &end[static_cast<size_t>(i)]);
    }
    ASSERT_EQ(d.deviceSynchronize(0), mtiaSuccess);
    // Every sleep overlapped every other: the latest start precedes the earliest end.
    EXPECT_LT(*std::max_element(start.begin(), start.end()),
              *std::min_element(end.begin(), end.end()));
    for (mtiaDrvQueue q : queues) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, MoreQueuesThanEnginesShareThem) {
    const int32_t engines = info(0).engines;
    const int32_t count = engines + 1;
    std::vector<mtiaDrvQueue> queues;
    std::vector<uint64_t> start(static_cast<size_t>(count)), end(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) queues.push_back(makeQueue(0));
    for (int32_t i = 0; i < count; ++i) {
        submitTimestamp(queues[static_cast<size_t>(i)], &start[static_cast<size_t>(i)]);
        submitSleep(queues[static_cast<size_t>(i)], 50'000);
        submitTimestamp(queues[static_cast<size_t>(i)], &end[static_cast<size_t>(i)]);
    }
    ASSERT_EQ(d.deviceSynchronize(0), mtiaSuccess);
    // At no instant do more than `engines` sleeps overlap.
    for (int32_t i = 0; i < count; ++i) {
        int overlapping = 0;
        for (int32_t j = 0; j < count; ++j) {
            if (start[static_cast<size_t>(j)] <= start[static_cast<size_t>(i)] &&
                start[static_cast<size_t>(i)] < end[static_cast<size_t>(j)])
                overlapping++;
        }
        EXPECT_LE(overlapping, engines);
    }
    for (mtiaDrvQueue q : queues) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, UrgentQueuesRunFirstWhenEnginesAreBusy) {
    const int32_t engines = info(0).engines;
    std::vector<mtiaDrvQueue> blockers;
    // Staggered blockers: exactly one engine frees up at a time.
    for (int32_t i = 0; i < engines; ++i) {
        blockers.push_back(makeQueue(0));
        submitSleep(blockers.back(), 100'000 + 40'000 * static_cast<uint64_t>(i));
    }
    usleep(20'000);
    mtiaDrvQueue low = makeQueue(0, 0);
    mtiaDrvQueue high = makeQueue(0, -5);
    uint64_t tLow = 0, tHigh = 0;
    submitTimestamp(low, &tLow);
    submitTimestamp(high, &tHigh);
    ASSERT_EQ(d.deviceSynchronize(0), mtiaSuccess);
    EXPECT_LT(tHigh, tLow);
    for (mtiaDrvQueue q : blockers) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(low), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(high), mtiaSuccess);
}

TEST_F(SimQueue, UrgentWorkPreemptsBetweenCommands) {
    // All engines but one sleep; the last runs a long low-priority queue of short commands. Urgent
    // work arriving meanwhile runs after the current command, not after the whole queue.
    const int32_t engines = info(0).engines;
    std::vector<mtiaDrvQueue> blockers;
    for (int32_t i = 0; i + 1 < engines; ++i) {
        blockers.push_back(makeQueue(0));
        submitSleep(blockers.back(), 400'000);
    }
    mtiaDrvQueue low = makeQueue(0, 0);
    for (int i = 0; i < 40; ++i) submitSleep(low, 5'000);
    uint64_t lowDone = 0;
    submitTimestamp(low, &lowDone);
    usleep(30'000);
    mtiaDrvQueue high = makeQueue(0, -3);
    uint64_t highDone = 0;
    const uint64_t submitted = nowNs();
    submitTimestamp(high, &highDone);
    ASSERT_EQ(finish(high), mtiaSuccess);
    ASSERT_EQ(finish(low), mtiaSuccess);
    EXPECT_LT(highDone, lowDone);
    EXPECT_LT(highDone - submitted, 100'000'000u);  // one 5 ms command, with a generous margin
    ASSERT_EQ(d.deviceSynchronize(0), mtiaSuccess);
    for (mtiaDrvQueue q : blockers) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(low), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(high), mtiaSuccess);
}

TEST_F(SimQueue, PreemptedQueuesKeepTheirOrder) {
    // One free engine runs a long low-priority queue while urgent work keeps arriving: the low
    // queue is interrupted many times (its taken-but-not-run commands go back) and still runs
    // strictly in order.
    const int32_t engines = info(0).engines;
    std::vector<mtiaDrvQueue> blockers;
    for (int32_t i = 0; i + 1 < engines; ++i) {
        blockers.push_back(makeQueue(0));
        submitSleep(blockers.back(), 300'000);
    }
    mtiaDrvQueue low = makeQueue(0, 0);
    mtiaDrvQueue high = makeQueue(0, -5);
    std::vector<int> order;
    std::vector<std::function<void()>> record;
    for (int i = 0; i < 60; ++i) record.emplace_back([&order, i] { order.push_back(i); });
    for (int i = 0; i < 60; ++i) {
        submitSleep(low, 2'000);
        submitHost(low, &record[static_cast<size_t>(i)]);
    }
    std::vector<uint64_t> stamps(20), submittedAt(20);
    for (size_t i = 0; i < stamps.size(); ++i) {
        usleep(3'000);
        submittedAt[i] = nowNs();
        submitTimestamp(high, &stamps[i]);
    }
    ASSERT_EQ(finish(low), mtiaSuccess);
    ASSERT_EQ(finish(high), mtiaSuccess);
    // Each urgent command ran after at most the low queue's current command (2 ms), not after its
    // rest.
    uint64_t worst = 0;
    for (size_t i = 0; i < stamps.size(); ++i) worst = std::max(worst, stamps[i] - submittedAt[i]);
    EXPECT_LT(worst, 60'000'000u);
    ASSERT_EQ(order.size(), 60u);
    for (int i = 0; i < 60; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
    ASSERT_EQ(d.deviceSynchronize(0), mtiaSuccess);
    for (mtiaDrvQueue q : blockers) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(low), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(high), mtiaSuccess);
}

TEST_F(SimQueue, CrossQueueWait) {
    mtiaDrvQueue producer = makeQueue(0);
    mtiaDrvQueue consumer = makeQueue(0);
    std::atomic<bool> produced{false};
    bool sawProduced = false;
    std::function<void()> produce = [&] { produced = true; };
    std::function<void()> consume = [&] { sawProduced = produced.load(); };
    submitSleep(producer, 50'000);
    const uint64_t done = submitHost(producer, &produce);
    submitWait(consumer, producer, done);
    submitHost(consumer, &consume);
    ASSERT_EQ(finish(consumer), mtiaSuccess);
    EXPECT_TRUE(sawProduced);
    EXPECT_EQ(d.queueDestroy(producer), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(consumer), mtiaSuccess);
}

TEST_F(SimQueue, CrossDeviceWait) {
    if (deviceCount() < 2) GTEST_SKIP() << "needs two devices";
    mtiaDrvQueue producer = makeQueue(1);
    mtiaDrvQueue consumer = makeQueue(0);
    uint64_t produced = 0, consumed = 0;
    submitSleep(producer, 50'000);
    const uint64_t done = submitTimestamp(producer, &produced);
    submitWait(consumer, producer, done);
    submitTimestamp(consumer, &consumed);
    ASSERT_EQ(finish(consumer), mtiaSuccess);
    EXPECT_NE(produced, 0u);
    EXPECT_LE(produced, consumed);
    EXPECT_EQ(d.queueDestroy(producer), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(consumer), mtiaSuccess);
}

TEST_F(SimQueue, WaitingQueuesDoNotOccupyEngines) {
    // More queues than engines all wait on one sleeping queue; an independent queue still runs at
    // once.
    const int32_t engines = info(0).engines;
    mtiaDrvQueue sleeper = makeQueue(0);
    uint64_t sleeperStart = 0, sleeperDone = 0;
    submitTimestamp(sleeper, &sleeperStart);
    const uint64_t slept = submitSleep(sleeper, 150'000);
    submitTimestamp(sleeper, &sleeperDone);
    std::vector<mtiaDrvQueue> waiters;
    std::vector<uint64_t> waited(static_cast<size_t>(engines) + 1);
    for (int32_t i = 0; i <= engines; ++i) {
        waiters.push_back(makeQueue(0));
        submitWait(waiters.back(), sleeper, slept);
        submitTimestamp(waiters.back(), &waited[static_cast<size_t>(i)]);
    }
    mtiaDrvQueue independent = makeQueue(0);
    uint64_t independentDone = 0;
    submitTimestamp(independent, &independentDone);
    ASSERT_EQ(finish(independent), mtiaSuccess);
    ASSERT_EQ(d.deviceSynchronize(0), mtiaSuccess);
    EXPECT_LT(independentDone, sleeperDone);
    for (uint64_t t : waited) EXPECT_GE(t, sleeperStart + 150'000'000);  // only after the sleep
    EXPECT_EQ(d.queueDestroy(sleeper), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(independent), mtiaSuccess);
    for (mtiaDrvQueue q : waiters) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, WaitOnADestroyedQueue) {
    mtiaDrvQueue target = makeQueue(0);
    mtiaDrvQueue waiter = makeQueue(0);
    uint64_t targetDone = 0, waiterDone = 0;
    submitSleep(target, 50'000);
    const uint64_t last = submitTimestamp(target, &targetDone);
    submitWait(waiter, target, last);
    submitTimestamp(waiter, &waiterDone);
    ASSERT_EQ(d.queueDestroy(target), mtiaSuccess);  // the wait keeps it alive
    ASSERT_EQ(finish(waiter), mtiaSuccess);
    EXPECT_NE(targetDone, 0u);
    EXPECT_LE(targetDone, waiterDone);
    // A destroyed handle is no wait target for new commands.
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdWait;
    c.u.wait.queue = target;
    c.u.wait.value = 1;
    uint64_t seq = 0;
    EXPECT_EQ(d.queueSubmit(waiter, &c, &seq), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.queueDestroy(waiter), mtiaSuccess);
}

TEST_F(SimQueue, DestroyReturnsAtOnceAndWorkStillRuns) {
    mtiaDrvQueue q = makeQueue(0);
    std::atomic<bool> ran{false};
    std::function<void()> mark = [&] { ran = true; };
    const auto t0 = std::chrono::steady_clock::now();
    submitSleep(q, 200'000);
    submitHost(q, &mark);
    ASSERT_EQ(d.queueDestroy(q), mtiaSuccess);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
    EXPECT_FALSE(ran.load());
    // deviceSynchronize covers destroyed queues that still drain.
    ASSERT_EQ(d.deviceSynchronize(0), mtiaSuccess);
    EXPECT_TRUE(ran.load());
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
}

TEST_F(SimQueue, TimestampsAreMonotonic) {
    mtiaDrvQueue a = makeQueue(0);
    mtiaDrvQueue b = makeQueue(0);
    std::vector<uint64_t> ta(200), tb(200);
    const uint64_t before = nowNs();
    for (size_t i = 0; i < ta.size(); ++i) {
        submitTimestamp(a, &ta[i]);
        submitTimestamp(b, &tb[i]);
    }
    ASSERT_EQ(finish(a), mtiaSuccess);
    ASSERT_EQ(finish(b), mtiaSuccess);
    const uint64_t after = nowNs();
    for (const auto* t : {&ta, &tb}) {
        EXPECT_GE(t->front(), before);
        EXPECT_LE(t->back(), after);
        EXPECT_TRUE(std::is_sorted(t->begin(), t->end()));
    }
    EXPECT_EQ(d.queueDestroy(a), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(b), mtiaSuccess);
}

TEST_F(SimQueue, HostFunctionsRunExactlyOnceOnDriverThreads) {
    std::vector<std::atomic<int>> calls(400);
    std::atomic<int> onDriverThread{0};
    std::vector<std::function<void()>> fns;
    fns.reserve(calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
        fns.emplace_back([&, i] {
            calls[i]++;
            if (d.isDriverThread() == 1) onDriverThread++;
        });
    }
    std::vector<mtiaDrvQueue> queues;
    for (int i = 0; i < 4; ++i) queues.push_back(makeQueue(i % deviceCount()));
    for (size_t i = 0; i < fns.size(); ++i) submitHost(queues[i % queues.size()], &fns[i]);
    for (mtiaDrvQueue q : queues) {
        ASSERT_EQ(finish(q), mtiaSuccess);
        EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    }
    for (const auto& c : calls) EXPECT_EQ(c.load(), 1);
    EXPECT_EQ(onDriverThread.load(), static_cast<int>(calls.size()));
}

TEST_F(SimQueue, HostFunctionsCannotWaitForTheirOwnDevice) {
    mtiaDrvQueue q = makeQueue(0);
    mtiaError_t syncResult = mtiaSuccess, waitResult = mtiaSuccess, doneWait = mtiaErrorUnknown;
    const uint64_t self = 2;  // the host function's own command number
    std::function<void()> fn = [&] {
        syncResult = d.deviceSynchronize(0);
        waitResult = d.queueWait(q, self, MTIA_DRV_WAIT_SLEEP);
        doneWait = d.queueWait(q, self - 1, MTIA_DRV_WAIT_SLEEP);  // already complete: fine
    };
    submitSleep(q, 1);
    ASSERT_EQ(submitHost(q, &fn), self);
    ASSERT_EQ(finish(q), mtiaSuccess);
    EXPECT_EQ(syncResult, mtiaErrorNotPermitted);
    EXPECT_EQ(waitResult, mtiaErrorNotPermitted);
    EXPECT_EQ(doneWait, mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, CopyAndFill) {
    mtiaDrvQueue q = makeQueue(0);
    DeviceBuffer a(0, kGran);
    DeviceBuffer b(0, kGran);
    std::vector<unsigned char> host(4096, 0), back(4096, 0);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7);
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdFill;
    c.u.fill.dst = a.data();
    c.u.fill.size = kGran;
    c.u.fill.value = 0x1ab;  // low byte only
    submit(q, c);
    c = {};
    c.type = mtiaDrvCmdCopy;
    c.u.copy.dst = b.data();
    c.u.copy.src = host.data();
    c.u.copy.size = host.size();
    submit(q, c);  // host to device
    c.u.copy.dst = static_cast<char*>(a.data()) + 8192;
    c.u.copy.src = b.data();
    submit(q, c);  // device to device
    c.u.copy.dst = back.data();
    c.u.copy.src = static_cast<char*>(a.data()) + 8192;
    submit(q, c);  // device to host
    c.u.copy.size = 0;
    c.u.copy.dst = nullptr;
    c.u.copy.src = nullptr;
    submit(q, c);  // empty: nothing to check
    ASSERT_EQ(finish(q), mtiaSuccess);
    EXPECT_EQ(back, host);
    const auto* bytes = static_cast<const unsigned char*>(a.data());
    EXPECT_EQ(bytes[0], 0xab);
    EXPECT_EQ(bytes[8191], 0xab);
    EXPECT_EQ(bytes[8192 + 4096], 0xab);
    EXPECT_EQ(bytes[kGran - 1], 0xab);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, SubmitValidation) {
    mtiaDrvQueue q = makeQueue(0);
    uint64_t seq = 0;
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdTimestamp;
    uint64_t stamp = 0;
    c.u.timestamp.out = &stamp;
    EXPECT_EQ(d.queueSubmit(q, nullptr, &seq), mtiaErrorInvalidValue);
    EXPECT_EQ(d.queueSubmit(q, &c, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.queueSubmit(nullptr, &c, &seq), mtiaErrorInvalidHandle);
    int notAQueue = 0;
    EXPECT_EQ(d.queueSubmit(reinterpret_cast<mtiaDrvQueue>(&notAQueue), &c, &seq),
              mtiaErrorInvalidHandle);
    c.u.timestamp.out = nullptr;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);
    c = {};
    c.type = static_cast<mtiaDrvCommandType>(42);
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);
    EXPECT_NE(lastError().find("unknown command type 42"), std::string::npos) << lastError();
    const int32_t negative = -1;  // no enumerator: must be rejected, not loaded as the enum
    std::memcpy(&c.type, &negative, sizeof(negative));
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);
    EXPECT_NE(lastError().find("unknown command type -1"), std::string::npos) << lastError();
    c = {};
    c.type = mtiaDrvCmdHostFunc;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);
    c = {};
    c.type = mtiaDrvCmdFill;
    c.u.fill.size = 16;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);  // NULL dst
    char buf[64];
    c = {};
    c.type = mtiaDrvCmdCopy;
    c.u.copy.dst = buf + 8;
    c.u.copy.src = buf;
    c.u.copy.size = 16;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);  // overlapping
    c.u.copy.src = nullptr;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);
    c.u.copy.src = buf;
    c.u.copy.dst = reinterpret_cast<void*>(UINTPTR_MAX - 4);
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);  // wraps around
    c = {};
    c.type = mtiaDrvCmdWait;
    c.u.wait.queue = q;
    c.u.wait.value = 1000;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidValue);  // not submitted yet
    c.u.wait.queue = nullptr;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidHandle);
    // Nothing of the above was queued.
    EXPECT_EQ(submitTimestamp(q, &stamp), 1u);
    // A wait for an earlier command of the same queue is trivially satisfied.
    EXPECT_EQ(submitWait(q, q, 1), 2u);
    ASSERT_EQ(finish(q), mtiaSuccess);

    mtiaDrvQueue out = nullptr;
    EXPECT_EQ(d.queueCreate(0, 0, 1, &out), mtiaErrorInvalidValue);
    EXPECT_EQ(d.queueCreate(0, 0, 0, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.queueCreate(-1, 0, 0, &out), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.queueCreate(deviceCount(), 0, 0, &out), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceSynchronize(deviceCount()), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceGetStatus(-1), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, ManyThreadsSubmitToManyQueues) {
    constexpr int kThreads = 4;
    constexpr int kPerThread = 2000;
    std::vector<std::thread> threads;
    std::vector<mtiaDrvQueue> queues;
    for (int t = 0; t < kThreads; ++t) queues.push_back(makeQueue(t % deviceCount(), -(t % 6)));
    std::vector<std::atomic<int>> counters(kThreads);
    std::vector<std::function<void()>> bump;
    for (int t = 0; t < kThreads; ++t)
        bump.emplace_back([&counters, t] { counters[static_cast<size_t>(t)]++; });
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i)
                submitHost(queues[static_cast<size_t>(t)], &bump[static_cast<size_t>(t)]);
        });
    }
    for (std::thread& t : threads) t.join();
    for (int dev = 0; dev < deviceCount(); ++dev) ASSERT_EQ(d.deviceSynchronize(dev), mtiaSuccess);
    for (int t = 0; t < kThreads; ++t)
        EXPECT_EQ(counters[static_cast<size_t>(t)].load(), kPerThread);
    for (mtiaDrvQueue q : queues) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, IdleEnginesSleep) {
    mtiaDrvQueue q = makeQueue(0);
    for (int i = 0; i < 100; ++i) submitSleep(q, 10);
    ASSERT_EQ(finish(q), mtiaSuccess);
    usleep(20'000);
    const double cpu0 = cpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    usleep(300'000);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpuSeconds() - cpu0;
    EXPECT_LT(cpu, 0.05 * wall) << "idle process used " << cpu << " s of CPU in " << wall << " s";
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimQueue, SubmitAndCompleteThroughput) {
    // Not a benchmark: prints the cost of an enqueue-and-complete of a trivial command as a sanity
    // check.
    mtiaDrvQueue q = makeQueue(0);
    constexpr int kCommands = 20000;
    double ns = 0;
    for (int round = 0; round < 2; ++round) {  // the first round grows the queue's storage
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t last = 0;
        for (int i = 0; i < kCommands; ++i) last = launch(q, "sleep_us", {1, 1, 1}, uint64_t{0});
        ASSERT_EQ(d.queueWait(q, last, MTIA_DRV_WAIT_SPIN), mtiaSuccess);
        ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
    std::printf("[ info ] %.0f ns per submitted and completed empty kernel\n", ns / kCommands);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}
