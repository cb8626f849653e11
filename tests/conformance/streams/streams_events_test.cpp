// Conformance: events (streams-graphs-anchors.md (c), items 12-24).
#include <random>

#include "streams_test_util.hpp"

using namespace mtia_test;

TEST(Events, T12_NeverRecordedEventIsComplete) {
    for (unsigned flags : {mtiaEventDefault, mtiaEventDisableTiming, mtiaEventBlockingSync}) {
        Event e(flags);
        ASSERT_OK(e.status());
        EXPECT_OK(mtiaEventQuery(e));
        EXPECT_TRUE(returnsWithin(kHang, [&] { EXPECT_OK(mtiaEventSynchronize(e)); }))
            << "mtiaEventSynchronize on a never-recorded event did not return";
        Stream s;
        ASSERT_OK(s.status());
        EXPECT_OK(mtiaStreamWaitEvent(s, e, mtiaEventWaitDefault));
        ASSERT_OK(launchNoop(s));
        EXPECT_TRUE(eventually([&] { return mtiaStreamQuery(s) == mtiaSuccess; }))
            << "waiting on a never-recorded event was not a no-op";
    }
}

TEST(Events, T13_RecordOnIdleStreamCompletes) {
    Stream s;
    ASSERT_OK(s.status());
    mtiaStream_t def = nullptr;
    ASSERT_OK(mtiaGetDefaultStream(0, &def));
    for (mtiaStream_t target : {s.get(), def}) {
        Event e;
        ASSERT_OK(e.status());
        ASSERT_OK(mtiaEventRecord(e, target));
        EXPECT_TRUE(returnsWithin(kHang, [&] { EXPECT_OK(mtiaEventSynchronize(e)); }))
            << "an event recorded on an idle stream never completed";
        EXPECT_OK(mtiaEventQuery(e));
    }
}

TEST(Events, T14_PendingRecordBlocksSynchronize) {
    Stream s;
    ASSERT_OK(s.status());
    Event e;
    ASSERT_OK(e.status());
    Latch latch;
    ASSERT_OK(latch.block(s));
    ASSERT_OK(mtiaEventRecord(e, s));
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e));

    std::atomic<bool> released{false};
    Async waiter(
        [&] {
            EXPECT_OK(mtiaEventSynchronize(e));
            EXPECT_TRUE(released)
                << "mtiaEventSynchronize returned before the recorded work finished";
        },
        [&] { latch.open(); });
    std::this_thread::sleep_for(kSettle);
    EXPECT_FALSE(waiter.done()) << "mtiaEventSynchronize did not block on a pending record";
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e));
    released = true;
    latch.open();
    EXPECT_TRUE(waiter.waitFor(kHang))
        << "mtiaEventSynchronize did not return after the work finished";
    EXPECT_OK(mtiaEventQuery(e));
}

TEST(Events, T15_ReRecordOverwritesSnapshot) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    Event e;
    ASSERT_OK(e.status());
    Latch latch;
    ASSERT_OK(latch.block(a));
    ASSERT_OK(mtiaEventRecord(e, a));
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e));
    ASSERT_OK(mtiaEventRecord(e, b));  // b is idle
    EXPECT_TRUE(eventually([&] { return mtiaEventQuery(e) == mtiaSuccess; }))
        << "the event still reflects its first record";
    EXPECT_TRUE(returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaEventSynchronize(e)); }, [&] { latch.open(); }));
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(a));
    latch.open();
    EXPECT_OK(mtiaStreamSynchronize(a));
}

