// Conformance: bad input to the stream and event functions. Each refused call returns the status
// its doc comment in mtia_runtime.h names, writes no out-pointer, and leaves a last-error message
// that names the function and the argument (ABI rules 3 and 4).
#include "streams_test_util.hpp"

using namespace mtia_test;

namespace {

std::atomic<int> g_badLaunchRuns{0};
void countBadLaunch(void*) {
    ++g_badLaunchRuns;
}

// Every stream-taking call refuses s with mtiaErrorInvalidHandle and names the stream argument.
void expectStreamRejected(mtiaStream_t s, mtiaEvent_t liveEvent) {
    int i = 0;
    unsigned u = 0;
    int64_t id = 0;
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamQuery(s), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamSynchronize(s), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamDestroy(s), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamWaitEvent(s, liveEvent, 0), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamGetPriority(s, &i), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamGetFlags(s, &u), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamGetDevice(s, &i), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamGetId(s, &id), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaSetCurrentStream(s), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaLaunchHostFunc(s, countBadLaunch, nullptr), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventRecord(liveEvent, s), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaLaunchKernel(noopKernel(), kOne, kOne, nullptr, 0, s),
                 "stream");
}

// Every event-taking call refuses e with mtiaErrorInvalidHandle and names the event argument.
void expectEventRejected(mtiaEvent_t e, mtiaStream_t liveStream, mtiaEvent_t liveTimedEvent) {
    float ms = 0.0f;
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventQuery(e), "event");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventSynchronize(e), "event");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventRecord(e, liveStream), "event");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventDestroy(e), "event");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamWaitEvent(liveStream, e, 0), "event");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, e, liveTimedEvent), "start");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, liveTimedEvent, e), "end");
}

}  // namespace

TEST(BadInput, ForeignStaleAndMistypedStreamHandles) {
    Event live;
    ASSERT_OK(live.status());
    Stream s;
    ASSERT_OK(s.status());
    ASSERT_OK(mtiaEventRecord(live, s));

    long long local[8] = {};  // a real pointer that is no stream
    SCOPED_TRACE("pointer to a local");
    expectStreamRejected(reinterpret_cast<mtiaStream_t>(&local[0]), live);
    {
        SCOPED_TRACE("heap pointer");
        auto heap = std::make_unique<long long[]>(8);
        expectStreamRejected(reinterpret_cast<mtiaStream_t>(heap.get()), live);
    }
    {
        SCOPED_TRACE("event handle passed as a stream");
        expectStreamRejected(reinterpret_cast<mtiaStream_t>(live.get()), live);
    }
    {
        SCOPED_TRACE("destroyed stream");
        mtiaStream_t dead = nullptr;
        ASSERT_OK(mtiaStreamCreate(&dead));
        ASSERT_OK(mtiaStreamDestroy(dead));
        expectStreamRejected(dead, live);
        // Another stream made afterwards does not bring the old handle back to life.
        Stream later;
        ASSERT_OK(later.status());
        expectStreamRejected(dead, live);
    }
    EXPECT_EQ(g_badLaunchRuns, 0) << "a host function launched on a bad handle ran";
    // The current stream is unchanged and everything still works.
    mtiaStream_t current = nullptr, def = nullptr;
    ASSERT_OK(mtiaGetCurrentStream(-1, &current));
    ASSERT_OK(mtiaGetDefaultStream(-1, &def));
    EXPECT_EQ(current, def);
    EXPECT_OK(launchNoop(s));
    EXPECT_OK(mtiaStreamSynchronize(s));
}

TEST(BadInput, ForeignStaleAndMistypedEventHandles) {
    Stream s;
    ASSERT_OK(s.status());
    Event timed;
    ASSERT_OK(timed.status());
    ASSERT_OK(mtiaEventRecord(timed, s));
    ASSERT_OK(mtiaEventSynchronize(timed));

    long long local[8] = {};
    {
        SCOPED_TRACE("pointer to a local");
        expectEventRejected(reinterpret_cast<mtiaEvent_t>(&local[0]), s, timed);
    }
    {
        SCOPED_TRACE("stream handle passed as an event");
        expectEventRejected(reinterpret_cast<mtiaEvent_t>(s.get()), s, timed);
    }
    {
        SCOPED_TRACE("destroyed event");
        mtiaEvent_t dead = nullptr;
        ASSERT_OK(mtiaEventCreate(&dead));
        ASSERT_OK(mtiaEventRecord(dead, s));
        ASSERT_OK(mtiaEventDestroy(dead));
        expectEventRejected(dead, s, timed);
        Event later;
        ASSERT_OK(later.status());
        expectEventRejected(dead, s, timed);
    }
    EXPECT_OK(mtiaEventQuery(timed));
    EXPECT_OK(launchNoop(s));
    EXPECT_OK(mtiaStreamSynchronize(s));
}

