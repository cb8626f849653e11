// Conformance: the graph object (PyTorch's MTIAGraph: create with or without mtiaGraphKeepGraph,
// capture begin/end, instantiate, replay, reset, pool, destroy) and the private memory pools of
// captures (streams-graphs-anchors.md (c), items 76-90). Pool tests read reserved bytes
// (mtiaMemoryGetStats, reserved_bytes[mtiaStatAll].current) against a baseline taken with every
// device idle and the default caches emptied; sizes of 10 MiB and more get segments of their own
// (rounded to 2 MiB), so the expected deltas are exact. Semantics as in mtia_graph.h; uses only the
// public header.
#include "graph_test_util.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <iterator>

extern char** environ;

using namespace mtia_test;

namespace {

constexpr mtiaStreamCaptureMode kGlobal = mtiaStreamCaptureModeGlobal;
constexpr uint64_t kN = 1024;  // floats the kernels touch

int64_t mib(int64_t n) {
    return n * static_cast<int64_t>(kMiB);
}

class GraphPools : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_OK(mtiaSetDevice(0));
        ASSERT_OK(mtiaDeviceSynchronize());
        ASSERT_OK(mtiaEmptyCache());
    }
};

// The set-up most pool tests share: a stream o and x (kN floats filled with value on o), then base,
// the settled reserved bytes with them in place.
struct StreamWithInput {
    Stream o;
    DeviceFloats x{kN};
    int64_t base = 0;

    void setUp(float value) {
        ASSERT_CREATED(o, x);
        ASSERT_TRUE(fillNow(o, x, value, kN));
        base = settledReserved();
    }
};

// Ends g's capture on s at scope exit if it is still live (a failed assertion mid-capture).
class ResetIfCapturing {
public:
    ResetIfCapturing(mtiaGraph_t g, mtiaStream_t s) : g_(g), s_(s) {}
    ~ResetIfCapturing() {
        mtiaStreamCaptureStatus st = mtiaStreamCaptureStatusNone;
        if (mtiaStreamIsCapturing(s_, &st) == mtiaSuccess && st != mtiaStreamCaptureStatusNone)
            mtiaGraphReset(g_);
    }
    ResetIfCapturing(const ResetIfCapturing&) = delete;
    ResetIfCapturing& operator=(const ResetIfCapturing&) = delete;

private:
    mtiaGraph_t g_;
    mtiaStream_t s_;
};

// Captures into g on s (pool as given): tmp (16 MiB, freed inside the capture) = k * x, then
// *out (12 MiB, left live) = tmp + x, so a replay gives out = (k + 1) * x in the first kN floats.
::testing::AssertionResult captureThroughTemp(mtiaGraph_t g, mtiaStream_t s, mtiaMemPoolId_t pool,
                                              const float* x, float k, float** out,
                                              size_t outBytes = 12 * kMiB) {
    mtiaError_t rc = mtiaGraphCaptureBegin(g, s, pool, kGlobal);
    if (rc != mtiaSuccess)
        return ::testing::AssertionFailure() << "mtiaGraphCaptureBegin: " << mtiaGetErrorName(rc)
                                             << ": " << mtiaGetLastErrorMessage();
    ResetIfCapturing guard(g, s);
    float* tmp = floatsOn(16 * kMiB / sizeof(float), s);
    *out = floatsOn(outBytes / sizeof(float), s);
    if (tmp == nullptr || *out == nullptr)
        return ::testing::AssertionFailure() << "allocation during capture failed";
    rc = launchScale(s, tmp, x, k, kN);
    if (rc == mtiaSuccess) rc = launchAdd(s, *out, tmp, x, kN);
    if (rc == mtiaSuccess) rc = mtiaFree(tmp);
    if (rc == mtiaSuccess) rc = mtiaGraphCaptureEnd(g);
    if (rc != mtiaSuccess)
        return ::testing::AssertionFailure()
               << "capture failed: " << mtiaGetErrorName(rc) << ": " << mtiaGetLastErrorMessage();
    return ::testing::AssertionSuccess();
}

}  // namespace

// 76. Without mtiaGraphKeepGraph capture end instantiates (state Ready); replay works; instantiate
// afterwards is refused and changes nothing.
TEST_F(GraphPools, T76_WithoutKeepGraphInstantiatedAtCaptureEnd) {
    Stream s;
    ASSERT_OK(s.status());
    DeviceFloats x(kN), y(kN);
    ASSERT_TRUE(fillNow(s, x, 2.0f, kN));
    ASSERT_TRUE(fillNow(s, y, -1.0f, kN));
    Graph g(0);
    ASSERT_OK(g.status());
    mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.state, mtiaGraphStateEmpty);
    EXPECT_EQ(info.captureId, 0u);
    EXPECT_EQ(info.device, -1);
    EXPECT_EQ(info.instantiated, 0);

    ASSERT_OK(mtiaGraphCaptureBegin(g, s, kNewPool, kGlobal));
    {
        ResetIfCapturing guard(g, s);
        info = graphInfo(g);
        EXPECT_EQ(info.state, mtiaGraphStateCapturing);
        EXPECT_NE(info.captureId, 0u);
        EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusActive);
        EXPECT_EQ(captureId(s), info.captureId);
        ASSERT_OK(launchScale(s, y, x, 2.0f, kN));
        ASSERT_OK(mtiaGraphCaptureEnd(g));
    }
    EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone);
    info = graphInfo(g);
    EXPECT_EQ(info.state, mtiaGraphStateReady);
    EXPECT_EQ(info.instantiated, 1);
    EXPECT_EQ(info.hasTemplate, 0);
    EXPECT_EQ(info.device, 0);
    EXPECT_EQ(info.numReplays, 0u);
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, -1.0f)) << "the capture ran its work";

    ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 4.0f));
    EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphInstantiate(g));
    EXPECT_EQ(graphInfo(g).state, mtiaGraphStateReady);
    ASSERT_TRUE(fillNow(s, x, 5.0f, kN));
    ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 10.0f));
    EXPECT_EQ(graphInfo(g).numReplays, 2u);
}

