// The graph layer below the ABI: the IR's checks and DOT output, and how an
// executable lays nodes out on lanes and replays them on the simulated device.
#include "core/error.hpp"
#include "drivers/sim/sim_driver.h"
#include "graph/executable.hpp"
#include "graph/graph_ir.hpp"
#include "platform/driver/loader.hpp"
#include "streams/stream.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using mtia::graph::DeviceTarget;
using mtia::graph::Executable;
using mtia::graph::Graph;
using mtia::graph::Node;
using mtia::graph::NodeId;
using mtia::graph::NodeKind;

Node hostNode(void (*fn)(void*), void* data, std::vector<NodeId> deps) {
    Node n;
    n.kind = NodeKind::HostFunc;
    n.cmd.type = mtiaDrvCmdHostFunc;
    n.cmd.u.hostFunc.fn = fn;
    n.cmd.u.hostFunc.userData = data;
    n.deps = std::move(deps);
    return n;
}

void noop(void*) {}

TEST(GraphIr, CountsEdgesAndRefusesForwardDependencies) {
    Graph g(0);
    EXPECT_EQ(g.add(hostNode(noop, nullptr, {})), 0u);
    EXPECT_EQ(g.add(hostNode(noop, nullptr, {0})), 1u);
    EXPECT_EQ(g.add(hostNode(noop, nullptr, {0, 1})), 2u);
    EXPECT_EQ(g.nodeCount(), 3u);
    EXPECT_EQ(g.edgeCount(), 3u);
    EXPECT_THROW(g.add(hostNode(noop, nullptr, {3})), mtia::Error);  // itself
    EXPECT_THROW(g.add(hostNode(noop, nullptr, {7})), mtia::Error);  // a later node
    EXPECT_EQ(g.nodeCount(), 3u);
    EXPECT_EQ(g.edgeCount(), 3u);
}

TEST(GraphIr, DotListsEveryNodeAndEdge) {
    Graph g(1);
    g.add(hostNode(noop, nullptr, {}));
    Node k;
    k.kind = NodeKind::Kernel;
    k.cmd.type = mtiaDrvCmdKernel;
    k.cmd.u.kernel.grid = {2, 1, 1};
    k.cmd.u.kernel.block = {1, 1, 1};
    k.name = "scale\"f32";  // a quote must come out escaped
    k.deps = {0};
    g.add(std::move(k));
    g.add(hostNode(noop, nullptr, {0, 1}));
    const std::string dot = g.toDot("t");
    EXPECT_EQ(dot.rfind("digraph", 0), 0u);
    std::set<std::pair<int, int>> edges;
    const std::regex edge(R"(n(\d+) -> n(\d+))");
    for (auto it = std::sregex_iterator(dot.begin(), dot.end(), edge); it != std::sregex_iterator();
         ++it)
        edges.insert({std::stoi((*it)[1]), std::stoi((*it)[2])});
    EXPECT_EQ(edges, (std::set<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 2}}));
    for (int i = 0; i < 3; ++i)
        EXPECT_NE(dot.find("n" + std::to_string(i) + " [shape="), std::string::npos);
    EXPECT_NE(dot.find("scale\\\"f32"), std::string::npos);
    EXPECT_NE(dot.find("grid (2,1,1)"), std::string::npos);
}

// The simulated device, loaded the way the runtime loads its built-in driver.
class OnDevice : public ::testing::Test {
protected:
    void SetUp() override {
        static constexpr mtia::driver::BuiltinDriver builtins[] = {{"sim", mtiaSimDriverGetOps}};
        driver_ = mtia::driver::loadDriver("sim", builtins, "");
        mtiaDrvDeviceInfo info{};
        info.structSize = sizeof(info);
        ASSERT_EQ(driver_->ops().deviceGetInfo(0, &info), mtiaSuccess);
        target_ = DeviceTarget{driver_.get(), 0, 0, info.engines};
        stream_ = std::make_shared<mtia::streams::Stream>(*driver_, 0, 0, 0, 0);
    }
    std::unique_ptr<mtia::driver::Driver> driver_;
    DeviceTarget target_;
    std::shared_ptr<mtia::streams::Stream> stream_;
};

struct Trace {
    std::atomic<int> next{0};
    int order[64] = {};
};
struct Step {
    Trace* trace;
    int id;
};
void record(void* p) {
    auto* s = static_cast<Step*>(p);
    s->trace->order[s->id] = s->trace->next.fetch_add(1);
}

TEST_F(OnDevice, StraightLineIsOneLaneAndReplaysInOrder) {
    Trace t;
    Step steps[8];
    Graph g(0);
    for (int i = 0; i < 8; ++i) {
        steps[i] = {&t, i};
        g.add(hostNode(record, &steps[i],
                       i == 0 ? std::vector<NodeId>{} : std::vector<NodeId>{NodeId(i - 1)}));
    }
    Executable exec(g, target_);
    EXPECT_EQ(exec.lanes(), 1u);
    for (int r = 0; r < 3; ++r) {
        t.next = 0;
        exec.launch(*stream_);
        stream_->synchronize();
        for (int i = 0; i < 8; ++i) EXPECT_EQ(t.order[i], i) << "replay " << r;
    }
}

TEST_F(OnDevice, DiamondUsesOneLanePerBranchAndKeepsEveryEdge) {
    if (target_.engines < 4) GTEST_SKIP() << "needs 4 engines (MTIA_SIM_ENGINES)";
    // 0 -> {1,2,3,4} -> 5 (each branch two nodes: 1->6, 2->7, 3->8, 4->9; 5 depends on 6..9)
    Trace t;
    Step steps[10];
    for (int i = 0; i < 10; ++i) steps[i] = {&t, i};
    Graph g(0);
    g.add(hostNode(record, &steps[0], {}));
    for (int b = 1; b <= 4; ++b) g.add(hostNode(record, &steps[b], {0}));
    for (int b = 1; b <= 4; ++b) g.add(hostNode(record, &steps[4 + b], {NodeId(b)}));
    g.add(hostNode(record, &steps[9], {5, 6, 7, 8}));
    Executable exec(g, target_);
    EXPECT_EQ(exec.lanes(), 4u);
    exec.launch(*stream_);
    stream_->synchronize();
    for (int b = 1; b <= 4; ++b) {
        EXPECT_LT(t.order[0], t.order[b]);
        EXPECT_LT(t.order[b], t.order[4 + b]);
        EXPECT_LT(t.order[4 + b], t.order[9]);
    }
    EXPECT_EQ(t.order[9], 9);
}

TEST_F(OnDevice, ReplaysOnAnotherStreamWaitForThePreviousOne) {
    std::atomic<int> running{0}, overlaps{0};
    struct Ctx {
        std::atomic<int>* running;
        std::atomic<int>* overlaps;
    } ctx{&running, &overlaps};
    auto body = [](void* p) {
        auto* c = static_cast<Ctx*>(p);
        if (c->running->fetch_add(1) != 0) c->overlaps->fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        c->running->fetch_sub(1);
    };
    Graph g(0);
    g.add(hostNode(body, &ctx, {}));
    Executable exec(g, target_);
    auto other = std::make_shared<mtia::streams::Stream>(*driver_, 0, 0, 0, 0);
    for (int r = 0; r < 20; ++r) exec.launch(r % 2 == 0 ? *stream_ : *other);
    exec.waitIdle();
    stream_->synchronize();
    other->synchronize();
    EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
