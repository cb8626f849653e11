// Conformance: capture across streams (streams-graphs-anchors.md (c), items 57-63): fork and join
// through events, unjoined and unmatched ends, the frontier rule, parallel branches, re-recorded
// events and events that only make edges. Edges are read from the DOT dump (nodes are told apart by
// their kernel: every node of a test runs a different built-in kernel).
#include "capture_test_util.hpp"

using namespace mtia_test;

namespace {

constexpr uint64_t kN = 64;

using Edges = std::set<std::pair<int, int>>;

// Finds the node running kernel, failing the test (with the dump) when there is not exactly one.
int nodeOf(const DotGraph& dot, const char* kernel) {
    const int n = dot.find(kernel);
    if (n < 0)
        ADD_FAILURE() << (n == -1 ? "no node" : "several nodes") << " labelled " << kernel << ":\n"
                      << dot.text;
    return n;
}

// dot's edges are required plus any of optional: capture does not promise to drop an edge that
// another path implies (a join after stream-ordered work gives the node both its stream predecessor
// and the joined node, as CUDA's capture does), so such edges are allowed, nothing else is.
::testing::AssertionResult edgesAre(const DotGraph& dot, const Edges& required,
                                    const Edges& optional = {}) {
    for (const auto& e : required)
        if (!dot.hasEdge(e.first, e.second))
            return ::testing::AssertionFailure() << "missing edge n" << e.first << "->n" << e.second
                                                 << "; edges:" << describeEdges(dot) << "\n"
                                                 << dot.text;
    for (const auto& e : dot.edges)
        if (required.count(e) == 0 && optional.count(e) == 0)
            return ::testing::AssertionFailure()
                   << "unexpected edge n" << e.first << "->n" << e.second
                   << "; edges:" << describeEdges(dot) << "\n"
                   << dot.text;
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST(CaptureStreams, T57_ForkJoinEdges) {
    DeviceFloats x(kN), y(kN), z(kN), w(kN);
    for (DeviceFloats* d : {&x, &y, &z, &w}) ASSERT_OK(d->status());
    Stream o, s;
    ASSERT_CREATED(o, s);
    for (DeviceFloats* d : {&x, &y, &z, &w}) ASSERT_TRUE(fillNow(o, *d, 0.0f, kN));
    Event e1, e2;
    ASSERT_CREATED(e1, e2);

    Graph g;
    {
        EndCaptureAtExit guard({o, s});
        ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
        const uint64_t id = captureId(o);
        ASSERT_OK(launchFill(o, x, 2.0f, kN));  // A (before the fork)
        ASSERT_OK(mtiaEventRecord(e1, o));
        EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone);
        ASSERT_OK(mtiaStreamWaitEvent(s, e1, mtiaEventWaitDefault));
        EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusActive)
            << "the waiting stream did not join the capture";
        EXPECT_EQ(captureId(s), id);
        ASSERT_OK(launchScale(s, y, x, 3.0f, kN));  // B on S: y = 6
        ASSERT_OK(mtiaEventRecord(e2, s));
        ASSERT_OK(launchAdd(o, z, x, x, kN));  // C on O after the fork: z = 4
        ASSERT_OK(mtiaStreamWaitEvent(o, e2, mtiaEventWaitDefault));
        ASSERT_OK(launchMul(o, w, y, z, kN));  // D after the join: w = 24
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    EXPECT_EQ(captureStatus(o), mtiaStreamCaptureStatusNone);
    EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone) << "the forked stream still captures";
    EXPECT_EQ(captureId(s), 0u);

    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.numNodes, 4u);
    EXPECT_EQ(info.numEdges, 4u);
    DotGraph dot;
    ASSERT_TRUE(dumpDot(g, &dot));
    const int a = nodeOf(dot, "fill_f32"), b = nodeOf(dot, "scale_f32"), c = nodeOf(dot, "add_f32"),
              d = nodeOf(dot, "mul_f32");
    ASSERT_TRUE(a >= 0 && b >= 0 && c >= 0 && d >= 0);
    // B depends only on A; D on B (the join) and C (stream order); C not on B.
    const Edges want{{a, b}, {a, c}, {b, d}, {c, d}};
    EXPECT_EQ(dot.edges, want) << "edges:" << describeEdges(dot) << "\n" << dot.text;

    EXPECT_TRUE(allEqual(readBack(w, kN), kN, 0.0f)) << "captured work ran";
    ASSERT_OK(mtiaGraphReplay(g, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(x, kN), kN, 2.0f));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 6.0f));
    EXPECT_TRUE(allEqual(readBack(z, kN), kN, 4.0f));
    EXPECT_TRUE(allEqual(readBack(w, kN), kN, 24.0f));
}