// 77. With mtiaGraphKeepGraph: no executable after capture end; the first replay instantiates;
// explicit instantiation may be repeated; the graph of mtiaStreamEndCapture behaves the same.
TEST_F(GraphPools, T77_KeepGraphInstantiatesOnReplayAndAgain) {
    Stream s;
    ASSERT_OK(s.status());
    DeviceFloats x(kN), y(kN);
    ASSERT_TRUE(fillNow(s, x, 2.0f, kN));
    ASSERT_TRUE(fillNow(s, y, -1.0f, kN));
    Graph g(mtiaGraphKeepGraph);
    ASSERT_OK(g.status());
    ASSERT_OK(mtiaGraphCaptureBegin(g, s, kNewPool, kGlobal));
    {
        ResetIfCapturing guard(g, s);
        ASSERT_OK(launchScale(s, y, x, 3.0f, kN));
        ASSERT_OK(mtiaGraphCaptureEnd(g));
    }
    mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.state, mtiaGraphStateCaptured);
    EXPECT_EQ(info.hasTemplate, 1);
    EXPECT_EQ(info.instantiated, 0);
    EXPECT_EQ(info.numNodes, 1u);

    ASSERT_OK(mtiaGraphReplay(g, s));  // instantiates first
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 6.0f));
    info = graphInfo(g);
    EXPECT_EQ(info.state, mtiaGraphStateReady);
    EXPECT_EQ(info.instantiated, 1);
    EXPECT_EQ(info.hasTemplate, 1);

    EXPECT_OK(mtiaGraphInstantiate(g));
    EXPECT_OK(mtiaGraphInstantiate(g));
    info = graphInfo(g);
    EXPECT_EQ(info.state, mtiaGraphStateReady);
    EXPECT_EQ(info.instantiated, 1);
    ASSERT_TRUE(fillNow(s, x, 7.0f, kN));
    ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 21.0f))
        << "the re-instantiated graph computes something else";
    EXPECT_EQ(graphInfo(g).numReplays, 2u);

    // mtiaStreamEndCapture's graph is kept too: explicit instantiation, twice, then replay.
    Graph e;
    ASSERT_TRUE(captureInto(e, s, [&] { return launchScale(s, y, x, 0.5f, kN); }));
    info = graphInfo(e);
    EXPECT_EQ(info.state, mtiaGraphStateCaptured);
    EXPECT_EQ(info.instantiated, 0);
    EXPECT_OK(mtiaGraphInstantiate(e));
    EXPECT_EQ(graphInfo(e).state, mtiaGraphStateReady);
    EXPECT_OK(mtiaGraphInstantiate(e));
    ASSERT_OK(mtiaGraphReplay(e, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 3.5f));
}

// 78. Replay, pool, instantiate and dump before a successful capture, and capture end without
// begin: mtiaErrorIllegalState with a message; the same after a failed capture.
TEST_F(GraphPools, T78_MisuseBeforeASuccessfulCaptureIsIllegalState) {
    Stream s;
    ASSERT_OK(s.status());
    for (unsigned flags : {0u, mtiaGraphKeepGraph}) {
        SCOPED_TRACE("flags " + std::to_string(flags));
        Graph g(flags);
        ASSERT_OK(g.status());
        mtiaMemPoolId_t pool{7, 7};
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphReplay(g, s));
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphGetPool(g, &pool));
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphInstantiate(g));
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphCaptureEnd(g));
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState,
                             mtiaGraphDebugDump(g, "/tmp/mtia_graph_t78.dot"));
        EXPECT_EQ(pool.first, 7u);
        EXPECT_EQ(graphInfo(g).state, mtiaGraphStateEmpty);
        EXPECT_EQ(graphInfo(g).numReplays, 0u);

        // A failed capture is not a successful one.
        ASSERT_OK(mtiaGraphCaptureBegin(g, s, kNewPool, kGlobal));
        {
            ResetIfCapturing guard(g, s);
            ASSERT_OK(launchNoop(s));
            EXPECT_STATUS(mtiaErrorStreamCaptureUnsupported, mtiaStreamQuery(s));
            EXPECT_STATUS(mtiaErrorStreamCaptureInvalidated, mtiaGraphCaptureEnd(g));
        }
        EXPECT_EQ(graphInfo(g).state, mtiaGraphStateFailed);
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphReplay(g, s));
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphGetPool(g, &pool));
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphInstantiate(g));
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState, mtiaGraphCaptureEnd(g));
        EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone);
    }
}

