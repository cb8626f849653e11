// mtia-mem's report building blocks on snapshots built in code: site names, the --json writer, live
// blocks as a trace replays (pending frees, blocks from before the ring, a reused address), summary
// figures at their edges, diff identity, and the timeline's point budget. (The fixtures' figures
// are checked end to end by mtia_mem_commands.sh.)
#include "json_writer.hpp"
#include "live_memory.hpp"
#include "memory_timeline.hpp"
#include "snapshot_diff.hpp"
#include "snapshot_summary.hpp"
#include "stack_labels.hpp"
#include "trace_analysis.hpp"

#include <gtest/gtest.h>

namespace {

using namespace mtia::mem;

TraceEntry entry(Action action, uint64_t addr, uint64_t size, double timeUs = 0,
                 StackId stack = 0) {
    TraceEntry e;
    e.action = action;
    e.addr = addr;
    e.size = size;
    e.timeUs = timeUs;
    e.stack = stack;
    return e;
}

Segment segment(int device, uint64_t address, std::vector<Block> blocks) {
    Segment s;
    s.device = device;
    s.address = address;
    for (Block& b : blocks) {
        b.address = address + s.totalSize;
        s.totalSize += b.size;
    }
    s.blocks = std::move(blocks);
    return s;
}

Block block(uint64_t size, BlockState state, StackId stack = 0) {
    Block b;
    b.size = size;
    b.requestedSize = size;
    b.state = state;
    b.stack = stack;
    return b;
}

TEST(StackLabels, NameTheProgramsInnermostFrame) {
    StackTable t;
    const StackId torch = t.intern({{"c10/cuda/CUDACachingAllocator.cpp", 10, "c10::cuda::malloc"},
                                    {"Python/ceval.c", 5, "_PyEval_EvalFrameDefault"},
                                    {"torch/cuda/memory.py", 3, "caching_allocator_alloc"},
                                    {"model.py", 42, "forward"}});
    EXPECT_EQ(siteLabel(t, torch), "forward (model.py:42)");
    const StackId onlyMachinery =
        t.intern({{"", 0, "mtia::allocator::DeviceAllocator::allocate"}, {"??", 0, "??"}});
    EXPECT_EQ(siteLabel(t, onlyMachinery), "mtia::allocator::DeviceAllocator::allocate")
        << "the innermost, if all are";
    const StackId native =
        t.intern({{"/usr/lib/x86_64-linux-gnu/libmtia.so.1", 0,
                   "_ZN4mtia9allocator15DeviceAllocator8allocateEm"},
                  {"/usr/lib/x86_64-linux-gnu/libmtia.so.1", 0, "mtiaMallocAsync"},
                  {"/opt/app/bin/server", 0, "Server::handle(Request const&)"}});
    EXPECT_EQ(siteLabel(t, native), "Server::handle(Request const&) (/opt/app/bin/server)")
        << "our runtime's frames";
    EXPECT_EQ(siteLabel(t, 0), "(no stack recorded)");
    EXPECT_EQ(frameLabel({"a.py", 0, ""}), "? (a.py)");
    EXPECT_EQ(stackLabels(t, torch, 2).size(), 2u);
    EXPECT_EQ(t.find({{"model.py", 42, "forward"}}), std::nullopt);
    EXPECT_EQ(t.find(t.frames(torch)), torch);
}

TEST(JsonWriter, NestsAndEscapes) {
    JsonWriter j;
    j.beginObject()
        .member("a", uint64_t{1})
        .key("b")
        .beginArray()
        .value("x\"\n")
        .value(true)
        .null()
        .endArray();
    j.member("c", 0.5).member("nan", 0.0 / 0.0).key("e").beginObject().endObject().endObject();
    EXPECT_EQ(j.finish(), "{\"a\": 1, \"b\": [\"x\\\"\\u000a\", true, null], \"c\": 0.5, \"nan\": "
                          "null, \"e\": {}}\n");
}

TEST(LiveMemory, CountsPendingFreesAndBlocksFromBeforeTheTrace) {
    Snapshot s;
    s.deviceTraces.push_back({
        entry(Action::FreeCompleted, 0x100,
              50),  // allocated before the ring, freed without a request in it
        entry(Action::Alloc, 0x200, 10),
        entry(Action::FreeRequested, 0x200, 10),
        entry(Action::Alloc, 0x300, 20),
        entry(Action::Alloc, 0x300, 30),  // reused while live: the first block must have gone
        entry(Action::SegmentFree, 0x200, 1000),
        entry(Action::FreeCompleted, 0x200, 10),
    });
    s.segments.push_back(segment(
        0, 0x1000, {block(7, BlockState::ActiveAllocated), block(9, BlockState::Inactive)}));
    LiveMemory live(s, 0);
    EXPECT_EQ(live.preludeBytes(), 57u);
    EXPECT_EQ(live.preludeBlocks(), 2u);
    std::vector<uint64_t> after;
    int64_t deltas = 0;
    for (const TraceEntry& e : s.deviceTraces[0]) {
        live.apply(e, [&](StackId, int64_t d) { deltas += d; });
        after.push_back(live.liveBytes());
    }
    EXPECT_EQ(after, (std::vector<uint64_t>{7, 17, 17, 37, 47, 47, 37}));
    EXPECT_EQ(deltas, 37 - 57);
    EXPECT_EQ(live.allocs(), 3u);
    EXPECT_EQ(live.frees(), 2u);  // 0x100 at its completion, 0x200 at its request (once)
}

TEST(TraceAnalysis, PeakBeforeTheFirstEntryAndUntimedTraces) {
    Snapshot s;
    s.hasTraces = true;
    s.deviceTraces.push_back(
        {entry(Action::FreeCompleted, 0x100, 50), entry(Action::Alloc, 0x200, 10)});
    s.deviceTraces.push_back({});
    const auto reports = analyzeTraces(s);
    ASSERT_EQ(reports.size(), 1u) << "devices without entries are left out";
    const DeviceTraceReport& r = reports[0];
    EXPECT_EQ(r.peakBytes, 50u);
    EXPECT_FALSE(r.peakEntry.has_value());
    EXPECT_FALSE(r.timed);
    EXPECT_FALSE(r.rate(r.allocs).has_value());
    EXPECT_EQ(r.liveAtPeak.bytes(), 50u);
    EXPECT_EQ(isoTime(1700000000000000), "2023-11-14T22:13:20.000000Z");
    EXPECT_EQ(isoTime(-1), "-1 us");
    EXPECT_EQ(isoTime(1e300), "1e+300 us");
}

TEST(Summary, FragmentationAndSplitBytes) {
    Snapshot s;
    s.segments.push_back(segment(0, 0x1000, {block(8, BlockState::Inactive)}));
    s.segments.push_back(
        segment(0, 0x2000,
                {block(4, BlockState::ActiveAllocated, 1), block(2, BlockState::Inactive),
                 block(6, BlockState::ActivePendingFree)}));
    s.segments.push_back(segment(3, 0x3000, {block(4, BlockState::ActiveAllocated)}));
    s.segments.back().poolId[1] = 2;
    const auto d = summarize(s);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].inactive, 10u);
    EXPECT_EQ(d[0].inactiveSplit, 2u) << "a segment that is one free block is not split";
    EXPECT_DOUBLE_EQ(d[0].fragmentation(), 1 - 8.0 / 10);
    EXPECT_EQ(d[0].active, 10u);
    EXPECT_EQ(d[1].device, 3);
    EXPECT_EQ(d[1].fragmentation(), 0.0) << "nothing free";
    ASSERT_EQ(d[1].privatePools.size(), 1u);
    EXPECT_EQ(d[1].privatePools[0].allocated, 4u);
}