TEST(CaptureStreams, T58_ForkWithoutJoinIsUnjoined) {
    HostLog log;
    DeviceFloats x(kN), y(kN);
    Stream o, s;
    ASSERT_CREATED(x, y, o, s);
    ASSERT_TRUE(fillNow(o, x, 0.0f, kN));
    ASSERT_TRUE(fillNow(o, y, 0.0f, kN));
    Event e1;
    ASSERT_OK(e1.status());

    {
        EndCaptureAtExit guard({o, s});
        ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
        ASSERT_OK(launchFill(o, x, 1.0f, kN));
        ASSERT_OK(mtiaEventRecord(e1, o));
        ASSERT_OK(mtiaStreamWaitEvent(s, e1, mtiaEventWaitDefault));
        ASSERT_EQ(captureStatus(s), mtiaStreamCaptureStatusActive);
        ASSERT_OK(launchScale(s, y, x, 3.0f, kN));
        ASSERT_OK(log.append(s, 1));
        ASSERT_OK(launchFill(o, x, 2.0f, kN));
        mtiaGraph_t raw = notAGraph();
        EXPECT_STATUS(mtiaErrorStreamCaptureUnjoined, mtiaStreamEndCapture(o, &raw));
        EXPECT_EQ(raw, nullptr);
        if (raw != nullptr && raw != notAGraph()) mtiaGraphDestroy(raw);
        EXPECT_EQ(captureStatus(o), mtiaStreamCaptureStatusNone);
        EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone);
        EXPECT_EQ(captureId(o), 0u);
        EXPECT_EQ(captureId(s), 0u);
    }
    // Both streams work eagerly at once; nothing captured ran.
    EXPECT_OK(mtiaStreamQuery(o));
    EXPECT_OK(mtiaStreamQuery(s));
    std::this_thread::sleep_for(kSettle);
    EXPECT_TRUE(log.values().empty());
    EXPECT_TRUE(allEqual(readBack(x, kN), kN, 0.0f));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 0.0f));
    ASSERT_TRUE(fillNow(o, x, 5.0f, kN));
    ASSERT_OK(launchScale(s, y, x, 2.0f, kN));
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 10.0f));
}

TEST(CaptureStreams, T59_JoinAsLastActionAndUntouchedForkAreJoined) {
    DeviceFloats x(kN), y(kN);
    Stream o, s, idle;
    Event e1, e2, e3;
    ASSERT_CREATED(x, y, o, s, idle, e1, e2, e3);

    // (a) The origin's last action is the join wait.
    {
        ASSERT_TRUE(fillNow(o, x, 0.0f, kN));
        ASSERT_TRUE(fillNow(o, y, 0.0f, kN));
        Graph g;
        {
            EndCaptureAtExit guard({o, s});
            ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
            ASSERT_OK(launchFill(o, x, 2.0f, kN));
            ASSERT_OK(mtiaEventRecord(e1, o));
            ASSERT_OK(mtiaStreamWaitEvent(s, e1, mtiaEventWaitDefault));
            ASSERT_OK(launchSleep(s, 30000));
            ASSERT_OK(launchScale(s, y, x, 3.0f, kN));  // S's last node
            ASSERT_OK(mtiaEventRecord(e2, s));
            ASSERT_OK(mtiaStreamWaitEvent(o, e2, mtiaEventWaitDefault));
            ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
        }
        EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone);
        const mtiaGraphInfo info = graphInfo(g);
        EXPECT_EQ(info.numNodes, 3u);
        EXPECT_EQ(info.numEdges, 2u);
        DotGraph dot;
        ASSERT_TRUE(dumpDot(g, &dot));
        const int fill = nodeOf(dot, "fill_f32"), sleep = nodeOf(dot, "sleep_us"),
                  scale = nodeOf(dot, "scale_f32");
        ASSERT_TRUE(fill >= 0 && sleep >= 0 && scale >= 0);
        EXPECT_EQ(dot.edges, (Edges{{fill, sleep}, {sleep, scale}})) << describeEdges(dot) << "\n"
                                                                     << dot.text;
        EXPECT_EQ(dot.outDegree(scale), 0) << "S's last node is not a leaf";

        // Work after the replay on O (here: synchronising O) waits for that leaf.
        ASSERT_OK(mtiaGraphReplay(g, o));
        ASSERT_OK(mtiaStreamSynchronize(o));
        EXPECT_TRUE(allEqual(readBack(y, kN), kN, 6.0f))
            << "synchronising the replay stream did not wait for S's leaf";
    }

    // (b) A forked stream that enqueued nothing and never joined back.
    {
        ASSERT_TRUE(fillNow(o, x, 0.0f, kN));
        ASSERT_TRUE(fillNow(o, y, 0.0f, kN));
        Graph g;
        {
            EndCaptureAtExit guard({o, idle});
            ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
            ASSERT_OK(launchFill(o, x, 5.0f, kN));
            ASSERT_OK(mtiaEventRecord(e3, o));
            ASSERT_OK(mtiaStreamWaitEvent(idle, e3, mtiaEventWaitDefault));
            ASSERT_EQ(captureStatus(idle), mtiaStreamCaptureStatusActive);
            ASSERT_OK(launchScale(o, y, x, 2.0f, kN));
            ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
        }
        EXPECT_EQ(captureStatus(idle), mtiaStreamCaptureStatusNone);
        EXPECT_EQ(graphInfo(g).numNodes, 2u);
        EXPECT_EQ(graphInfo(g).numEdges, 1u);
        ASSERT_OK(mtiaGraphReplay(g, o));
        ASSERT_OK(mtiaStreamSynchronize(o));
        EXPECT_TRUE(allEqual(readBack(y, kN), kN, 10.0f));
    }
}