// 79. Capture begin while the graph holds a captured graph: refused, nothing changes; after reset
// the graph captures new work and replays that.
TEST_F(GraphPools, T79_CaptureAgainOnlyAfterReset) {
    Stream s, s2;
    DeviceFloats x(kN), y(kN);
    ASSERT_CREATED(s, s2);
    ASSERT_TRUE(fillNow(s, x, 2.0f, kN));
    for (unsigned flags : {0u, mtiaGraphKeepGraph}) {
        SCOPED_TRACE("flags " + std::to_string(flags));
        Graph g(flags);
        ASSERT_OK(mtiaGraphCaptureBegin(g, s, kNewPool, kGlobal));
        {
            ResetIfCapturing guard(g, s);
            ASSERT_OK(launchScale(s, y, x, 2.0f, kN));
            ASSERT_OK(mtiaGraphCaptureEnd(g));
        }
        const mtiaGraphInfo first = graphInfo(g);
        EXPECT_FAILS_CLEARLY(mtiaErrorIllegalState,
                             mtiaGraphCaptureBegin(g, s2, kNewPool, kGlobal));
        EXPECT_EQ(captureStatus(s2), mtiaStreamCaptureStatusNone);
        EXPECT_EQ(graphInfo(g).state, first.state);
        ASSERT_OK(mtiaGraphReplay(g, s));
        ASSERT_OK(mtiaStreamSynchronize(s));
        EXPECT_TRUE(allEqual(readBack(y, kN), kN, 4.0f));

        ASSERT_OK(mtiaGraphReset(g));
        mtiaGraphInfo info = graphInfo(g);
        EXPECT_EQ(info.state, mtiaGraphStateEmpty);
        EXPECT_EQ(info.instantiated, 0);
        EXPECT_EQ(info.hasTemplate, 0);
        EXPECT_STATUS(mtiaErrorIllegalState, mtiaGraphReplay(g, s));

        ASSERT_OK(mtiaGraphCaptureBegin(g, s2, kNewPool, kGlobal));
        {
            ResetIfCapturing guard(g, s2);
            ASSERT_OK(launchScale(s2, y, x, 3.0f, kN));
            ASSERT_OK(launchAdd(s2, y, y, x, kN));
            ASSERT_OK(mtiaGraphCaptureEnd(g));
        }
        info = graphInfo(g);
        EXPECT_NE(info.captureId, first.captureId);
        if (flags == mtiaGraphKeepGraph) {
            EXPECT_EQ(info.numNodes, 2u);
        }
        ASSERT_TRUE(fillNow(s, y, -1.0f, kN));
        ASSERT_OK(mtiaGraphReplay(g, s));
        ASSERT_OK(mtiaStreamSynchronize(s));
        EXPECT_TRUE(allEqual(readBack(y, kN), kN, 8.0f))
            << "the replay did not run the new capture";
    }
}

// 80. Reset, reset, destroy: no double release (reserved memory back to the baseline, not below),
// the handle is stale afterwards; destroy of never-captured and NULL graphs.
TEST_F(GraphPools, T80_ResetResetDestroy) {
    StreamWithInput in;
    ASSERT_NO_FATAL_FAILURE(in.setUp(1.0f));
    Stream& s = in.o;
    DeviceFloats& x = in.x;
    const int64_t base = in.base;
    mtiaGraph_t g = nullptr;
    ASSERT_OK(mtiaGraphCreate(&g, 0));
    OnExit destroy([&] {
        if (g != nullptr) mtiaGraphDestroy(g);
    });
    float* out = nullptr;
    ASSERT_TRUE(captureThroughTemp(g, s, kNewPool, x, 2.0f, &out));
    ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(out, kN), kN, 3.0f));
    ASSERT_OK(mtiaFree(out));
    EXPECT_EQ(settledReserved() - base, mib(28));

    EXPECT_OK(mtiaGraphReset(g));
    EXPECT_OK(mtiaGraphReset(g));
    EXPECT_EQ(graphInfo(g).state, mtiaGraphStateEmpty);
    EXPECT_EQ(settledReserved(), base);
    EXPECT_OK(mtiaGraphDestroy(g));
    const mtiaGraph_t stale = g;
    g = nullptr;
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaGraphDestroy(stale));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaGraphReset(stale));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaGraphReplay(stale, s));
    EXPECT_EQ(settledReserved(), base);

    EXPECT_OK(mtiaGraphDestroy(nullptr));
    mtiaGraph_t fresh = nullptr;
    ASSERT_OK(mtiaGraphCreate(&fresh, mtiaGraphKeepGraph));
    EXPECT_OK(mtiaGraphReset(fresh));
    EXPECT_OK(mtiaGraphReset(fresh));
    EXPECT_OK(mtiaGraphDestroy(fresh));

    // The allocator and the graphs still work.
    Graph again(0);
    float* out2 = nullptr;
    ASSERT_TRUE(captureThroughTemp(again, s, kNewPool, x, 4.0f, &out2));
    ASSERT_OK(mtiaGraphReplay(again, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(out2, kN), kN, 5.0f));
    ASSERT_OK(mtiaFree(out2));
}

// 81. During a capture, allocations on the capture stream (mtiaMallocAsync, and mtiaMalloc with it
// as the current stream) and on a joined stream come from the private pool (kept after the capture,
// untouched by mtiaEmptyCache); one on an unrelated stream does not.
TEST_F(GraphPools, T81_CaptureAllocationsComeFromThePrivatePool) {
    Stream o, side, u;
    Event e1, e2;
    ASSERT_CREATED(o, side, u);
    const int64_t base = settledReserved();
    Graph g(0);
    void *viaCurrent = nullptr, *onO = nullptr, *onSide = nullptr, *onU = nullptr;
    OnExit freeAll([&] {
        for (void* p : {viaCurrent, onO, onSide, onU}) mtiaFree(p);
    });
    ASSERT_OK(mtiaGraphCaptureBegin(g, o, kNewPool, kGlobal));
    {
        ResetIfCapturing guard(g, o);
        mtiaStream_t previous = nullptr;
        ASSERT_OK(mtiaGetCurrentStream(0, &previous));
        ASSERT_OK(mtiaSetCurrentStream(o));
        const mtiaError_t rcCurrent = mtiaMalloc(&viaCurrent, 10 * kMiB);
        ASSERT_OK(mtiaSetCurrentStream(previous));
        ASSERT_OK(rcCurrent);
        ASSERT_NE(onO = mallocOn(12 * kMiB, o), nullptr);
        ASSERT_OK(mtiaEventRecord(e1, o));
        ASSERT_OK(mtiaStreamWaitEvent(side, e1, 0));
        ASSERT_EQ(captureStatus(side), mtiaStreamCaptureStatusActive);
        ASSERT_NE(onSide = mallocOn(14 * kMiB, side), nullptr);
        ASSERT_NE(onU = mallocOn(16 * kMiB, u), nullptr);
        ASSERT_OK(launchFill(o, static_cast<float*>(onO), 1.0f, kN));
        ASSERT_OK(launchFill(side, static_cast<float*>(onSide), 2.0f, kN));
        ASSERT_OK(launchFill(u, static_cast<float*>(onU), 3.0f, kN));  // eager
        ASSERT_OK(mtiaEventRecord(e2, side));
        ASSERT_OK(mtiaStreamWaitEvent(o, e2, 0));
        ASSERT_OK(mtiaGraphCaptureEnd(g));
    }
    mtiaMemPoolId_t pool{};
    ASSERT_OK(mtiaGraphGetPool(g, &pool));
    EXPECT_NE(pool.first, 0u);
    EXPECT_EQ(pool.second, 0u);
    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.pool.first, pool.first);
    EXPECT_EQ(info.pool.second, pool.second);
    ASSERT_OK(mtiaStreamSynchronize(u));
    EXPECT_TRUE(allEqual(readBack(static_cast<float*>(onU), kN), kN, 3.0f))
        << "eager work on u did not run";

    for (void** p : {&viaCurrent, &onO, &onSide, &onU}) {
        ASSERT_OK(mtiaFree(*p));
        *p = nullptr;
    }
    EXPECT_EQ(settledReserved() - base, mib(10 + 12 + 14))
        << "expected the pool to hold 10 MiB (mtiaMalloc, current stream o) + 12 MiB (o) + 14 MiB "
           "(joined side), "
           "and the 16 MiB of unrelated stream u to go back with mtiaEmptyCache";
    g.reset();
    EXPECT_EQ(settledReserved(), base);
}

