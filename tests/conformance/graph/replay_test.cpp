// Conformance: graph replay (streams-graphs-anchors.md (c), items 64-75, and a captured MLP step):
// replays use the captured addresses with the memory's current contents, run as one unit in the
// order of the stream they are launched on, never overlap themselves, replay host-function nodes
// but not host code, and a graph replayed 100 000 times holds no growing resources. Semantics as in
// mtia_graph.h; uses only the public header.
#include "graph_test_util.hpp"

#include <random>

using namespace mtia_test;

namespace {

constexpr mtiaStreamCaptureMode kGlobal = mtiaStreamCaptureModeGlobal;

// n floats i * step + offset, exact in float for the sizes used here.
std::vector<float> ramp(size_t n, float offset, float step = 0.25f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = offset + static_cast<float>(i) * step;
    return v;
}

// Reads n floats of d in order on s (a pageable copy returns when it is done).
std::vector<float> readOn(mtiaStream_t s, const float* d, size_t n) {
    std::vector<float> host(n, -12345.0f);
    const mtiaError_t rc =
        mtiaMemcpyAsync(host.data(), d, n * sizeof(float), mtiaMemcpyDeviceToHost, s);
    if (rc != mtiaSuccess) {
        ADD_FAILURE() << "mtiaMemcpyAsync(D2H) returned " << mtiaGetErrorName(rc) << ": "
                      << mtiaGetLastErrorMessage();
        return {};
    }
    return host;
}

::testing::AssertionResult equalsScaled(const std::vector<float>& got, const std::vector<float>& in,
                                        float k) {
    if (got.size() != in.size())
        return ::testing::AssertionFailure()
               << "got " << got.size() << " values, expected " << in.size();
    for (size_t i = 0; i < in.size(); ++i)
        if (got[i] != k * in[i])
            return ::testing::AssertionFailure()
                   << "element " << i << " is " << got[i] << ", expected " << k * in[i];
    return ::testing::AssertionSuccess();
}

}  // namespace

// 64. y = 2x captured once on static buffers; new x written before each of 100 replays.
TEST(Replay, T64_ScaleReplayedWithNewInputs) {
    constexpr uint64_t n = 1024;
    Stream s;
    DeviceFloats x(n), y(n);
    ASSERT_CREATED(s, x, y);
    ASSERT_TRUE(fillNow(s, x, 1.0f, n));
    ASSERT_TRUE(fillNow(s, y, -1.0f, n));

    Graph g;
    ASSERT_TRUE(captureInto(g, s, [&] { return launchScale(s, y, x, 2.0f, n); }));
    ASSERT_NE(g.get(), nullptr);
    EXPECT_TRUE(allEqual(readBack(y, n), n, -1.0f)) << "the captured kernel ran during the capture";

    for (int i = 0; i < 100; ++i) {
        SCOPED_TRACE("replay " + std::to_string(i));
        const std::vector<float> hx = ramp(n, static_cast<float>(i) - 50.0f);
        ASSERT_OK(mtiaMemcpyAsync(x, hx.data(), n * sizeof(float), mtiaMemcpyHostToDevice, s));
        ASSERT_OK(mtiaGraphReplay(g, s));
        ASSERT_TRUE(equalsScaled(readOn(s, y, n), hx, 2.0f));
    }
    EXPECT_EQ(graphInfo(g).numReplays, 100u);
}

// 65. Host code that ran during the capture is not replayed; a host-function node runs on every
// replay.
TEST(Replay, T65_HostCodeNotReplayedHostNodeIs) {
    std::atomic<int> nodeRuns{0};
    HostFn node([&] { nodeRuns.fetch_add(1); });
    int hostCode = 0;
    Stream s;
    ASSERT_OK(s.status());
    Graph g;
    ASSERT_OK(mtiaStreamBeginCapture(s, kGlobal));
    {
        EndCaptureAtExit guard({s});
        ++hostCode;  // plain host code between begin and end
        ASSERT_OK(node.enqueue(s));
        ASSERT_OK(mtiaStreamEndCapture(s, g.out()));
    }
    EXPECT_EQ(graphInfo(g).numNodes, 1u);
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_EQ(nodeRuns.load(), 0) << "the host function ran during the capture";
    for (int r = 1; r <= 5; ++r) {
        ASSERT_OK(mtiaGraphReplay(g, s));
        ASSERT_OK(mtiaStreamSynchronize(s));
        EXPECT_EQ(nodeRuns.load(), r) << "after replay " << r;
        EXPECT_EQ(hostCode, 1);
    }
}

