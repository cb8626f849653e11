// Conformance: captures and replays from several threads at once (streams-graphs-anchors.md (c),
// items 92-93): two ThreadLocal captures live together give two independent graphs; two threads
// replaying their graphs (and synchronising) while a third thread captures in ThreadLocal mode all
// get correct results and leave that capture valid. Semantics as in mtia_graph.h; uses only the
// public header.
#include "graph_test_util.hpp"

#include <latch>

using namespace mtia_test;

namespace {
constexpr mtiaStreamCaptureMode kThreadLocal = mtiaStreamCaptureModeThreadLocal;
}  // namespace

// 92. Two threads capture at the same time (ThreadLocal) on their own streams: both captures are
// live together with different ids, each graph holds only its own thread's work, and both replay
// correctly.
TEST(GraphConcurrency, T92_TwoThreadLocalCaptures) {
    constexpr uint64_t n = 512;
    constexpr int kRounds = 10;
    Stream s0, s1;
    DeviceFloats x0(n), x1(n), y0(n), y1(n);
    ASSERT_CREATED(s0, s1);
    ASSERT_TRUE(fillNow(s0, x0, 1.0f, n));
    ASSERT_TRUE(fillNow(s1, x1, 10.0f, n));
    for (int round = 0; round < kRounds; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        ASSERT_TRUE(fillNow(s0, y0, -1.0f, n));
        ASSERT_TRUE(fillNow(s1, y1, -1.0f, n));
        struct Result {
            mtiaError_t begin = mtiaErrorUnknown, work = mtiaErrorUnknown, end = mtiaErrorUnknown;
            uint64_t id = 0;
            mtiaStreamCaptureStatus otherSeen = mtiaStreamCaptureStatusNone;
            mtiaGraph_t graph = nullptr;
        } r[2];
        std::latch begun(2), worked(2);
        auto body = [&](int t) {
            mtiaStream_t mine = t == 0 ? s0.get() : s1.get();
            mtiaStream_t other = t == 0 ? s1.get() : s0.get();
            Result& res = r[t];
            res.begin = mtiaStreamBeginCapture(mine, kThreadLocal);
            begun.arrive_and_wait();  // both captures are live from here
            mtiaStreamCaptureStatus st = mtiaStreamCaptureStatusNone;
            mtiaStreamGetCaptureInfo(mine, &st, &res.id);
            mtiaStreamIsCapturing(other, &res.otherSeen);
            if (t == 0) {
                res.work = launchScale(mine, y0, x0, 2.0f, n);  // y0 = 2 x0
            } else {
                res.work = launchScale(mine, y1, x1, 3.0f, n);  // y1 = 3 x1 + x1
                if (res.work == mtiaSuccess) res.work = launchAdd(mine, y1, y1, x1, n);
            }
            worked.arrive_and_wait();  // neither ends before the other has captured its work
            res.end = mtiaStreamEndCapture(mine, &res.graph);
        };
        std::thread a(body, 0), b(body, 1);
        a.join();
        b.join();
        Graph g0, g1;
        *g0.out() = r[0].graph;
        *g1.out() = r[1].graph;
        for (int t = 0; t < 2; ++t) {
            SCOPED_TRACE("thread " + std::to_string(t));
            EXPECT_EQ(r[t].begin, mtiaSuccess) << mtiaGetErrorName(r[t].begin);
            EXPECT_EQ(r[t].work, mtiaSuccess) << mtiaGetErrorName(r[t].work);
            EXPECT_EQ(r[t].end, mtiaSuccess) << mtiaGetErrorName(r[t].end);
            EXPECT_NE(r[t].id, 0u);
            EXPECT_EQ(r[t].otherSeen, mtiaStreamCaptureStatusActive);
            ASSERT_NE(r[t].graph, nullptr);
        }
        EXPECT_NE(r[0].id, r[1].id);
        EXPECT_EQ(captureStatus(s0), mtiaStreamCaptureStatusNone);
        EXPECT_EQ(captureStatus(s1), mtiaStreamCaptureStatusNone);
        EXPECT_EQ(graphInfo(g0).numNodes, 1u);
        EXPECT_EQ(graphInfo(g1).numNodes, 2u);
        EXPECT_EQ(graphInfo(g1).numEdges, 1u);
        EXPECT_EQ(graphInfo(g0).captureId, r[0].id);
        EXPECT_EQ(graphInfo(g1).captureId, r[1].id);
        // Nothing ran during the captures; each graph does only its own work.
        EXPECT_TRUE(allEqual(readBack(y0, n), n, -1.0f));
        EXPECT_TRUE(allEqual(readBack(y1, n), n, -1.0f));
        ASSERT_OK(mtiaGraphReplay(g0, s0));
        ASSERT_OK(mtiaStreamSynchronize(s0));
        EXPECT_TRUE(allEqual(readBack(y0, n), n, 2.0f));
        EXPECT_TRUE(allEqual(readBack(y1, n), n, -1.0f)) << "g0 ran thread 1's work";
        ASSERT_OK(mtiaGraphReplay(g1, s1));
        ASSERT_OK(mtiaStreamSynchronize(s1));
        EXPECT_TRUE(allEqual(readBack(y1, n), n, 40.0f));
    }
}