// 82. A block freed mid-capture is reused by the next allocation of that size in the capture (same
// address); the pool reserves the high-water mark.
TEST_F(GraphPools, T82_FreedBlockReusedAtTheSameAddress) {
    Stream o;
    ASSERT_OK(o.status());
    const int64_t base = settledReserved();
    Graph g(0);
    float *a = nullptr, *b = nullptr, *c = nullptr;
    void *s1 = nullptr, *s2 = nullptr;
    OnExit freeAll([&] {
        for (void* p : {static_cast<void*>(b), static_cast<void*>(c), s2}) mtiaFree(p);
    });
    ASSERT_OK(mtiaGraphCaptureBegin(g, o, kNewPool, kGlobal));
    {
        ResetIfCapturing guard(g, o);
        ASSERT_NE(a = floatsOn(12 * kMiB / 4, o), nullptr);
        ASSERT_OK(launchFill(o, a, 1.0f, kN));
        ASSERT_OK(mtiaFree(a));
        ASSERT_NE(b = floatsOn(12 * kMiB / 4, o), nullptr);
        EXPECT_EQ(b, a) << "the block freed during the capture was not reused";
        ASSERT_NE(c = floatsOn(12 * kMiB / 4, o), nullptr);
        EXPECT_NE(c, a);
        ASSERT_OK(launchFill(o, b, 2.0f, kN));
        ASSERT_OK(launchFill(o, c, 3.0f, kN));
        ASSERT_NE(s1 = mallocOn(4096, o), nullptr);
        ASSERT_OK(mtiaFree(s1));
        ASSERT_NE(s2 = mallocOn(4096, o), nullptr);
        EXPECT_EQ(s2, s1) << "the small block freed during the capture was not reused";
        ASSERT_OK(mtiaGraphCaptureEnd(g));
    }
    EXPECT_EQ(settledReserved() - base, mib(12 + 12 + 2))
        << "the pool does not reserve its high-water mark";
    ASSERT_OK(mtiaGraphReplay(g, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(b, kN), kN, 2.0f));
    EXPECT_TRUE(allEqual(readBack(c, kN), kN, 3.0f));
}

// 83. After the capture mtiaEmptyCache leaves the pool reserved (its blocks freed or not); after
// reset with every pool block freed, reserved memory is back at the pre-capture baseline.
TEST_F(GraphPools, T83_EmptyCacheKeepsPoolThenBaseline) {
    StreamWithInput in;
    ASSERT_NO_FATAL_FAILURE(in.setUp(2.0f));
    Stream& o = in.o;
    DeviceFloats& x = in.x;
    const int64_t base = in.base;
    Graph g(0);
    float* out = nullptr;
    OnExit freeOut([&] { mtiaFree(out); });
    ASSERT_TRUE(captureThroughTemp(g, o, kNewPool, x, 2.0f, &out));
    EXPECT_EQ(settledReserved() - base, mib(16 + 12)) << "mtiaEmptyCache took the pool's memory";
    ASSERT_OK(mtiaGraphReplay(g, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(out, kN), kN, 6.0f));
    ASSERT_OK(mtiaFree(out));
    out = nullptr;
    EXPECT_EQ(settledReserved() - base, mib(16 + 12))
        << "the pool gave memory back while its graph lives";
    ASSERT_OK(mtiaGraphReset(g));
    EXPECT_EQ(settledReserved(), base);
}