// 66. Replay on a stream other than the capture stream: ordered after that stream's earlier work,
// and later work there waits for every leaf (here two: a fast one and a slow one on a side branch).
TEST(Replay, T66_ReplayOnOtherStreamIsOrderedOnIt) {
    constexpr uint64_t n = 256;
    Stream o, side, r;
    Event e1, e2;
    DeviceFloats x(n), y1(n), y2(n), z1(n), z2(n);
    ASSERT_CREATED(o, side, r, e1, e2);
    for (float* d : {x.get(), y1.get(), y2.get(), z1.get(), z2.get()}) ASSERT_NE(d, nullptr);
    ASSERT_TRUE(fillNow(r, x, 1.0f, n));
    for (float* d : {y1.get(), y2.get(), z1.get(), z2.get()}) ASSERT_TRUE(fillNow(r, d, -1.0f, n));

    Graph g;
    ASSERT_OK(mtiaStreamBeginCapture(o, kGlobal));
    {
        EndCaptureAtExit guard({o, side});
        ASSERT_OK(mtiaEventRecord(e1, o));
        ASSERT_OK(mtiaStreamWaitEvent(side, e1, 0));
        ASSERT_OK(launchSleep(side, 30000));
        ASSERT_OK(launchScale(side, y2, x, 3.0f, n));
        ASSERT_OK(mtiaEventRecord(e2, side));
        ASSERT_OK(launchScale(o, y1, x, 2.0f, n));
        ASSERT_OK(mtiaStreamWaitEvent(o, e2, 0));
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    EXPECT_EQ(graphInfo(g).numNodes, 3u);

    Latch latch;
    ASSERT_OK(latch.block(r));
    ASSERT_OK(launchFill(r, x, 5.0f, n));  // the replay must see this
    ASSERT_OK(mtiaGraphReplay(g, r));
    ASSERT_OK(launchCopy(r, z1, y1, n));
    ASSERT_OK(launchCopy(r, z2, y2, n));
    ASSERT_TRUE(latch.waitEntered());
    std::this_thread::sleep_for(kSettle);
    EXPECT_TRUE(allEqual(readBack(y1, n), n, -1.0f))
        << "the replay ran before earlier work of its stream";
    EXPECT_TRUE(allEqual(readBack(y2, n), n, -1.0f))
        << "the replay ran before earlier work of its stream";
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(r));
    EXPECT_TRUE(allEqual(readBack(y1, n), n, 10.0f));
    EXPECT_TRUE(allEqual(readBack(y2, n), n, 15.0f));
    EXPECT_TRUE(allEqual(readBack(z1, n), n, 10.0f)) << "later work did not wait for the replay";
    EXPECT_TRUE(allEqual(readBack(z2, n), n, 15.0f)) << "later work did not wait for the slow leaf";
    EXPECT_OK(mtiaStreamQuery(o));
    EXPECT_OK(mtiaStreamQuery(side));
}