TEST(Diff, ABlockIsItsDeviceAddressSizeAndStack) {
    Snapshot a, b;
    const std::vector<Frame> x{{"x.py", 1, "x"}}, y{{"y.py", 2, "y"}};
    const StackId ax = a.stacks.intern(x);
    b.stacks.intern(y);  // the tables number stacks differently
    const StackId bx = b.stacks.intern(x), by = b.stacks.find(y).value();
    a.segments.push_back(segment(0, 0x1000,
                                 {block(4, BlockState::ActiveAllocated, ax),
                                  block(4, BlockState::ActiveAllocated, ax),
                                  block(4, BlockState::ActiveAllocated, ax)}));
    b.segments.push_back(segment(0, 0x1000,
                                 {block(4, BlockState::ActiveAllocated, bx),  // the same
                                  block(4, BlockState::ActiveAllocated, by),  // other stack: new
                                  block(4, BlockState::ActivePendingFree, bx)}));  // freed
    b.segments.push_back(
        segment(1, 0x1000, {block(4, BlockState::ActiveAllocated, bx)}));  // other device: new
    const SnapshotDiff d = diffSnapshots(a, b);
    EXPECT_EQ(d.added.blocks(), 2u);
    EXPECT_EQ(d.added.bytes(), 8u);
    EXPECT_EQ(d.freedBlocks, 2u);
    EXPECT_EQ(d.freedBytes, 8u);
    ASSERT_EQ(d.devices.size(), 2u);
    EXPECT_EQ(d.devices.at(1).newBlocks, 1u);
}

TEST(Timeline, KeepsPeaksWithinItsPointBudget) {
    Snapshot s;
    s.hasTraces = true;
    auto& t = s.deviceTraces.emplace_back();
    for (int i = 0; i < 10000; ++i) {
        t.push_back(entry(Action::Alloc, 0x1000 + uint64_t(i), i == 6789 ? 1000000 : 10, 1e6 + i,
                          i % 3 + 1));
        if (i % 2 == 1)
            t.push_back(entry(Action::FreeCompleted, 0x1000 + uint64_t(i), 10, 1e6 + i));
    }
    for (int i = 0; i < 3; ++i) s.stacks.intern({{"f.py", i + 1, "f"}});
    const DeviceTraceReport r = analyzeTraces(s).at(0);
    const Timeline tl = buildTimeline(s, r, 2, 101);
    EXPECT_LE(tl.x.size(), 101u);
    EXPECT_EQ(tl.sites.size(), 2u);
    uint64_t peak = 0;
    for (const auto& p : tl.bytes) {
        ASSERT_EQ(p.size(), 3u);
        peak = std::max(peak, p[0] + p[1] + p[2]);
    }
    EXPECT_EQ(peak, r.peakBytes) << "the peak survives downsampling";
    EXPECT_TRUE(tl.timed);
    EXPECT_DOUBLE_EQ(tl.x.back(), 9999e-6);
}

}  // namespace