// 84. Reset while an output allocated from the pool is alive: its memory (and contents) stay until
// it is freed, and then go back without mtiaEmptyCache.
TEST_F(GraphPools, T84_ResetWithALiveOutputKeepsItsMemoryUntilFreed) {
    StreamWithInput in;
    ASSERT_NO_FATAL_FAILURE(in.setUp(2.0f));
    Stream& o = in.o;
    DeviceFloats& x = in.x;
    const int64_t base = in.base;
    Graph g(0);
    float* out = nullptr;
    OnExit freeOut([&] { mtiaFree(out); });
    ASSERT_TRUE(captureThroughTemp(g, o, kNewPool, x, 2.0f, &out));
    ASSERT_OK(mtiaGraphReplay(g, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    ASSERT_OK(mtiaGraphReset(g));
    // The pool has no user left: its cached segment (the temporary's) goes back now, the live
    // output's segment stays until the output is freed (mtiaMemPoolRelease's rule).
    EXPECT_EQ(settledReserved() - base, mib(12))
        << "expected only the live output's 12 MiB segment to stay";
    EXPECT_TRUE(allEqual(readBack(out, kN), kN, 6.0f)) << "the live output changed after reset";
    ASSERT_OK(mtiaFree(out));
    out = nullptr;
    EXPECT_EQ(reserved(), base)
        << "freeing the last block of a reset graph's pool did not give the memory back";
    EXPECT_EQ(settledReserved(), base);
}

// 85. g2 captured into g1's pool: less reserved than two pools; replaying g1 then g2 gives both
// results; resetting g1 keeps the pool for g2, which replays correctly; everything goes back at the
// end.
TEST_F(GraphPools, T85_SharedPoolReservesLessAndOutlivesTheFirstGraph) {
    StreamWithInput in;
    ASSERT_NO_FATAL_FAILURE(in.setUp(2.0f));
    Stream& o = in.o;
    DeviceFloats& x = in.x;
    const int64_t base = in.base;

    // Two private pools: each holds its 16 MiB temporary and 12 MiB output.
    int64_t twoPools = 0;
    {
        Graph g1(0), g2(0);
        float *out1 = nullptr, *out2 = nullptr;
        OnExit freeOuts([&] {
            mtiaFree(out1);
            mtiaFree(out2);
        });
        ASSERT_TRUE(captureThroughTemp(g1, o, kNewPool, x, 2.0f, &out1));
        ASSERT_TRUE(captureThroughTemp(g2, o, kNewPool, x, 3.0f, &out2));
        twoPools = settledReserved() - base;
        EXPECT_EQ(twoPools, mib(2 * (16 + 12)));
    }
    EXPECT_EQ(settledReserved(), base);

    // g4 shares g3's pool: its temporary reuses g3's freed one.
    Graph g3(0), g4(0);
    float *out3 = nullptr, *out4 = nullptr;
    OnExit freeOuts([&] {
        mtiaFree(out3);
        mtiaFree(out4);
    });
    ASSERT_TRUE(captureThroughTemp(g3, o, kNewPool, x, 2.0f, &out3));
    mtiaMemPoolId_t pool{};
    ASSERT_OK(mtiaGraphGetPool(g3, &pool));
    ASSERT_TRUE(captureThroughTemp(g4, o, pool, x, 3.0f, &out4));
    mtiaMemPoolId_t pool4{};
    ASSERT_OK(mtiaGraphGetPool(g4, &pool4));
    EXPECT_EQ(pool4.first, pool.first);
    EXPECT_EQ(pool4.second, pool.second);
    const int64_t shared = settledReserved() - base;
    EXPECT_LT(shared, twoPools);
    EXPECT_EQ(shared, mib(16 + 12 + 12));

    ASSERT_TRUE(fillNow(o, x, 5.0f, kN));
    ASSERT_OK(mtiaGraphReplay(g3, o));
    ASSERT_OK(mtiaGraphReplay(g4, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(out3, kN), kN, 15.0f));
    EXPECT_TRUE(allEqual(readBack(out4, kN), kN, 20.0f));

    ASSERT_OK(mtiaGraphReset(g3));
    ASSERT_OK(mtiaFree(out3));
    out3 = nullptr;
    EXPECT_EQ(settledReserved() - base, shared)
        << "the shared pool gave memory back while g4 uses it";
    ASSERT_TRUE(fillNow(o, x, 7.0f, kN));
    ASSERT_OK(mtiaGraphReplay(g4, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(out4, kN), kN, 28.0f));

    g4.reset();
    ASSERT_OK(mtiaFree(out4));
    out4 = nullptr;
    EXPECT_EQ(settledReserved(), base);
}

// 86. Failed captures (illegal synchronisation inside) end with an error; reset, destroy, or the
// failed mtiaStreamEndCapture return reserved memory to the baseline once the blocks are freed.
TEST_F(GraphPools, T86_FailedCaptureReleasesItsPool) {
    Stream o;
    ASSERT_OK(o.status());
    const int64_t base = settledReserved();

    // (a) Graph object, then reset.
    {
        Graph g(0);
        float* p = nullptr;
        OnExit freeP([&] { mtiaFree(p); });
        ASSERT_OK(mtiaGraphCaptureBegin(g, o, kNewPool, kGlobal));
        {
            ResetIfCapturing guard(g, o);
            ASSERT_NE(p = floatsOn(12 * kMiB / 4, o), nullptr);
            ASSERT_OK(launchFill(o, p, 1.0f, kN));
            EXPECT_STATUS(mtiaErrorStreamCaptureUnsupported, mtiaStreamSynchronize(o));
            EXPECT_EQ(captureStatus(o), mtiaStreamCaptureStatusInvalidated);
            EXPECT_STATUS(mtiaErrorStreamCaptureInvalidated, mtiaGraphCaptureEnd(g));
        }
        EXPECT_EQ(captureStatus(o), mtiaStreamCaptureStatusNone);
        EXPECT_EQ(graphInfo(g).state, mtiaGraphStateFailed);
        ASSERT_OK(mtiaFree(p));
        p = nullptr;
        EXPECT_EQ(settledReserved() - base, mib(12)) << "a failed graph holds its pool until reset";
        ASSERT_OK(mtiaGraphReset(g));
        EXPECT_EQ(settledReserved(), base) << "reset of a failed graph kept its pool";
    }

    // (b) Graph object, destroyed while a pool block is still live.
    {
        mtiaGraph_t g = nullptr;
        ASSERT_OK(mtiaGraphCreate(&g, 0));
        OnExit destroy([&] {
            if (g != nullptr) mtiaGraphDestroy(g);
        });
        float* p = nullptr;
        OnExit freeP([&] { mtiaFree(p); });
        ASSERT_OK(mtiaGraphCaptureBegin(g, o, kNewPool, kGlobal));
        {
            ResetIfCapturing guard(g, o);
            ASSERT_NE(p = floatsOn(14 * kMiB / 4, o), nullptr);
            EXPECT_STATUS(mtiaErrorStreamCaptureUnsupported, mtiaStreamQuery(o));
            EXPECT_STATUS(mtiaErrorStreamCaptureInvalidated, mtiaGraphCaptureEnd(g));
        }
        ASSERT_OK(mtiaGraphDestroy(g));
        g = nullptr;
        EXPECT_EQ(settledReserved() - base, mib(14)) << "the live block's memory went back";
        ASSERT_OK(mtiaFree(p));
        p = nullptr;
        EXPECT_EQ(settledReserved(), base) << "destroy of a failed graph kept its pool";
    }

    // (c) mtiaStreamBeginCapture: the failed mtiaStreamEndCapture releases the pool.
    {
        float* p = nullptr;
        OnExit freeP([&] { mtiaFree(p); });
        ASSERT_OK(mtiaStreamBeginCapture(o, kGlobal));
        {
            EndCaptureAtExit guard({o.get()});
            ASSERT_NE(p = floatsOn(16 * kMiB / 4, o), nullptr);
            ASSERT_OK(launchFill(o, p, 1.0f, kN));
            EXPECT_STATUS(mtiaErrorStreamCaptureUnsupported, mtiaStreamSynchronize(o));
            mtiaGraph_t g = notAGraph();
            EXPECT_STATUS(mtiaErrorStreamCaptureInvalidated, mtiaStreamEndCapture(o, &g));
            EXPECT_EQ(g, nullptr);
        }
        ASSERT_OK(mtiaFree(p));
        p = nullptr;
        EXPECT_EQ(settledReserved(), base) << "the failed capture's pool was not released";
    }
    // The stream works eagerly.
    DeviceFloats y(kN);
    ASSERT_TRUE(fillNow(o, y, 4.0f, kN));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 4.0f));
}