// 93. Two threads replay their own graphs with new inputs (and synchronise their streams) while a
// third thread captures in ThreadLocal mode: every replay is correct, the capture stays valid
// throughout and its graph holds exactly the nodes the third thread added.
TEST(GraphConcurrency, T93_ReplaysWhileAThirdThreadCaptures) {
    constexpr uint64_t n = 256;
    constexpr int kReplays = 300;
    Stream sa, sb, sc;
    DeviceFloats xa(n), ya(n), xb(n), yb(n), z(1), one(1);
    ASSERT_CREATED(sa, sb, sc);
    ASSERT_TRUE(fillNow(sc, z, 0.0f, 1));
    ASSERT_TRUE(fillNow(sc, one, 1.0f, 1));
    // The replayed graphs, captured beforehand: ya = 2 xa, yb = 3 xb.
    Graph ga, gb;
    for (int t = 0; t < 2; ++t) {
        Stream& s = t == 0 ? sa : sb;
        ASSERT_OK(mtiaStreamBeginCapture(s, mtiaStreamCaptureModeGlobal));
        EndCaptureAtExit guard({s.get()});
        ASSERT_OK(t == 0 ? launchScale(s, ya, xa, 2.0f, n) : launchScale(s, yb, xb, 3.0f, n));
        ASSERT_OK(mtiaStreamEndCapture(s, (t == 0 ? ga : gb).out()));
    }

    std::atomic<bool> captureLive{false};
    std::atomic<int> replayersDone{0};
    std::atomic<int> failures{0};
    std::mutex messagesMu;
    std::vector<std::string> messages;
    auto failure = [&](const std::string& what) {
        failures.fetch_add(1);
        std::lock_guard lock(messagesMu);
        if (messages.size() < 20) messages.push_back(what);
    };

    // The capturing thread: adds z += 1 nodes until both replayers are done.
    uint64_t nodesAdded = 0;
    mtiaError_t beginRc = mtiaErrorUnknown, endRc = mtiaErrorUnknown;
    mtiaStreamCaptureStatus statusAtEnd = mtiaStreamCaptureStatusNone;
    mtiaGraph_t captured = nullptr;
    std::thread capturer([&] {
        beginRc = mtiaStreamBeginCapture(sc, kThreadLocal);
        captureLive.store(true);
        if (beginRc != mtiaSuccess) return;
        while (replayersDone.load() < 2 || nodesAdded < 100) {
            const mtiaError_t rc = launchAdd(sc, z, z, one, 1);
            if (rc != mtiaSuccess) {
                failure(std::string("capture: launch returned ") + mtiaGetErrorName(rc) + ": " +
                        mtiaGetLastErrorMessage());
                break;
            }
            ++nodesAdded;
            if (nodesAdded >= 50000) break;
            std::this_thread::sleep_for(
                50us);  // keep the capture live for the replayers' whole run
        }
        mtiaStreamIsCapturing(sc, &statusAtEnd);
        endRc = mtiaStreamEndCapture(sc, &captured);
    });

    auto replayer = [&](int t) {
        while (!captureLive.load()) std::this_thread::yield();
        mtiaStream_t s = t == 0 ? sa.get() : sb.get();
        mtiaGraph_t g = t == 0 ? ga.get() : gb.get();
        float* x = t == 0 ? xa.get() : xb.get();
        float* y = t == 0 ? ya.get() : yb.get();
        const float k = t == 0 ? 2.0f : 3.0f;
        std::vector<float> hx(n), hy(n);
        for (int i = 0; i < kReplays; ++i) {
            for (uint64_t j = 0; j < n; ++j)
                hx[j] = static_cast<float>(i * 1000 + t * 500) + static_cast<float>(j);
            mtiaError_t rc =
                mtiaMemcpyAsync(x, hx.data(), n * sizeof(float), mtiaMemcpyHostToDevice, s);
            if (rc == mtiaSuccess) rc = mtiaGraphReplay(g, s);
            if (rc == mtiaSuccess && i % 50 == 49)
                rc = mtiaStreamSynchronize(s);  // legal: the capture is ThreadLocal
            if (rc == mtiaSuccess)
                rc = mtiaMemcpyAsync(hy.data(), y, n * sizeof(float), mtiaMemcpyDeviceToHost, s);
            if (rc != mtiaSuccess) {
                failure("replayer " + std::to_string(t) + " iteration " + std::to_string(i) + ": " +
                        mtiaGetErrorName(rc) + ": " + mtiaGetLastErrorMessage());
                break;
            }
            for (uint64_t j = 0; j < n; ++j)
                if (hy[j] != k * hx[j]) {
                    failure("replayer " + std::to_string(t) + " iteration " + std::to_string(i) +
                            ": element " + std::to_string(j) + " is " + std::to_string(hy[j]) +
                            ", expected " + std::to_string(k * hx[j]));
                    break;
                }
        }
        replayersDone.fetch_add(1);
    };
    std::thread r0(replayer, 0), r1(replayer, 1);
    r0.join();
    r1.join();
    capturer.join();
    Graph gc;
    *gc.out() = captured;

    EXPECT_EQ(failures.load(), 0) << [&] {
        std::string all;
        for (const std::string& m : messages) all += m + "\n";
        return all;
    }();
    ASSERT_EQ(beginRc, mtiaSuccess) << mtiaGetErrorName(beginRc);
    EXPECT_EQ(statusAtEnd, mtiaStreamCaptureStatusActive)
        << "the capture was invalidated by the replaying threads";
    ASSERT_EQ(endRc, mtiaSuccess) << mtiaGetErrorName(endRc);
    ASSERT_NE(gc.get(), nullptr);
    EXPECT_EQ(graphInfo(ga).numReplays, static_cast<uint64_t>(kReplays));
    EXPECT_EQ(graphInfo(gb).numReplays, static_cast<uint64_t>(kReplays));
    EXPECT_EQ(graphInfo(gc).numNodes, nodesAdded);
    EXPECT_TRUE(allEqual(readBack(z, 1), 1, 0.0f)) << "captured work ran during the capture";
    ASSERT_OK(mtiaGraphReplay(gc, sc));
    ASSERT_OK(mtiaStreamSynchronize(sc));
    EXPECT_TRUE(allEqual(readBack(z, 1), 1, static_cast<float>(nodesAdded)));
}