TEST(Events, T16_WaitUsesSnapshotAtCallTime) {
    Stream a, b, c, d;
    for (Stream* s : {&a, &b, &c, &d}) ASSERT_OK(s->status());
    Event e;
    ASSERT_OK(e.status());
    Latch latch;
    ASSERT_OK(latch.block(a));  // X
    ASSERT_OK(mtiaEventRecord(e, a));
    ASSERT_OK(mtiaStreamWaitEvent(b, e, mtiaEventWaitDefault));  // b waits for X
    ASSERT_OK(mtiaEventRecord(e, c));                            // c is idle
    ASSERT_OK(mtiaStreamWaitEvent(d, e, mtiaEventWaitDefault));  // d waits for the idle record
    ASSERT_OK(launchNoop(b));
    ASSERT_OK(launchNoop(d));
    EXPECT_TRUE(eventually([&] { return mtiaEventQuery(e) == mtiaSuccess; }));
    EXPECT_TRUE(eventually([&] { return mtiaStreamQuery(d) == mtiaSuccess; }))
        << "a wait issued after the re-record still waited for the old record";
    std::this_thread::sleep_for(kSettle);
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(b))
        << "the re-record released a wait issued before it";
    latch.open();
    EXPECT_OK(mtiaStreamSynchronize(b));
}

TEST(Events, T17_ProducerConsumerNeverStale) {
    constexpr int kIters = 10000;
    constexpr uint64_t kN = 16;
    DeviceFloats buf(kN), results(kIters * kN);
    ASSERT_OK(buf.status());
    ASSERT_OK(results.status());
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    Event produced(mtiaEventDisableTiming), consumed(mtiaEventDisableTiming);
    ASSERT_OK(produced.status());
    ASSERT_OK(consumed.status());
    std::mt19937 rng(17);
    for (int i = 0; i < kIters; ++i) {
        // A may overwrite buf only after B read the previous value; B reads only after A wrote this
        // one.
        ASSERT_OK(mtiaStreamWaitEvent(a, consumed, mtiaEventWaitDefault));
        if (rng() % 4 == 0) {
            ASSERT_OK(launchSleep(a, 1 + rng() % 30));
        }
        ASSERT_OK(launchFill(a, buf, static_cast<float>(i), kN));
        ASSERT_OK(mtiaEventRecord(produced, a));
        ASSERT_OK(mtiaStreamWaitEvent(b, produced, mtiaEventWaitDefault));
        if (rng() % 4 == 0) {
            ASSERT_OK(launchSleep(b, 1 + rng() % 30));
        }
        ASSERT_OK(launchCopy(b, results + i * kN, buf, kN));
        ASSERT_OK(mtiaEventRecord(consumed, b));
        if (rng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
    }
    ASSERT_OK(mtiaStreamSynchronize(b));
    ASSERT_OK(mtiaStreamSynchronize(a));
    const std::vector<float> got = readBack(results, kIters * kN);
    ASSERT_EQ(got.size(), kIters * kN);
    int stale = 0;
    for (int i = 0; i < kIters; ++i)
        for (uint64_t j = 0; j < kN; ++j)
            if (got[i * kN + j] != static_cast<float>(i) && ++stale <= 5)
                ADD_FAILURE() << "iteration " << i << " read " << got[i * kN + j];
    EXPECT_EQ(stale, 0);
}

TEST(Events, T18_WaitNeverBlocksHost) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    Event e;
    ASSERT_OK(e.status());
    Latch latch;
    ASSERT_OK(latch.block(a));
    ASSERT_OK(mtiaEventRecord(e, a));
    const bool returned = returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaStreamWaitEvent(b, e, mtiaEventWaitDefault)); },
        [&] { latch.open(); });
    ASSERT_TRUE(returned) << "mtiaStreamWaitEvent blocked the host on a pending event";
    ASSERT_OK(launchNoop(b));
    std::this_thread::sleep_for(kSettle);
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(b)) << "the wait did not hold b back";
    latch.open();
    EXPECT_OK(mtiaStreamSynchronize(b));
}