// 67. One graph launched on A, then on B: the second run starts after the first finished.
TEST(Replay, T67_SameGraphOnTwoStreamsRunsOneAfterTheOther) {
    Stream a, b, s;
    ASSERT_CREATED(a, b, s);

    // (1) A graph whose only node is a gate: the run on B must not enter it while the run on A is
    // inside.
    {
        Gate gate;
        Graph g;
        OnExit opener([&] { gate.open(); });
        ASSERT_TRUE(captureInto(g, s, [&] { return gate.enqueue(s); }));
        Event doneB;
        ASSERT_OK(doneB.status());
        ASSERT_OK(mtiaGraphReplay(g, a));
        ASSERT_TRUE(gate.waitEntered(1));
        ASSERT_OK(mtiaGraphReplay(g, b));
        ASSERT_OK(mtiaEventRecord(doneB, b));
        std::this_thread::sleep_for(kSettle);
        EXPECT_EQ(gate.entered(), 1) << "the second replay started while the first was running";
        EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(doneB));
        gate.open();
        ASSERT_OK(mtiaStreamSynchronize(a));
        ASSERT_OK(mtiaStreamSynchronize(b));
        EXPECT_EQ(gate.entered(), 2);
    }

    // (2) A read-modify-write with a sleep in the middle: overlapping runs would lose increments.
    {
        DeviceFloats y(1), t(1), one(1);
        ASSERT_TRUE(fillNow(s, y, 0.0f, 1));
        ASSERT_TRUE(fillNow(s, one, 1.0f, 1));
        Graph g;
        ASSERT_OK(mtiaStreamBeginCapture(s, kGlobal));
        {
            EndCaptureAtExit guard({s});
            ASSERT_OK(launchAdd(s, t, y, one, 1));
            ASSERT_OK(launchSleep(s, 20000));
            ASSERT_OK(launchCopy(s, y, t, 1));
            ASSERT_OK(mtiaStreamEndCapture(s, g.out()));
        }
        for (int i = 0; i < 6; ++i) ASSERT_OK(mtiaGraphReplay(g, i % 2 == 0 ? a.get() : b.get()));
        ASSERT_OK(mtiaStreamSynchronize(a));
        ASSERT_OK(mtiaStreamSynchronize(b));
        EXPECT_TRUE(allEqual(readBack(y, 1), 1, 6.0f)) << "replays of one graph overlapped";
        EXPECT_EQ(graphInfo(g).numReplays, 6u);
    }
}

// 68. The same work captured twice gives two graphs; launched on A and B they may overlap and both
// compute the right result. The two captures share the input but write outputs of their own: the
// same outputs would be written by both runs at once (a data race in the test, not in the runtime).
TEST(Replay, T68_TwoGraphsOfTheSameWorkOnTwoStreams) {
    constexpr uint64_t n = 512;
    constexpr uint64_t kSleepUs = 300000;
    Stream s, a, b;
    DeviceFloats x(n), y1(n), z1(n), y2(n), z2(n);
    ASSERT_CREATED(s, a, b);
    ASSERT_TRUE(fillNow(s, x, 3.0f, n));
    for (float* d : {y1.get(), z1.get(), y2.get(), z2.get()}) ASSERT_TRUE(fillNow(s, d, -1.0f, n));
    Graph g1, g2;
    for (int i = 0; i < 2; ++i) {
        float* y = i == 0 ? y1.get() : y2.get();
        float* z = i == 0 ? z1.get() : z2.get();
        ASSERT_OK(mtiaStreamBeginCapture(s, kGlobal));
        EndCaptureAtExit guard({s});
        ASSERT_OK(launchSleep(s, kSleepUs));
        ASSERT_OK(launchScale(s, y, x, 2.0f, n));
        ASSERT_OK(launchAdd(s, z, y, x, n));
        ASSERT_OK(mtiaStreamEndCapture(s, (i == 0 ? g1 : g2).out()));
    }
    ASSERT_NE(g1.get(), g2.get());
    EXPECT_NE(graphInfo(g1).captureId, graphInfo(g2).captureId);
    EXPECT_EQ(graphInfo(g1).numNodes, 3u);
    EXPECT_EQ(graphInfo(g2).numNodes, 3u);
    // Instantiate first, so the timing below holds only the runs.
    ASSERT_OK(mtiaGraphInstantiate(g1));
    ASSERT_OK(mtiaGraphInstantiate(g2));

    const auto start = Clock::now();
    ASSERT_OK(mtiaGraphReplay(g1, a));
    ASSERT_OK(mtiaGraphReplay(g2, b));
    ASSERT_OK(mtiaStreamSynchronize(a));
    ASSERT_OK(mtiaStreamSynchronize(b));
    const auto elapsed = Clock::now() - start;
    for (float* y : {y1.get(), y2.get()}) EXPECT_TRUE(allEqual(readBack(y, n), n, 6.0f));
    for (float* z : {z1.get(), z2.get()}) EXPECT_TRUE(allEqual(readBack(z, n), n, 9.0f));
    EXPECT_EQ(graphInfo(g1).numReplays, 1u);
    EXPECT_EQ(graphInfo(g2).numReplays, 1u);
    // Two different graphs on two streams of a 4-engine device are not serialised (one after the
    // other takes at least 600 ms).
    EXPECT_LT(ms(elapsed), 1.6 * kSleepUs / 1000.0)
        << "two different graphs ran one after the other";
}

