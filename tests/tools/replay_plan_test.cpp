// How mtia-mem replay turns a trace into calls: which entry frees a block, blocks from before the
// trace, slots reused, streams numbered. (The calls themselves run in the end-to-end test.)
#include "replay_plan.hpp"

#include <gtest/gtest.h>

namespace {

using namespace mtia::mem;

TraceEntry entry(Action a, uint64_t addr, uint64_t size = 100, uint64_t stream = 0) {
    TraceEntry e;
    e.action = a;
    e.addr = addr;
    e.size = size;
    e.stream = stream;
    return e;
}

constexpr Action A = Action::Alloc, R = Action::FreeRequested, C = Action::FreeCompleted;

std::string ops(const ReplayPlan& p) {
    std::string s;
    for (const ReplayOp& op : p.ops)
        s += op.kind == ReplayOp::Alloc ? "A" + std::to_string(op.slot) + " "
                                        : "F" + std::to_string(op.slot) + " ";
    return s;
}

TEST(ReplayPlan, FreesAtTheRequestAndReusesSlots) {
    const ReplayPlan p =
        planReplay({entry(A, 10, 512), entry(A, 20), entry(R, 10), entry(C, 10),
                    entry(A, 30, 4096, 7), entry(Action::SegmentAlloc, 99), entry(R, 20),
                    entry(R, 30, 4096, 7), entry(C, 30, 4096, 7), entry(C, 20)});
    EXPECT_EQ(ops(p), "A0 A1 F0 A0 F1 F0 ");
    EXPECT_EQ(p.slots, 2u);
    EXPECT_TRUE(p.prelude.empty());
    ASSERT_EQ(p.streams.size(), 2u);
    EXPECT_EQ(p.streams[0], 0u);
    EXPECT_EQ(p.streams[1], 7u);
    EXPECT_EQ(p.ops[0].size, 512u);
    EXPECT_EQ(p.ops[3].stream, 1u);
    EXPECT_EQ(p.ops[3].size, 4096u);
}

TEST(ReplayPlan, CompletionsAloneFree) {
    const ReplayPlan p = planReplay({entry(A, 10), entry(A, 20), entry(C, 20), entry(C, 10)});
    EXPECT_EQ(ops(p), "A0 A1 F1 F0 ");
}

TEST(ReplayPlan, BlocksFromBeforeTheTraceComeFirst) {
    // 10 is allocated and freed in the trace; 50 and 60 were live when it began (the ring buffer
    // dropped their allocations): they are allocated in the prelude into slots no block of the
    // trace used before.
    const ReplayPlan p =
        planReplay({entry(A, 10), entry(R, 10), entry(C, 10), entry(R, 50, 2048, 3), entry(C, 50),
                    entry(C, 60, 64), entry(A, 70)});
    ASSERT_EQ(p.prelude.size(), 2u);
    EXPECT_EQ(p.prelude[0].slot, 1u);
    EXPECT_EQ(p.prelude[0].size, 2048u);
    EXPECT_EQ(p.streams[p.prelude[0].stream], 3u);
    EXPECT_EQ(p.prelude[1].slot, 2u);
    EXPECT_EQ(p.prelude[1].size, 64u);
    EXPECT_EQ(ops(p), "A0 F0 F1 F2 A2 ");
    EXPECT_EQ(p.slots, 3u);
}

TEST(ReplayPlan, OddTracesStayConsistent) {
    // A second request for the same block is ignored; an allocation at a live address (its free
    // fell out) frees the old block first; an address reused after its completion is a new block.
    const ReplayPlan p =
        planReplay({entry(A, 10), entry(R, 10), entry(R, 10), entry(A, 20), entry(A, 20),
                    entry(C, 10), entry(A, 10), entry(R, 10), entry(R, 20)});
    EXPECT_EQ(ops(p), "A0 F0 A0 F0 A0 A1 F1 F0 ");
    EXPECT_TRUE(p.prelude.empty());
    EXPECT_TRUE(planReplay({}).ops.empty());
}

}  // namespace