// 87. Capturing into a pool nobody uses any more (its graph was reset and holds no block), into an
// id never given out, or with both halves set: mtiaErrorInvalidValue with a message, nothing
// begins.
TEST_F(GraphPools, T87_CaptureIntoAPoolNoLongerInUseIsInvalidValue) {
    Stream o2;
    ASSERT_OK(o2.status());
    StreamWithInput in;
    ASSERT_NO_FATAL_FAILURE(in.setUp(1.0f));
    Stream& o = in.o;
    DeviceFloats& x = in.x;
    const int64_t base = in.base;
    Graph g1(0), g2(0), g3(0);
    float *out1 = nullptr, *out2 = nullptr;
    OnExit freeOuts([&] {
        mtiaFree(out1);
        mtiaFree(out2);
    });
    ASSERT_TRUE(captureThroughTemp(g1, o, kNewPool, x, 2.0f, &out1));
    mtiaMemPoolId_t pool{};
    ASSERT_OK(mtiaGraphGetPool(g1, &pool));
    // While g1 lives its pool may be shared.
    ASSERT_TRUE(captureThroughTemp(g2, o2, pool, x, 3.0f, &out2));
    ASSERT_OK(mtiaFree(out1));
    ASSERT_OK(mtiaFree(out2));
    out1 = out2 = nullptr;
    ASSERT_OK(mtiaGraphReset(g2));
    ASSERT_OK(mtiaGraphReset(g1));
    EXPECT_EQ(settledReserved(), base);

    EXPECT_FAILS_CLEARLY(mtiaErrorInvalidValue, mtiaGraphCaptureBegin(g3, o, pool, kGlobal));
    EXPECT_EQ(captureStatus(o), mtiaStreamCaptureStatusNone);
    EXPECT_EQ(graphInfo(g3).state, mtiaGraphStateEmpty);
    const mtiaMemPoolId_t never{pool.first + 1000000, 0};
    EXPECT_FAILS_CLEARLY(mtiaErrorInvalidValue, mtiaGraphCaptureBegin(g3, o, never, kGlobal));
    mtiaMemPoolId_t handle{};
    ASSERT_OK(mtiaGraphPoolHandle(&handle));
    const mtiaMemPoolId_t both{pool.first, handle.second};
    EXPECT_FAILS_CLEARLY(mtiaErrorInvalidValue, mtiaGraphCaptureBegin(g3, o, both, kGlobal));
    EXPECT_EQ(captureStatus(o), mtiaStreamCaptureStatusNone);
    EXPECT_EQ(graphInfo(g3).state, mtiaGraphStateEmpty);
    EXPECT_TRUE(fillNow(o, x, 2.0f, kN)) << "the stream is not usable eagerly";

    // g3 itself is fine: a fresh pool, and a user pool handle, both work.
    for (const mtiaMemPoolId_t p : {kNewPool, handle}) {
        float* out = nullptr;
        ASSERT_TRUE(captureThroughTemp(g3, o, p, x, 1.0f, &out));
        ASSERT_OK(mtiaGraphReplay(g3, o));
        ASSERT_OK(mtiaStreamSynchronize(o));
        EXPECT_TRUE(allEqual(readBack(out, kN), kN, 4.0f));
        ASSERT_OK(mtiaFree(out));
        ASSERT_OK(mtiaGraphReset(g3));
    }
}