// 69. An event recorded right after the launch completes only after every node finished, the slow
// branch included.
TEST(Replay, T69_EventAfterReplayWaitsForEveryNode) {
    constexpr uint64_t n = 128;
    Gate gate;
    Stream o, side, r;
    Event e1, e2, done;
    DeviceFloats y1(n), y2(n);
    ASSERT_CREATED(o, side, r, done);
    ASSERT_TRUE(fillNow(r, y1, -1.0f, n));
    ASSERT_TRUE(fillNow(r, y2, -1.0f, n));
    Graph g;
    OnExit opener([&] { gate.open(); });
    ASSERT_OK(mtiaStreamBeginCapture(o, kGlobal));
    {
        EndCaptureAtExit guard({o, side});
        ASSERT_OK(mtiaEventRecord(e1, o));
        ASSERT_OK(mtiaStreamWaitEvent(side, e1, 0));
        ASSERT_OK(gate.enqueue(side));
        ASSERT_OK(launchFill(side, y2, 7.0f, n));
        ASSERT_OK(mtiaEventRecord(e2, side));
        ASSERT_OK(launchFill(o, y1, 3.0f, n));
        ASSERT_OK(mtiaStreamWaitEvent(o, e2, 0));
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    ASSERT_OK(mtiaGraphReplay(g, r));
    ASSERT_OK(mtiaEventRecord(done, r));
    ASSERT_TRUE(gate.waitEntered(1));
    std::this_thread::sleep_for(kSettle);
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(done))
        << "the event completed while a node was still running";
    EXPECT_TRUE(allEqual(readBack(y2, n), n, -1.0f));
    gate.open();
    ASSERT_OK(mtiaEventSynchronize(done));
    EXPECT_TRUE(allEqual(readBack(y1, n), n, 3.0f));
    EXPECT_TRUE(allEqual(readBack(y2, n), n, 7.0f));
}

// 70. An input freed after the capture and re-allocated elsewhere: the replay still reads the
// captured address (no copy follows the new buffer). The caching allocator hands the freed block to
// the next allocation of that size on its stream ("hold"), so writing hold shows what the replay
// reads.
TEST(Replay, T70_ReplayReadsTheCapturedAddressAfterFree) {
    constexpr uint64_t n = 1000;
    Stream s, t;
    ASSERT_CREATED(s, t);
    ASSERT_OK(mtiaDeviceSynchronize());
    ASSERT_OK(mtiaEmptyCache());  // no other cached block of this size on t
    DeviceFloats y(n);
    float* x = floatsOn(n, t);
    ASSERT_NE(x, nullptr);
    ASSERT_TRUE(fillNow(t, x, 3.0f, n));
    ASSERT_TRUE(fillNow(t, y, -1.0f, n));
    Graph g;
    ASSERT_TRUE(captureInto(g, s, [&] { return launchScale(s, y, x, 2.0f, n); }));
    ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(y, n), n, 6.0f));

    ASSERT_OK(mtiaFree(x));
    float* hold = floatsOn(n, t);
    float* x2 = floatsOn(n, t);
    OnExit freeBoth([&] {
        mtiaFree(hold);
        mtiaFree(x2);
    });
    ASSERT_EQ(hold, x) << "the allocator did not hand the freed block back (the test relies on it)";
    ASSERT_NE(x2, x);
    ASSERT_TRUE(fillNow(t, hold, 5.0f, n));
    ASSERT_TRUE(fillNow(t, x2, 7.0f, n));
    ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    const std::vector<float> got = readBack(y, n);
    EXPECT_TRUE(allEqual(got, n, 10.0f))
        << "the replay did not read the captured address (14 would mean it "
           "followed the new buffer)";
}

// 71. Exec update: the ABI has no mtiaGraphExecUpdate.
TEST(Replay, T71_ExecUpdate) {
    GTEST_SKIP()
        << "no mtiaGraphExecUpdate in mtia_graph.h: a graph's arguments cannot be updated in place "
           "(capture again, or mtiaGraphReset and capture)";
}