TEST(CaptureStreams, T60_EndOnForkedStreamIsUnmatched) {
    DeviceFloats x(kN), y(kN), z(kN);
    for (DeviceFloats* d : {&x, &y, &z}) ASSERT_OK(d->status());
    Stream o, s;
    ASSERT_CREATED(o, s);
    for (DeviceFloats* d : {&x, &y, &z}) ASSERT_TRUE(fillNow(o, *d, 0.0f, kN));
    Event e1, e2;
    ASSERT_CREATED(e1, e2);

    Graph g;
    {
        EndCaptureAtExit guard({o, s});
        ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
        const uint64_t id = captureId(o);
        ASSERT_OK(launchFill(o, x, 1.0f, kN));
        ASSERT_OK(mtiaEventRecord(e1, o));
        ASSERT_OK(mtiaStreamWaitEvent(s, e1, mtiaEventWaitDefault));
        ASSERT_OK(launchScale(s, y, x, 3.0f, kN));

        mtiaGraph_t raw = nullptr;
        EXPECT_STATUS(mtiaErrorStreamCaptureUnmatched, mtiaStreamEndCapture(s, &raw));
        if (raw != nullptr) mtiaGraphDestroy(raw);
        // Nothing changed: both streams are in the same live capture and it goes on.
        EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusActive);
        EXPECT_EQ(captureStatus(o), mtiaStreamCaptureStatusActive);
        EXPECT_EQ(captureId(s), id);
        EXPECT_EQ(captureId(o), id);

        ASSERT_OK(mtiaEventRecord(e2, s));
        ASSERT_OK(mtiaStreamWaitEvent(o, e2, mtiaEventWaitDefault));
        ASSERT_OK(launchCopy(o, z, y, kN));
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    EXPECT_EQ(captureStatus(s), mtiaStreamCaptureStatusNone);
    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.numNodes, 3u);
    DotGraph dot;
    ASSERT_TRUE(dumpDot(g, &dot));
    EXPECT_EQ(info.numEdges, dot.edges.size());
    const int fill = nodeOf(dot, "fill_f32"), scale = nodeOf(dot, "scale_f32"),
              copy = nodeOf(dot, "copy_f32");
    ASSERT_TRUE(fill >= 0 && scale >= 0 && copy >= 0);
    EXPECT_TRUE(edgesAre(dot, {{fill, scale}, {scale, copy}}, {{fill, copy}}));
    ASSERT_OK(mtiaGraphReplay(g, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 3.0f));
    EXPECT_TRUE(allEqual(readBack(z, kN), kN, 3.0f));
}