// 88. Destroy while the last replay is in flight: mtiaGraphDestroy waits for it, the replay
// completes correctly, and the pool's memory goes back only afterwards.
TEST_F(GraphPools, T88_DestroyDuringReplayWaitsForIt) {
    Gate gate;
    Stream o, r;
    DeviceFloats out(kN);
    ASSERT_CREATED(o, r);
    ASSERT_TRUE(fillNow(r, out, -1.0f, kN));
    const int64_t base = settledReserved();
    mtiaGraph_t g = nullptr;
    ASSERT_OK(mtiaGraphCreate(&g, 0));
    OnExit destroy([&] {
        gate.open();
        if (g != nullptr) mtiaGraphDestroy(g);
    });
    ASSERT_OK(mtiaGraphCaptureBegin(g, o, kNewPool, kGlobal));
    {
        ResetIfCapturing guard(g, o);
        float* tmp = floatsOn(16 * kMiB / 4, o);
        ASSERT_NE(tmp, nullptr);
        ASSERT_OK(gate.enqueue(o));
        ASSERT_OK(launchFill(o, tmp, 5.0f, kN));
        ASSERT_OK(launchCopy(o, out, tmp, kN));
        ASSERT_OK(mtiaFree(tmp));
        ASSERT_OK(mtiaGraphCaptureEnd(g));
    }
    ASSERT_EQ(settledReserved() - base, mib(16));

    ASSERT_OK(mtiaGraphReplay(g, r));
    ASSERT_TRUE(gate.waitEntered(1));
    mtiaError_t destroyed = mtiaErrorUnknown;
    {
        const mtiaGraph_t handle = g;
        g = nullptr;
        Async call([&] { destroyed = mtiaGraphDestroy(handle); }, [&] { gate.open(); });
        EXPECT_FALSE(call.waitFor(kSettle))
            << "mtiaGraphDestroy returned while its replay was in flight";
        EXPECT_EQ(reserved() - base, mib(16)) << "the pool's memory went back while the replay ran";
        gate.open();
        ASSERT_TRUE(call.waitFor(kHang));
    }
    EXPECT_EQ(destroyed, mtiaSuccess) << mtiaGetErrorName(destroyed);
    ASSERT_OK(mtiaStreamSynchronize(r));
    EXPECT_TRUE(allEqual(readBack(out, kN), kN, 5.0f)) << "the replay did not complete";
    EXPECT_EQ(settledReserved(), base) << "the destroyed graph's pool kept its memory";
}

// 89. What the ABI shows of "the allocator frees nothing while a capture is active": during a
// capture that allocates and frees on the capture stream and on a joined stream, frees blocks named
// with mtiaRecordStream, and allocates and frees on an unrelated stream, num_device_free never
// changes and a free changes neither it nor reserved bytes; a block recorded on a busy stream is
// not reused during the capture. Round 0 captures into a fresh pool (reserved bytes only grow, by
// its new segments); round 1 repeats the capture into round 0's pool, whose cached blocks serve
// every request, so reserved bytes do not change at all.
TEST_F(GraphPools, T89_NoDeviceFreeDuringCapture) {
    Stream o, side, u;
    Event e1, e2;
    ASSERT_CREATED(o, side, u);
    // Cached default-pool memory an eager allocator could give back.
    ASSERT_OK(mtiaFree(mallocOn(24 * kMiB, o)));
    Graph g0(0), g1(0);
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(round == 0 ? "round 0: fresh pool" : "round 1: into round 0's pool");
        Graph& g = round == 0 ? g0 : g1;
        mtiaMemPoolId_t pool = kNewPool;
        if (round == 1) {
            ASSERT_OK(mtiaGraphGetPool(g0, &pool));
        }
        Latch latch;
        ASSERT_OK(latch.block(u));    // u stays busy through the capture
        void* q = mallocOn(4096, u);  // a live default-pool block
        ASSERT_NE(q, nullptr);
        void *b = nullptr, *d2 = nullptr;
        OnExit cleanup([&] {
            latch.open();
            mtiaFree(q);
            mtiaFree(b);
            mtiaFree(d2);
        });

        const mtiaMemoryStats s0 = memStats();
        int64_t last = reservedOf(s0);
        auto check = [&](const char* what) {
            const mtiaMemoryStats s = memStats();
            EXPECT_EQ(s.num_device_free, s0.num_device_free)
                << "device memory freed during the capture: " << what;
            if (round == 0) {
                EXPECT_GE(reservedOf(s), last)
                    << "reserved bytes went down during the capture: " << what;
            } else {
                EXPECT_EQ(reservedOf(s), reservedOf(s0))
                    << "reserved bytes changed during the capture: " << what;
            }
            last = reservedOf(s);
        };
        // A free changes neither count.
        auto freeChecked = [&](void* p, const char* what) {
            const mtiaMemoryStats before = memStats();
            EXPECT_OK(mtiaFree(p));
            const mtiaMemoryStats after = memStats();
            EXPECT_EQ(after.num_device_free, before.num_device_free) << what;
            EXPECT_EQ(reservedOf(after), reservedOf(before)) << what;
            check(what);
        };

        ASSERT_OK(mtiaGraphCaptureBegin(g, o, pool, kGlobal));
        {
            ResetIfCapturing guard(g, o);
            void* a = mallocOn(12 * kMiB, o);
            ASSERT_NE(a, nullptr);
            check("malloc on the capture stream");
            ASSERT_OK(launchFill(o, static_cast<float*>(a), 1.0f, kN));
            freeChecked(a, "free on the capture stream");
            ASSERT_NE(b = mallocOn(12 * kMiB, o), nullptr);
            EXPECT_EQ(b, a);
            check("malloc after free");

            ASSERT_OK(mtiaEventRecord(e1, o));
            ASSERT_OK(mtiaStreamWaitEvent(side, e1, 0));
            void* c = mallocOn(4096, side);
            ASSERT_NE(c, nullptr);
            check("malloc on the joined stream");
            ASSERT_OK(launchFill(side, static_cast<float*>(c), 2.0f, 1024));
            freeChecked(c, "free on the joined stream");

            void* d = mallocOn(4096, o);
            ASSERT_NE(d, nullptr);
            ASSERT_OK(mtiaRecordStream(d, side));
            ASSERT_OK(launchFill(side, static_cast<float*>(d), 3.0f, 1024));
            freeChecked(d, "free of a block recorded on the joined stream");
            ASSERT_NE(d2 = mallocOn(4096, o), nullptr);
            EXPECT_NE(d2, d) << "a block recorded on another stream was reused during the capture";
            check("malloc after a recorded free");

            ASSERT_OK(mtiaRecordStream(q, o));
            freeChecked(q, "free of a default-pool block recorded on the capture stream");
            q = nullptr;
            void* big = mallocOn(30 * kMiB, u);  // unrelated stream, default pool
            ASSERT_NE(big, nullptr);
            check("malloc on an unrelated stream");
            freeChecked(big, "free on an unrelated stream");

            ASSERT_OK(mtiaEventRecord(e2, side));
            ASSERT_OK(mtiaStreamWaitEvent(o, e2, 0));
            check("before the end");
            ASSERT_OK(mtiaGraphCaptureEnd(g));
        }
        EXPECT_EQ(memStats().num_device_free, s0.num_device_free);
        // Let everything finish, free the pool blocks into the pool's cache, and let the allocator
        // see the finished streams (an allocation outside any capture) before the next round.
        latch.open();
        ASSERT_OK(mtiaDeviceSynchronize());
        ASSERT_OK(mtiaFree(b));
        ASSERT_OK(mtiaFree(d2));
        b = d2 = nullptr;
        ASSERT_OK(mtiaFree(mallocOn(4096, u)));
    }
}