TEST(Events, T19_CrossDeviceEvents) {
    if (deviceCount() < 2) GTEST_SKIP() << "needs two devices";
    Event e1(mtiaEventDefault, 1);
    ASSERT_OK(e1.status());
    Stream s0(0), s1(1);
    ASSERT_OK(s0.status());
    ASSERT_OK(s1.status());
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventRecord(e1, s0));
    {
        DeviceScope dev0(0);
        EXPECT_STATUS(mtiaErrorInvalidHandle,
                      mtiaEventRecord(e1, nullptr));  // device 0's current stream
    }
    EXPECT_OK(mtiaEventQuery(e1)) << "a refused record changed the event";

    // Waiting across devices is allowed and ordered.
    Latch latch;
    ASSERT_OK(latch.block(s1));
    ASSERT_OK(mtiaEventRecord(e1, s1));
    ASSERT_OK(mtiaStreamWaitEvent(s0, e1, mtiaEventWaitDefault));
    ASSERT_OK(launchNoop(s0));
    std::this_thread::sleep_for(kSettle);
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(s0))
        << "device 0's stream did not wait for device 1's event";
    latch.open();
    EXPECT_OK(mtiaStreamSynchronize(s0));
    EXPECT_OK(mtiaEventQuery(e1));
}

TEST(Events, T20_DestroyEventWhilePendingAndAwaited) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    auto ran = std::make_shared<std::atomic<bool>>(false);
    Latch latch;
    ASSERT_OK(latch.block(a));

    mtiaEvent_t e = nullptr;
    ASSERT_OK(mtiaEventCreate(&e));
    ASSERT_OK(mtiaEventRecord(e, a));
    ASSERT_OK(mtiaStreamWaitEvent(b, e, mtiaEventWaitDefault));
    ASSERT_OK(launchHost(b, [ran] { *ran = true; }));

    // A second event that a host thread is synchronizing on while it is destroyed.
    mtiaEvent_t f = nullptr;
    ASSERT_OK(mtiaEventCreate(&f));
    ASSERT_OK(mtiaEventRecord(f, a));
    mtiaError_t syncStatus = mtiaErrorUnknown;
    std::atomic<bool> released{false}, returnedEarly{false};
    std::atomic<pid_t> syncTid{0};
    Async syncer(
        [&] {
            syncTid = gettid();
            syncStatus = mtiaEventSynchronize(f);
            returnedEarly = !released.load();
        },
        [&] { latch.open(); });
    // The syncer is inside mtiaEventSynchronize (with its snapshot) once it sleeps there.
    ASSERT_TRUE(eventually([&] { return syncTid.load() != 0; }));
    const bool syncerWaiting = waitUntilAsleep(syncTid.load(), 2s);

    EXPECT_TRUE(returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaEventDestroy(e)); }, [&] { latch.open(); }));
    EXPECT_TRUE(returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaEventDestroy(f)); }, [&] { latch.open(); }));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventQuery(e));
    std::this_thread::sleep_for(kSettle);
    EXPECT_FALSE(*ran) << "destroying the event released its waiter early";
    EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(b));

    if (syncerWaiting) {
        EXPECT_FALSE(syncer.done())
            << "destroying the event released a host synchronizing on it early";
    }
    released = true;
    latch.open();
    EXPECT_TRUE(returnsWithin(kHang, [&] { EXPECT_OK(mtiaStreamSynchronize(b)); }))
        << "a stream waiting on a destroyed event was never released";
    EXPECT_TRUE(*ran);
    ASSERT_TRUE(syncer.waitFor(kHang)) << "mtiaEventSynchronize on a destroyed event hung";
    if (syncerWaiting) {
        // It was waiting before the destroy: it must have waited for the work, whatever the destroy
        // did.
        EXPECT_OK(syncStatus);
        EXPECT_FALSE(returnedEarly)
            << "mtiaEventSynchronize returned before the work it waited for finished";
    } else {
        // A slow start: the call may have come after the destroy.
        EXPECT_TRUE(syncStatus == mtiaErrorInvalidHandle ||
                    (syncStatus == mtiaSuccess && !returnedEarly))
            << "mtiaEventSynchronize racing with destroy returned " << mtiaGetErrorName(syncStatus);
    }
}