TEST(BadInput, EventOfAnotherDeviceRecordedOnStream) {
    if (deviceCount() < 2) GTEST_SKIP() << "needs two devices";
    Event e1(mtiaEventDefault, 1);
    ASSERT_OK(e1.status());
    Stream s0(0);
    ASSERT_OK(s0.status());
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventRecord(e1, s0), "stream");
    EXPECT_NE(std::string(mtiaGetLastErrorMessage()).find("device"), std::string::npos)
        << mtiaGetLastErrorMessage();
    Event e0(mtiaEventDefault, 0);
    ASSERT_OK(e0.status());
    Stream s1(1);
    ASSERT_OK(s1.status());
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventRecord(e0, s1), "stream");
    EXPECT_OK(mtiaEventRecord(e1, s1));
    EXPECT_OK(mtiaEventRecord(e0, s0));
    EXPECT_OK(mtiaEventSynchronize(e1));
    EXPECT_OK(mtiaEventSynchronize(e0));
}

TEST(BadInput, UnknownFlagBits) {
    auto* const sentinel = reinterpret_cast<mtiaStream_t>(uintptr_t{0x5a5a});
    for (unsigned flags : {2u, 4u, 0x100u, 0x80000000u, mtiaStreamNonBlocking | 2u}) {
        mtiaStream_t s = sentinel;
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamCreateWithFlags(&s, flags), "flags");
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamCreateWithPriority(&s, flags, 0), "flags");
        EXPECT_EQ(s, sentinel) << "a failed create wrote its out-pointer";
    }
    for (unsigned flags : {8u, 0x40u, 0x80000000u}) {
        mtiaEvent_t e = nullptr;
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventCreateWithFlags(&e, flags), "flags");
        EXPECT_EQ(e, nullptr);
    }
    Stream s;
    ASSERT_OK(s.status());
    Event e;
    ASSERT_OK(e.status());
    for (unsigned flags : {2u, 0x80u, 0x80000000u, mtiaEventWaitExternal | 4u})
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamWaitEvent(s, e, flags), "flags");
    EXPECT_OK(mtiaStreamWaitEvent(s, e, mtiaEventWaitExternal));  // legal outside capture too
}

TEST(BadInput, InterprocessWithoutDisableTiming) {
    for (unsigned flags : {mtiaEventInterprocess, mtiaEventInterprocess | mtiaEventBlockingSync}) {
        mtiaEvent_t e = nullptr;
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventCreateWithFlags(&e, flags), "flags");
        EXPECT_EQ(e, nullptr);
    }
    mtiaEvent_t e = nullptr;
    EXPECT_OK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming));
    EXPECT_OK(mtiaEventDestroy(e));
}

TEST(BadInput, ElapsedTimeOnUntimedOrUnrecordedEvents) {
    Stream s;
    ASSERT_OK(s.status());
    Event timed, untimed(mtiaEventDisableTiming), fresh;
    for (Event* e : {&timed, &untimed, &fresh}) ASSERT_OK(e->status());
    ASSERT_OK(mtiaEventRecord(timed, s));
    ASSERT_OK(mtiaEventRecord(untimed, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    float ms = 12345.0f;
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, timed, untimed), "end");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, untimed, timed), "start");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, timed, fresh), "end");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, fresh, timed), "start");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventElapsedTime(nullptr, timed, timed), "ms");
    EXPECT_EQ(ms, 12345.0f);
}