TEST(CaptureStreams, T61_ParallelBranchesHaveNoEdgeAndOverlap) {
    constexpr uint64_t kBranchUs = 50000;
    DeviceFloats x(kN), y(kN);
    Stream o, s1, s2;
    ASSERT_CREATED(x, y, o, s1, s2);
    ASSERT_TRUE(fillNow(o, y, 0.0f, kN));
    Event e, f1, f2;
    ASSERT_CREATED(e, f1, f2);

    Graph g;
    {
        EndCaptureAtExit guard({o, s1, s2});
        ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
        ASSERT_OK(launchFill(o, x, 1.0f, kN));
        ASSERT_OK(mtiaEventRecord(e, o));
        ASSERT_OK(mtiaStreamWaitEvent(s1, e, mtiaEventWaitDefault));
        ASSERT_OK(mtiaStreamWaitEvent(s2, e, mtiaEventWaitDefault));
        ASSERT_OK(launchSleep(s1, kBranchUs));
        ASSERT_OK(launchSleep(s2, kBranchUs));
        ASSERT_OK(mtiaEventRecord(f1, s1));
        ASSERT_OK(mtiaEventRecord(f2, s2));
        ASSERT_OK(mtiaStreamWaitEvent(o, f1, mtiaEventWaitDefault));
        ASSERT_OK(mtiaStreamWaitEvent(o, f2, mtiaEventWaitDefault));
        ASSERT_OK(launchScale(o, y, x, 2.0f, kN));
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.numNodes, 4u);
    DotGraph dot;
    ASSERT_TRUE(dumpDot(g, &dot));
    EXPECT_EQ(info.numEdges, dot.edges.size());
    const std::vector<int> sleeps = dot.findAll("sleep_us");
    ASSERT_EQ(sleeps.size(), 2u) << dot.text;
    const int fill = nodeOf(dot, "fill_f32"), scale = nodeOf(dot, "scale_f32");
    ASSERT_TRUE(fill >= 0 && scale >= 0);
    EXPECT_FALSE(dot.hasEdge(sleeps[0], sleeps[1]) || dot.hasEdge(sleeps[1], sleeps[0]))
        << "an edge between the branches:" << describeEdges(dot);
    EXPECT_TRUE(edgesAre(
        dot, {{fill, sleeps[0]}, {fill, sleeps[1]}, {sleeps[0], scale}, {sleeps[1], scale}},
        {{fill, scale}}));

    // The branches run side by side: a replay takes about one branch, not two (best of a few runs).
    ASSERT_OK(mtiaGraphInstantiate(g));
    ASSERT_OK(mtiaGraphReplay(g, o));  // warm-up
    ASSERT_OK(mtiaStreamSynchronize(o));
    double best = 1e9;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = Clock::now();
        ASSERT_OK(mtiaGraphReplay(g, o));
        ASSERT_OK(mtiaStreamSynchronize(o));
        best = std::min(best, ms(Clock::now() - t0));
    }
    EXPECT_GE(best, 45.0) << "a replay finished before its 50 ms branches could have";
    EXPECT_LT(best, 90.0) << "the two 50 ms branches did not overlap (best replay " << best
                          << " ms)";
    EXPECT_TRUE(allEqual(readBack(y, kN), kN, 2.0f));
}

TEST(CaptureStreams, T62_ReRecordDuringCaptureSnapshotsEdges) {
    DeviceFloats x(kN), x2(kN), ys(kN), z(kN);
    for (DeviceFloats* d : {&x, &x2, &ys, &z}) ASSERT_OK(d->status());
    Stream o, s, s2;
    ASSERT_CREATED(o, s, s2);
    for (DeviceFloats* d : {&x, &x2, &ys, &z}) ASSERT_TRUE(fillNow(o, *d, 0.0f, kN));
    Event e, f1, f2;
    ASSERT_CREATED(e, f1, f2);

    Graph g;
    {
        EndCaptureAtExit guard({o, s, s2});
        ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
        ASSERT_OK(launchFill(o, x, 1.0f, kN));  // op1
        ASSERT_OK(mtiaEventRecord(e, o));
        ASSERT_OK(mtiaStreamWaitEvent(s, e, mtiaEventWaitDefault));   // S: after op1
        ASSERT_OK(launchScale(o, x2, x, 5.0f, kN));                   // op2
        ASSERT_OK(mtiaEventRecord(e, o));                             // re-record
        ASSERT_OK(mtiaStreamWaitEvent(s2, e, mtiaEventWaitDefault));  // S2: after op2
        // Enqueued after the re-record: S still depends on the snapshot its wait saw.
        ASSERT_OK(launchCopy(s, ys, x, kN));      // ys = 1
        ASSERT_OK(launchAdd(s2, z, x2, x2, kN));  // z = 10
        ASSERT_OK(mtiaEventRecord(f1, s));
        ASSERT_OK(mtiaEventRecord(f2, s2));
        ASSERT_OK(mtiaStreamWaitEvent(o, f1, mtiaEventWaitDefault));
        ASSERT_OK(mtiaStreamWaitEvent(o, f2, mtiaEventWaitDefault));
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.numNodes, 4u);
    EXPECT_EQ(info.numEdges, 3u);
    DotGraph dot;
    ASSERT_TRUE(dumpDot(g, &dot));
    const int op1 = nodeOf(dot, "fill_f32"), op2 = nodeOf(dot, "scale_f32"),
              sOp = nodeOf(dot, "copy_f32"), s2Op = nodeOf(dot, "add_f32");
    ASSERT_TRUE(op1 >= 0 && op2 >= 0 && sOp >= 0 && s2Op >= 0);
    const Edges want{{op1, op2}, {op1, sOp}, {op2, s2Op}};
    EXPECT_EQ(dot.edges, want) << describeEdges(dot) << "\n" << dot.text;

    ASSERT_OK(mtiaGraphReplay(g, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(x, kN), kN, 1.0f));
    EXPECT_TRUE(allEqual(readBack(x2, kN), kN, 5.0f));
    EXPECT_TRUE(allEqual(readBack(ys, kN), kN, 1.0f));
    EXPECT_TRUE(allEqual(readBack(z, kN), kN, 10.0f));
}