// 72. The template dropped at instantiation (no mtiaGraphKeepGraph): the graph still replays.
TEST(Replay, T72_TemplateDroppedStillReplays) {
    constexpr uint64_t n = 300;
    Stream s;
    DeviceFloats x(n), y(n);
    Graph g(0);
    ASSERT_CREATED(s, g);
    ASSERT_OK(mtiaGraphCaptureBegin(g, s, kNewPool, kGlobal));
    {
        OnExit end([&] {
            if (captureStatus(s) != mtiaStreamCaptureStatusNone) mtiaGraphReset(g);
        });
        ASSERT_OK(launchScale(s, y, x, 2.0f, n));
        ASSERT_OK(mtiaGraphCaptureEnd(g));
    }
    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.state, mtiaGraphStateReady);
    EXPECT_EQ(info.hasTemplate, 0);
    EXPECT_EQ(info.instantiated, 1);
    for (int i = 0; i < 3; ++i) {
        const std::vector<float> hx = ramp(n, static_cast<float>(10 * i));
        ASSERT_OK(mtiaMemcpyAsync(x, hx.data(), n * sizeof(float), mtiaMemcpyHostToDevice, s));
        ASSERT_OK(mtiaGraphReplay(g, s));
        EXPECT_TRUE(equalsScaled(readOn(s, y, n), hx, 2.0f)) << "replay " << i;
    }
}

// 73. Launching a graph into a stream that is capturing: the documented
// mtiaErrorStreamCaptureUnsupported, and that capture is invalidated; nothing runs.
TEST(Replay, T73_ReplayIntoACaptureIsUnsupported) {
    constexpr uint64_t n = 64;
    Stream s, c;
    DeviceFloats x(n), y(n);
    ASSERT_CREATED(s, c);
    ASSERT_TRUE(fillNow(s, x, 4.0f, n));
    ASSERT_TRUE(fillNow(s, y, -1.0f, n));
    Graph g;
    ASSERT_TRUE(captureInto(g, s, [&] { return launchScale(s, y, x, 2.0f, n); }));
    ASSERT_OK(mtiaGraphInstantiate(g));

    ASSERT_OK(mtiaStreamBeginCapture(c, kGlobal));
    {
        EndCaptureAtExit guard({c});
        EXPECT_FAILS_CLEARLY(mtiaErrorStreamCaptureUnsupported, mtiaGraphReplay(g, c));
        EXPECT_EQ(captureStatus(c), mtiaStreamCaptureStatusInvalidated);
        mtiaGraph_t outer = notAGraph();
        EXPECT_STATUS(mtiaErrorStreamCaptureInvalidated, mtiaStreamEndCapture(c, &outer));
        EXPECT_EQ(outer, nullptr);
        EXPECT_EQ(captureStatus(c), mtiaStreamCaptureStatusNone);
    }
    ASSERT_OK(mtiaDeviceSynchronize());
    EXPECT_TRUE(allEqual(readBack(y, n), n, -1.0f)) << "the refused replay ran";
    EXPECT_EQ(graphInfo(g).numReplays, 0u);
    // The graph and the stream are fine afterwards.
    ASSERT_OK(mtiaGraphReplay(g, c));
    ASSERT_OK(mtiaStreamSynchronize(c));
    EXPECT_TRUE(allEqual(readBack(y, n), n, 8.0f));
}