// 90. A process that exits with graphs it never destroyed (captured and replayed): no crash, exit
// status 0, and a warning on stderr naming them as never destroyed. The test runs itself in a child
// process.
namespace {
constexpr const char* kLeakChildEnv = "MTIA_TEST_GRAPH_LEAK_CHILD";

std::string slurp(const char* path) {
    std::string text;
    if (FILE* f = std::fopen(path, "r")) {
        char buf[4096];
        size_t got = 0;
        while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
        std::fclose(f);
    }
    return text;
}
}  // namespace

TEST_F(GraphPools, T90_UndestroyedGraphReportedAtExit) {
    if (std::getenv(kLeakChildEnv) != nullptr) {
        // The child: graphs that are never destroyed; the process then exits normally.
        mtiaStream_t s = nullptr;
        ASSERT_OK(mtiaStreamCreate(&s));
        float* y = nullptr;
        ASSERT_OK(mtiaMalloc(reinterpret_cast<void**>(&y), kN * sizeof(float)));
        mtiaGraph_t g = nullptr;
        ASSERT_OK(mtiaGraphCreate(&g, 0));
        ASSERT_OK(mtiaGraphCaptureBegin(g, s, kNewPool, kGlobal));
        float* tmp = floatsOn(12 * kMiB / 4, s);
        ASSERT_NE(tmp, nullptr);
        ASSERT_OK(launchFill(s, tmp, 1.0f, kN));
        ASSERT_OK(launchCopy(s, y, tmp, kN));
        ASSERT_OK(mtiaFree(tmp));
        ASSERT_OK(mtiaGraphCaptureEnd(g));
        ASSERT_OK(mtiaGraphReplay(g, s));
        ASSERT_OK(mtiaStreamSynchronize(s));
        EXPECT_TRUE(allEqual(readBack(y, kN), kN, 1.0f));
        mtiaGraph_t kept = nullptr;
        ASSERT_OK(mtiaStreamBeginCapture(s, kGlobal));
        ASSERT_OK(launchFill(s, y, 2.0f, kN));
        ASSERT_OK(mtiaStreamEndCapture(s, &kept));
        ASSERT_OK(mtiaGraphReplay(kept, s));
        ASSERT_OK(mtiaStreamSynchronize(s));
        std::printf("graph-leak-child: done\n");
        std::fflush(stdout);
        return;
    }

    const ::testing::TestInfo* me = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string filter = std::string("--gtest_filter=") + me->test_suite_name() + "." + me->name();
    char outPath[] = "/tmp/mtia_graph_leak_out_XXXXXX";
    char errPath[] = "/tmp/mtia_graph_leak_err_XXXXXX";
    const int outFd = mkstemp(outPath);
    const int errFd = mkstemp(errPath);
    ASSERT_GE(outFd, 0);
    ASSERT_GE(errFd, 0);
    OnExit cleanup([&] {
        close(outFd);
        close(errFd);
        unlink(outPath);
        unlink(errPath);
    });

    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e);
        if (entry.rfind("GTEST_OUTPUT=", 0) == 0 || entry.rfind("MTIA_LOG_LEVEL=", 0) == 0)
            continue;
        env.push_back(entry);
    }
    env.push_back(std::string(kLeakChildEnv) + "=1");
    env.push_back("MTIA_LOG_LEVEL=warn");
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char self[] = "/proc/self/exe";
    char* argv[] = {self, filter.data(), nullptr};

    posix_spawn_file_actions_t actions;
    ASSERT_EQ(posix_spawn_file_actions_init(&actions), 0);
    posix_spawn_file_actions_adddup2(&actions, outFd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, errFd, STDERR_FILENO);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, self, &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(spawned, 0) << "posix_spawn: " << std::strerror(spawned);

    int status = 0;
    pid_t waited = 0;
    const auto deadline = Clock::now() + 3 * kHang;
    while ((waited = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    if (waited == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL() << "the child did not exit within " << ms(3 * kHang)
               << " ms (hang at exit?)\nstderr:\n"
               << slurp(errPath);
    }
    const std::string out = slurp(outPath), err = slurp(errPath);
    ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit normally (signal "
                                   << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")\nstderr:\n"
                                   << err;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "stdout:\n" << out << "\nstderr:\n" << err;
    EXPECT_NE(out.find("graph-leak-child: done"), std::string::npos)
        << "the child did not run the test:\n"
        << out;
    std::string warning;
    size_t start = 0;
    while (start < err.size()) {
        const size_t end = err.find('\n', start);
        const std::string line =
            err.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (line.find("never destroyed") != std::string::npos) {
            warning = line;
            break;
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    ASSERT_FALSE(warning.empty()) << "no 'never destroyed' warning on the child's stderr:\n" << err;
    std::string lower(warning);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    EXPECT_NE(lower.find("graph"), std::string::npos) << warning;
}