TEST(BadInput, NullOutPointers) {
    Stream s;
    ASSERT_OK(s.status());
    int64_t id = 0;
    ASSERT_OK(mtiaStreamGetId(s, &id));
    Event e;
    ASSERT_OK(e.status());
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamCreate(nullptr), "stream");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamCreateWithFlags(nullptr, 0), "stream");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamCreateWithPriority(nullptr, 0, 0), "stream");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamGetPriority(s, nullptr), "priority");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamGetFlags(s, nullptr), "flags");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamGetDevice(s, nullptr), "dev");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamGetId(s, nullptr), "id");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamFromId(id, nullptr), "stream");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGetCurrentStream(0, nullptr), "stream");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGetDefaultStream(0, nullptr), "stream");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventCreate(nullptr), "event");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventCreateWithFlags(nullptr, 0), "event");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventElapsedTime(nullptr, e, e), "ms");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaLaunchHostFunc(s, nullptr, nullptr), "fn");
}

TEST(BadInput, UnknownIdsAndDevices) {
    mtiaStream_t out = nullptr;
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamFromId(-1, &out), "id");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamFromId(INT64_MAX, &out), "id");
    mtiaStream_t s = nullptr;
    ASSERT_OK(mtiaStreamCreate(&s));
    int64_t id = 0;
    ASSERT_OK(mtiaStreamGetId(s, &id));
    ASSERT_OK(mtiaStreamDestroy(s));
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaStreamFromId(id, &out), "id");
    EXPECT_EQ(out, nullptr);
    const int bad = deviceCount();
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaGetDefaultStream(bad, &out), "dev");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaGetCurrentStream(bad, &out), "dev");
    EXPECT_EQ(out, nullptr);
    // The default stream's id round-trips like any other.
    mtiaStream_t def = nullptr, back = nullptr;
    ASSERT_OK(mtiaGetDefaultStream(0, &def));
    int64_t defId = -1;
    ASSERT_OK(mtiaStreamGetId(def, &defId));
    EXPECT_OK(mtiaStreamFromId(defId, &back));
    EXPECT_EQ(back, def);
}

TEST(BadInput, DestroyingDefaultStream) {
    for (int dev = 0; dev < std::min(deviceCount(), 2); ++dev) {
        mtiaStream_t def = nullptr;
        ASSERT_OK(mtiaGetDefaultStream(dev, &def));
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamDestroy(def), "stream");
        EXPECT_NE(std::string(mtiaGetLastErrorMessage()).find("default"), std::string::npos)
            << mtiaGetLastErrorMessage();
        // Also when it is reached through the current-stream query.
        DeviceScope scope(dev);
        mtiaStream_t current = nullptr;
        ASSERT_OK(mtiaGetCurrentStream(-1, &current));
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamDestroy(current), "stream");
        EXPECT_OK(launchNoop(def));
        EXPECT_OK(mtiaStreamSynchronize(def));
    }
}

TEST(BadInput, NullDestroySucceeds) {
    // ABI rule 4 (mtiaXxxDestroy(NULL) is mtiaSuccess) takes precedence over item 9 of the list.
    EXPECT_OK(mtiaStreamDestroy(nullptr));
    EXPECT_OK(mtiaEventDestroy(nullptr));
    EXPECT_OK(launchNoop(nullptr)) << "destroy(NULL) must not touch the current stream";
    EXPECT_OK(mtiaStreamSynchronize(nullptr));
}

TEST(BadInput, FailuresAreNotSticky) {
    int local = 0;
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamQuery(reinterpret_cast<mtiaStream_t>(&local)));
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaEventCreateWithFlags(nullptr, 0));
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaStreamCreateWithFlags(nullptr, 0x80));
    // A success leaves the message of the last failure alone (there is no sticky state to clear).
    const std::string message = mtiaGetLastErrorMessage();
    Stream s;
    ASSERT_OK(s.status());
    Event e;
    ASSERT_OK(e.status());
    EXPECT_OK(launchNoop(s));
    EXPECT_OK(mtiaEventRecord(e, s));
    EXPECT_OK(mtiaEventSynchronize(e));
    EXPECT_OK(mtiaStreamSynchronize(s));
    EXPECT_OK(mtiaDeviceSynchronize());
    EXPECT_EQ(message, mtiaGetLastErrorMessage());
}