// 74. 100 000 replays: resident memory, open files and threads stay flat; every replay ran once.
TEST(Replay, T74_HundredThousandReplaysHoldNothing) {
    constexpr int kWarmup = 2000;
    constexpr int kReplays = 100000;
    Stream s;
    ASSERT_OK(s.status());
    DeviceFloats y(1), one(1);
    ASSERT_TRUE(fillNow(s, y, 0.0f, 1));
    ASSERT_TRUE(fillNow(s, one, 1.0f, 1));
    Graph g;
    ASSERT_TRUE(captureInto(g, s, [&] { return launchAdd(s, y, y, one, 1); }));
    for (int i = 0; i < kWarmup; ++i) ASSERT_OK(mtiaGraphReplay(g, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    const int64_t rss0 = residentBytes();
    const int fds0 = openFds();
    const int threads0 = threadCount();
    for (int i = 0; i < kReplays; ++i) {
        ASSERT_OK(mtiaGraphReplay(g, s));
        if (i % 1000 == 999) {
            ASSERT_OK(mtiaStreamSynchronize(s));
        }
    }
    ASSERT_OK(mtiaStreamSynchronize(s));
    const int64_t rss1 = residentBytes();
    EXPECT_TRUE(allEqual(readBack(y, 1), 1, static_cast<float>(kWarmup + kReplays)));
    EXPECT_EQ(graphInfo(g).numReplays, static_cast<uint64_t>(kWarmup + kReplays));
    EXPECT_EQ(openFds(), fds0) << "open file descriptors grew";
    EXPECT_EQ(threadCount(), threads0) << "threads grew";
    if (!kSanitized) {
        EXPECT_LT(rss1 - rss0, static_cast<int64_t>(8 * kMiB)) << "resident memory grew";
    }
}

// 75. The DOT dump lists every node (with its kind and parameters) and every edge.
TEST(Replay, T75_DotDumpListsEveryNodeAndEdge) {
    constexpr uint64_t n = 308;  // 1232 bytes
    Stream o, side;
    Event e1, e2;
    DeviceFloats a(n), b(n), c(n), d(n), d2(n);
    Graph g;
    ASSERT_CREATED(o, side);
    ASSERT_OK(mtiaStreamBeginCapture(o, kGlobal));
    {
        EndCaptureAtExit guard({o, side});
        ASSERT_OK(launchFill(o, a, 1.0f, n));  // root
        ASSERT_OK(mtiaEventRecord(e1, o));
        ASSERT_OK(mtiaStreamWaitEvent(side, e1, 0));
        ASSERT_OK(launchScale(side, b, a, 2.0f, n));  // branch on side
        ASSERT_OK(mtiaEventRecord(e2, side));
        ASSERT_OK(launchRelu(o, c, a, n));  // branch on o
        ASSERT_OK(mtiaStreamWaitEvent(o, e2, 0));
        ASSERT_OK(launchAdd(o, d, b, c, n));  // join
        ASSERT_OK(mtiaMemcpyAsync(d2, d, n * sizeof(float), mtiaMemcpyDeviceToDevice, o));
        ASSERT_OK(mtiaMemsetAsync(a, 0, 1228, o));
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.numNodes, 6u);
    EXPECT_EQ(info.numEdges, 6u);
    DotGraph dot;
    ASSERT_TRUE(dumpDot(g, &dot));
    EXPECT_EQ(dot.labels.size(), info.numNodes) << dot.text;
    EXPECT_EQ(dot.edges.size(), info.numEdges) << dot.text;
    const int fill = dot.find("fill_f32"), scale = dot.find("scale_f32"),
              relu = dot.find("relu_f32"), add = dot.find("add_f32"), copy = dot.find("1232 bytes"),
              memset = dot.find("1228 bytes");
    for (int id : {fill, scale, relu, add, copy, memset}) ASSERT_GE(id, 0) << dot.text;
    EXPECT_TRUE(dot.hasEdge(fill, scale)) << describeEdges(dot);
    EXPECT_TRUE(dot.hasEdge(fill, relu)) << describeEdges(dot);
    EXPECT_TRUE(dot.hasEdge(scale, add)) << describeEdges(dot);
    EXPECT_TRUE(dot.hasEdge(relu, add)) << describeEdges(dot);
    EXPECT_TRUE(dot.hasEdge(add, copy)) << describeEdges(dot);
    EXPECT_TRUE(dot.hasEdge(copy, memset)) << describeEdges(dot);
    EXPECT_FALSE(dot.hasEdge(scale, relu) || dot.hasEdge(relu, scale)) << describeEdges(dot);
    // The instantiated graph dumps the same.
    ASSERT_OK(mtiaGraphInstantiate(g));
    DotGraph again;
    ASSERT_TRUE(dumpDot(g, &again));
    EXPECT_EQ(again.edges, dot.edges);
    EXPECT_EQ(again.labels.size(), dot.labels.size());
}

// A two-layer MLP step (matmul, bias, relu, matmul, bias) on static buffers, captured once and
// replayed 1000 times with new inputs; every result equals the same kernels run eagerly on other
// buffers (same kernels in the same order: exact) and a host reference (within rounding).
TEST(Replay, MlpStepMatchesEager) {
    constexpr uint64_t B = 8, D = 16, H = 32, O = 4;
    constexpr int kSteps = 1000;
    Stream s, e;
    ASSERT_CREATED(s, e);
    std::mt19937 rng(20240611);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto random = [&](size_t count) {
        std::vector<float> v(count);
        for (float& f : v) f = dist(rng);
        return v;
    };
    const std::vector<float> w1 = random(D * H), w2 = random(H * O), bias1 = random(H),
                             bias2 = random(O);
    std::vector<float> b1full(B * H),
        b2full(B * O);  // add_f32 is elementwise: the bias repeated per row
    for (uint64_t i = 0; i < B; ++i) {
        std::copy(bias1.begin(), bias1.end(), b1full.begin() + static_cast<std::ptrdiff_t>(i * H));
        std::copy(bias2.begin(), bias2.end(), b2full.begin() + static_cast<std::ptrdiff_t>(i * O));
    }
    DeviceFloats dw1(D * H), dw2(H * O), db1(B * H), db2(B * O);
    ASSERT_TRUE(writeFloats(dw1, w1));
    ASSERT_TRUE(writeFloats(dw2, w2));
    ASSERT_TRUE(writeFloats(db1, b1full));
    ASSERT_TRUE(writeFloats(db2, b2full));

    struct Buffers {
        DeviceFloats x{B * D}, h{B * H}, hb{B * H}, r{B * H}, o{B * O}, y{B * O};
    };
    Buffers gb, eb;
    auto step = [&](mtiaStream_t st, Buffers& bf) -> mtiaError_t {
        mtiaError_t rc = launchMatmul(st, bf.h, bf.x, dw1, B, H, D);
        if (rc == mtiaSuccess) rc = launchAdd(st, bf.hb, bf.h, db1, B * H);
        if (rc == mtiaSuccess) rc = launchRelu(st, bf.r, bf.hb, B * H);
        if (rc == mtiaSuccess) rc = launchMatmul(st, bf.o, bf.r, dw2, B, O, H);
        if (rc == mtiaSuccess) rc = launchAdd(st, bf.y, bf.o, db2, B * O);
        return rc;
    };
    Graph g;
    ASSERT_TRUE(captureInto(g, s, [&] { return step(s, gb); }));
    EXPECT_EQ(graphInfo(g).numNodes, 5u);

    for (int i = 0; i < kSteps; ++i) {
        SCOPED_TRACE("step " + std::to_string(i));
        const std::vector<float> x = random(B * D);
        ASSERT_OK(
            mtiaMemcpyAsync(gb.x, x.data(), x.size() * sizeof(float), mtiaMemcpyHostToDevice, s));
        ASSERT_OK(mtiaGraphReplay(g, s));
        ASSERT_OK(
            mtiaMemcpyAsync(eb.x, x.data(), x.size() * sizeof(float), mtiaMemcpyHostToDevice, e));
        ASSERT_OK(step(e, eb));
        const std::vector<float> got = readOn(s, gb.y, B * O);
        const std::vector<float> want = readOn(e, eb.y, B * O);
        ASSERT_EQ(got, want) << "the replay differs from the eager step";
        // Host reference (double accumulation): the kernels compute the MLP at all.
        for (uint64_t row = 0; row < B; ++row) {
            std::vector<double> hidden(H);
            for (uint64_t j = 0; j < H; ++j) {
                double acc = 0;
                for (uint64_t k = 0; k < D; ++k)
                    acc += double(x[row * D + k]) * double(w1[k * H + j]);
                hidden[j] = std::max(0.0, acc + double(bias1[j]));
            }
            for (uint64_t j = 0; j < O; ++j) {
                double acc = 0;
                for (uint64_t k = 0; k < H; ++k) acc += hidden[k] * double(w2[k * O + j]);
                ASSERT_NEAR(got[row * O + j], acc + double(bias2[j]), 1e-4)
                    << "row " << row << " column " << j;
            }
        }
    }
    EXPECT_EQ(graphInfo(g).numReplays, static_cast<uint64_t>(kSteps));
}