TEST(CaptureStreams, T63_EdgeOnlyEventsMakeNoNodesAndKeepEagerState) {
    DeviceFloats x(kN), y(kN), z(kN);
    for (DeviceFloats* d : {&x, &y, &z}) ASSERT_OK(d->status());
    Stream o, s, t;
    ASSERT_CREATED(o, s, t);
    for (DeviceFloats* d : {&x, &y, &z}) ASSERT_TRUE(fillNow(o, *d, 0.0f, kN));
    Event e1, e2, never;
    ASSERT_CREATED(e1, e2, never);
    // Both events have a pending eager record: anything that recorded them for real would complete
    // them.
    Latch latch;
    ASSERT_OK(latch.block(t));
    ASSERT_OK(mtiaEventRecord(e1, t));
    ASSERT_OK(mtiaEventRecord(e2, t));
    ASSERT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e1));
    ASSERT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e2));

    Graph g;
    {
        EndCaptureAtExit guard({o, s});
        ASSERT_OK(mtiaStreamBeginCapture(o, mtiaStreamCaptureModeGlobal));
        ASSERT_OK(launchFill(o, x, 1.0f, kN));
        ASSERT_OK(mtiaEventRecord(e1, o));
        ASSERT_OK(mtiaStreamWaitEvent(s, e1, mtiaEventWaitDefault));
        ASSERT_OK(launchScale(s, y, x, 3.0f, kN));
        ASSERT_OK(mtiaEventRecord(e2, s));
        ASSERT_OK(mtiaEventRecord(never, s));
        ASSERT_OK(mtiaStreamWaitEvent(o, e2, mtiaEventWaitDefault));
        ASSERT_OK(launchAdd(o, z, x, y, kN));
        ASSERT_OK(mtiaStreamEndCapture(o, g.out()));
    }
    const mtiaGraphInfo info = graphInfo(g);
    EXPECT_EQ(info.numNodes, 3u) << "fork/join events made nodes";
    EXPECT_EQ(info.numEdges, 3u);
    DotGraph dot;
    ASSERT_TRUE(dumpDot(g, &dot));
    EXPECT_EQ(dot.labels.size(), 3u) << dot.text;

    // After the capture the events are what they were before it.
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e1));
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e2));
    EXPECT_OK(mtiaEventQuery(never));
    // A replay does not record them.
    ASSERT_OK(mtiaGraphReplay(g, o));
    ASSERT_OK(mtiaStreamSynchronize(o));
    EXPECT_TRUE(allEqual(readBack(z, kN), kN, 4.0f));
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e1)) << "the replay recorded a fork event";
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(e2)) << "the replay recorded a join event";
    EXPECT_OK(mtiaEventQuery(never));
    // Their eager records complete as usual.
    latch.open();
    EXPECT_TRUE(returnsWithin(kHang, [&] {
        EXPECT_OK(mtiaEventSynchronize(e1));
        EXPECT_OK(mtiaEventSynchronize(e2));
    }));
}