TEST(Events, T21_EventFlagValidation) {
    for (unsigned flags :
         {mtiaEventDefault, mtiaEventBlockingSync, mtiaEventDisableTiming,
          mtiaEventBlockingSync | mtiaEventDisableTiming,
          mtiaEventInterprocess | mtiaEventDisableTiming,
          mtiaEventInterprocess | mtiaEventDisableTiming | mtiaEventBlockingSync}) {
        mtiaEvent_t e = nullptr;
        EXPECT_OK(mtiaEventCreateWithFlags(&e, flags)) << "flags " << flags;
        EXPECT_OK(mtiaEventDestroy(e));
    }
    auto* const sentinel = reinterpret_cast<mtiaEvent_t>(uintptr_t{0x5a5a});
    for (unsigned flags : {mtiaEventInterprocess, mtiaEventInterprocess | mtiaEventBlockingSync, 8u,
                           16u, 0x80000000u, mtiaEventDisableTiming | 64u}) {
        mtiaEvent_t e = sentinel;
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventCreateWithFlags(&e, flags), "flags");
        EXPECT_EQ(e, sentinel) << "a failed create wrote its out-pointer (flags " << flags << ")";
    }
}

TEST(Events, T22_BlockingSyncWaitSleeps) {
    // Same result with and without mtiaEventBlockingSync; the blocking one costs the waiter no CPU.
    for (unsigned flags : {mtiaEventBlockingSync, mtiaEventDefault}) {
        Stream s;
        ASSERT_OK(s.status());
        Event e(flags);
        ASSERT_OK(e.status());
        const auto start = Clock::now();
        ASSERT_OK(launchSleep(s, 200000));
        ASSERT_OK(mtiaEventRecord(e, s));
        const auto cpu0 = threadCpuTime();
        EXPECT_OK(mtiaEventSynchronize(e));
        const auto cpu = threadCpuTime() - cpu0;
        const auto wall = Clock::now() - start;
        EXPECT_GE(wall, 190ms) << "mtiaEventSynchronize returned before the 200 ms kernel finished";
        EXPECT_OK(mtiaEventQuery(e));
        if (flags == mtiaEventBlockingSync) {
            EXPECT_LT(cpu, 50ms) << "a blocking-sync wait of " << ms(wall) << " ms burnt "
                                 << ms(cpu) << " ms of CPU";
        }
    }
}

TEST(Events, T23_NotReadyIsNotAnError) {
    Stream s, other;
    ASSERT_OK(s.status());
    ASSERT_OK(other.status());
    Event e;
    ASSERT_OK(e.status());
    Latch latch;
    ASSERT_OK(latch.block(s));
    ASSERT_OK(mtiaEventRecord(e, s));
    // On a fresh thread the message is empty; NotReady leaves it so, and leaves a failure's message
    // alone.
    std::thread([&] {
        EXPECT_STREQ(mtiaGetLastErrorMessage(), "");
        EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e));
        EXPECT_STREQ(mtiaGetLastErrorMessage(), "")
            << "mtiaEventQuery's NotReady set the last-error message";
        EXPECT_STATUS(mtiaErrorNotReady, mtiaStreamQuery(s));
        EXPECT_STREQ(mtiaGetLastErrorMessage(), "")
            << "mtiaStreamQuery's NotReady set the last-error message";
        int local = 0;
        EXPECT_STATUS(mtiaErrorInvalidHandle,
                      mtiaEventQuery(reinterpret_cast<mtiaEvent_t>(&local)));
        const std::string failure = mtiaGetLastErrorMessage();
        EXPECT_FALSE(failure.empty());
        EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e));
        EXPECT_EQ(failure, mtiaGetLastErrorMessage())
            << "NotReady replaced the last failure's message";
    }).join();
    // Nothing became sticky: everything else still works.
    EXPECT_OK(launchNoop(other));
    EXPECT_OK(mtiaStreamSynchronize(other));
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e));
    latch.open();
    void* p =
        nullptr;  // (mtiaFree waits for the device's queued work: only after the latch opened)
    EXPECT_OK(mtiaMalloc(&p, 256));
    EXPECT_OK(mtiaFree(p));
    EXPECT_OK(mtiaEventSynchronize(e));
    EXPECT_OK(mtiaEventQuery(e));
    EXPECT_OK(mtiaStreamSynchronize(s));
    EXPECT_OK(mtiaDeviceSynchronize());
}

