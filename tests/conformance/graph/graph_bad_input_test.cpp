// Bad input at the graph ABI: each refused call returns its documented code, names the call and the
// argument, and changes nothing; plus the external event-record node (mtiaEventRecordExternal).
#include "capture_test_util.hpp"

#include <cstring>

namespace {

using namespace mtia_test;

constexpr mtiaStreamCaptureMode kGlobal = mtiaStreamCaptureModeGlobal;

mtiaStreamCaptureMode badMode() {
    mtiaStreamCaptureMode m;
    const int nine = 9;
    std::memcpy(&m, &nine, sizeof m);  // what a C caller may pass; never loaded as the enum here
    return m;
}

TEST(GraphBadInput, CreateAndInfoArguments) {
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphCreate(nullptr, 0), "graph");
    mtiaGraph_t g = nullptr;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphCreate(&g, 4), "flags");
    EXPECT_EQ(g, nullptr);
    Graph ok(0);
    ASSERT_OK(ok.status());
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphGetInfo(ok, nullptr), "info");
    mtiaGraphInfo zero{};
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphGetInfo(ok, &zero), "structSize");
    // A caller built against a shorter struct gets only what fits.
    mtiaGraphInfo shortInfo{};
    std::memset(&shortInfo, 0x5a, sizeof shortInfo);
    shortInfo.structSize = offsetof(mtiaGraphInfo, numNodes);
    ASSERT_OK(mtiaGraphGetInfo(ok, &shortInfo));
    EXPECT_EQ(shortInfo.state, mtiaGraphStateEmpty);
    EXPECT_EQ(shortInfo.numNodes, 0x5a5a5a5a5a5a5a5aull) << "wrote past structSize";
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphGetPool(ok, nullptr), "pool");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaGraphGetInfo(notAGraph(), &shortInfo), "graph");
}

TEST(GraphBadInput, CaptureArguments) {
    Stream s;
    ASSERT_OK(s.status());
    Graph g(0);
    ASSERT_OK(g.status());
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaGraphCaptureBegin(g, s, mtiaMemPoolId_t{0, 0}, badMode()), "mode");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamBeginCapture(s, badMode()), "mode");
    EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone);
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamIsCapturing(s, nullptr), "status");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamGetCaptureInfo(s, nullptr, nullptr), "status");
    mtiaStreamCaptureStatus st = mtiaStreamCaptureStatusActive;
    ASSERT_OK(mtiaStreamGetCaptureInfo(s, &st, nullptr));  // id is optional
    EXPECT_EQ(st, mtiaStreamCaptureStatusNone);

    ASSERT_OK(mtiaStreamBeginCapture(s, kGlobal));
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamEndCapture(s, nullptr), "graph");
    EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusActive)
        << "a refused end changed the capture";
    Graph captured;
    ASSERT_OK(mtiaStreamEndCapture(s, captured.out()));
    // A capture begun through mtiaStreamBeginCapture is not the graph object's to end, and vice
    // versa.
    ASSERT_OK(mtiaGraphCaptureBegin(g, s, mtiaMemPoolId_t{0, 0}, kGlobal));
    mtiaGraph_t other = nullptr;
    EXPECT_FAILS(mtiaErrorIllegalState, mtiaStreamEndCapture(s, &other), "mtiaGraphCaptureEnd");
    EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusActive);
    ASSERT_OK(mtiaGraphCaptureEnd(g));
}

TEST(GraphBadInput, EventRecordFlags) {
    Stream s;
    Event e;
    ASSERT_OK(s.status());
    ASSERT_OK(e.status());
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaEventRecordWithFlags(e, s, 2), "flags");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventRecordWithFlags(nullptr, s, 0), "event");
    // Outside capture the external flag changes nothing: an ordinary record.
    ASSERT_OK(mtiaEventRecordWithFlags(e, s, mtiaEventRecordExternal));
    ASSERT_OK(mtiaEventSynchronize(e));
}

TEST(GraphBadInput, DumpArguments) {
    Graph empty(0);
    ASSERT_OK(empty.status());
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphDebugDump(empty, nullptr), "dotPath");
    EXPECT_FAILS(mtiaErrorIllegalState, mtiaGraphDebugDump(empty, "/tmp/mtia_never_written.dot"),
                 "graph");
    Stream s;
    ASSERT_OK(s.status());
    Graph g;
    ASSERT_TRUE(captureInto(g, s, [&] {
        return mtiaLaunchHostFunc(
            s, [](void*) {}, nullptr);
    }));
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphDebugDump(g, "/nonexistent-dir/g.dot"), "dotPath");
}

TEST(GraphBadInput, ReplayOnAnotherDevicesStreamIsInvalidValue) {
    if (deviceCount() < 2) GTEST_SKIP() << "needs two devices";
    Stream s;
    ASSERT_OK(s.status());
    Graph g;
    int ran = 0;
    ASSERT_TRUE(captureInto(g, s, [&] {
        return mtiaLaunchHostFunc(
            s, [](void* p) { ++*static_cast<int*>(p); }, &ran);
    }));
    mtiaStream_t other = nullptr;
    ASSERT_OK(mtiaGetDefaultStream(1, &other));
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphReplay(g, other), "stream");
    ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_EQ(ran, 1);
}

// mtiaEventRecordExternal during capture: a record node, so the event completes on every replay
// after the work before it; and other streams may join the capture through it.
TEST(GraphBadInput, ExternalRecordNodeRecordsOnEveryReplay) {
    HostLog log;  // first: outlives the streams and the graph that run its host functions
    Stream s, t;
    Event e;
    ASSERT_OK(s.status());
    ASSERT_OK(t.status());
    ASSERT_OK(e.status());
    Graph g;
    ASSERT_OK(mtiaStreamBeginCapture(s, kGlobal));
    {
        EndCaptureAtExit guard({s, t});
        ASSERT_OK(log.append(s, 1));
        ASSERT_OK(mtiaEventRecordWithFlags(e, s, mtiaEventRecordExternal));
        ASSERT_OK(mtiaStreamWaitEvent(t, e, 0));  // t joins through the record node
        ASSERT_OK(log.append(t, 2));
        ASSERT_OK(mtiaEventRecord(e, t));
        ASSERT_OK(mtiaStreamWaitEvent(s, e, 0));
        ASSERT_OK(mtiaStreamEndCapture(s, g.out()));
    }
    EXPECT_EQ(graphInfo(g).numNodes, 3u);
    EXPECT_EQ(log.size(), 0u);
    for (int r = 0; r < 3; ++r) {
        Latch latch;
        ASSERT_OK(latch.block(s));
        ASSERT_OK(mtiaGraphReplay(g, s));
        EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e))
            << "replay " << r << ": the record ran before its work";
        latch.open();
        ASSERT_OK(mtiaEventSynchronize(e));
        ASSERT_OK(mtiaStreamSynchronize(s));
    }
    EXPECT_EQ(log.values(), (std::vector<int>{1, 2, 1, 2, 1, 2}));
}

}  // namespace