TEST(Events, T24_WaitStreamIdiomDoesNotGrow) {
    // PyTorch's wait_stream: a fresh event per call, recorded on the producer, waited on by the
    // consumer.
    constexpr int kWarmup = 2000, kIters = 100000;
    Stream producer, consumer;
    ASSERT_OK(producer.status());
    ASSERT_OK(consumer.status());
    mtiaEvent_t firstDestroyed = nullptr;
    int failures = 0;
    auto iteration = [&](int i) {
        mtiaEvent_t e = nullptr;
        if (mtiaEventCreateWithFlags(&e, mtiaEventDisableTiming) != mtiaSuccess) {
            ++failures;
            return;
        }
        if (i % 16 == 0 && launchNoop(producer) != mtiaSuccess) ++failures;
        if (mtiaEventRecord(e, producer) != mtiaSuccess) ++failures;
        if (mtiaStreamWaitEvent(consumer, e, mtiaEventWaitDefault) != mtiaSuccess) ++failures;
        if (mtiaEventDestroy(e) != mtiaSuccess) ++failures;
        if (firstDestroyed == nullptr) firstDestroyed = e;
        if (i % 4096 == 0 && mtiaStreamSynchronize(consumer) != mtiaSuccess) ++failures;
    };
    for (int i = 0; i < kWarmup; ++i) iteration(i);
    ASSERT_OK(mtiaStreamSynchronize(consumer));
    // Two equal halves: whatever the first half still grows (allocator arenas settling), the second
    // must not, and a leak of even a handle-table slot per event (24 bytes) shows there as over 1
    // MiB.
    const int64_t rss0 = residentBytes();
    for (int i = 0; i < kIters / 2; ++i) iteration(i);
    ASSERT_OK(mtiaStreamSynchronize(consumer));
    const int64_t rssMid = residentBytes();
    for (int i = kIters / 2; i < kIters; ++i) iteration(i);
    ASSERT_OK(mtiaStreamSynchronize(consumer));
    ASSERT_OK(mtiaStreamSynchronize(producer));
    const int64_t rss1 = residentBytes();
    EXPECT_EQ(failures, 0) << mtiaGetLastErrorMessage();
    ASSERT_GT(rss0, 0);
    if (!kSanitized) {
        EXPECT_LT(rss1 - rss0, 4 << 20) << "resident memory grew from " << rss0 << " to " << rss1
                                        << " bytes over " << kIters << " iterations";
        EXPECT_LT(rss1 - rssMid, 512 << 10)
            << "resident memory grew from " << rssMid << " to " << rss1 << " bytes over the second "
            << kIters / 2 << " iterations";
    }

    // Events made afterwards still work, and a handle destroyed 100000 events ago is still
    // rejected.
    Event live;
    ASSERT_OK(live.status());
    ASSERT_OK(launchNoop(producer));
    ASSERT_OK(mtiaEventRecord(live, producer));
    EXPECT_OK(mtiaStreamWaitEvent(consumer, live, mtiaEventWaitDefault));
    EXPECT_OK(mtiaEventSynchronize(live));
    EXPECT_OK(mtiaStreamSynchronize(consumer));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventQuery(firstDestroyed));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventDestroy(firstDestroyed));
}
