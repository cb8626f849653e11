// What history recording records: every allocator action with PyTorch's
// meanings of its fields, the modes, the ring and its wrap-around.
#include "history_test_util.hpp"

namespace history_test {
namespace {

using History = HistoryTest;

TEST_F(History, RecordsAllocFreeAndSegmentsWithPyTorchMeanings) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    Stream s;
    int64_t sid = -1;
    ASSERT_OK(mtiaStreamGetId(s, &sid));
    const int64_t before = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    void* p = mallocOn(3 * kMiB + 5, s);  // a large block: a segment of its own
    freeOk(p);
    ASSERT_OK(mtiaStreamSynchronize(s));
    ASSERT_OK(mtiaEmptyCache());
    JsonSnapshot snap;
    const auto allocs = snap.entries("alloc");
    ASSERT_EQ(allocs.size(), 1u);
    EXPECT_EQ(u64(allocs[0], "addr"), addr(p));
    EXPECT_EQ(u64(allocs[0], "size"), 3 * kMiB + 5) << "alloc entries carry the requested bytes";
    EXPECT_EQ(i64(allocs[0], "stream"), sid);
    // Stamps are converted from the CPU's counter at snapshot time: epoch microseconds to within a
    // little.
    EXPECT_GE(i64(allocs[0], "time_us"), before - 1000);
    EXPECT_LE(i64(allocs[0], "time_us"), std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                                 .count() +
                                             1000);
    const auto segAllocs = snap.entries("segment_alloc");
    ASSERT_EQ(segAllocs.size(), 1u);
    EXPECT_LE(u64(segAllocs[0], "addr"), addr(p));
    EXPECT_GE(u64(segAllocs[0], "size"), 3 * kMiB + 5)
        << "segment entries carry the segment's bytes";
    for (const char* action : {"free_requested", "free_completed"}) {
        const auto frees = snap.entries(action);
        ASSERT_EQ(frees.size(), 1u) << action;
        EXPECT_EQ(u64(frees[0], "addr"), addr(p)) << action;
        EXPECT_EQ(u64(frees[0], "size"), 3 * kMiB + 5)
            << action << " carries the block's requested bytes";
    }
    const auto segFrees = snap.entries("segment_free");
    ASSERT_EQ(segFrees.size(), 1u);
    EXPECT_EQ(u64(segFrees[0], "addr"), u64(segAllocs[0], "addr"));
    const auto snaps = snap.entries("snapshot");
    ASSERT_EQ(snaps.size(), 1u);
    EXPECT_EQ(u64(snaps[0], "addr"), 0u);
    // Order and time: segment_alloc, alloc, free_requested, free_completed, segment_free, snapshot.
    std::vector<std::string> order;
    int64_t last = 0;
    for (element e : snap.trace()) {
        order.emplace_back(str(e, "action"));
        EXPECT_GE(i64(e, "time_us"), last);
        last = i64(e, "time_us");
        EXPECT_EQ(e["pool_id"].at(0).get_uint64().value(), 0u);
        EXPECT_EQ(e["pool_id"].at(1).get_uint64().value(), 0u);
    }
    EXPECT_EQ(order, (std::vector<std::string>{"segment_alloc", "alloc", "free_requested",
                                               "free_completed", "segment_free", "snapshot"}));
}

TEST_F(History, OutOfMemoryIsRecordedWithTheDevicesFreeBytes) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    MemInfo info = memInfo();
    void* p = nullptr;
    ASSERT_EQ(mtiaMalloc(&p, info.total * 2), mtiaErrorMemoryAllocation);
    JsonSnapshot snap;
    const auto ooms = snap.entries("oom");
    ASSERT_EQ(ooms.size(), 1u);
    EXPECT_GE(u64(ooms[0], "size"), info.total * 2) << "oom carries the rounded request";
    EXPECT_LE(u64(ooms[0], "device_free"), info.total);
    EXPECT_FALSE(ooms[0]["addr"].error() == simdjson::SUCCESS)
        << "oom has device_free in place of addr";
}

TEST_F(History, RingKeepsTheNewestEntries) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 7));
    for (int i = 0; i < 20; ++i) {
        void* p = mallocOn(kKiB * (i + 1));
        freeOk(p);
    }
    JsonSnapshot snap;
    const array t = snap.trace();
    ASSERT_EQ(t.size(), 7u);
    // The newest: ..., alloc 20 KiB, free_requested, free_completed, snapshot.
    std::vector<std::string> tail;
    for (element e : t) tail.emplace_back(str(e, "action"));
    EXPECT_EQ(tail.back(), "snapshot");
    EXPECT_EQ(u64(t.at(3).value(), "size"), 20 * kKiB);
    EXPECT_EQ(str(t.at(3).value(), "action"), "alloc");
    EXPECT_EQ(u64(t.at(0).value(), "size"), 19 * kKiB);
}

TEST_F(History, ZeroMaxEntriesIsTheBoundedDefault) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    void* p = mallocOn(kKiB);
    for (int i = 0; i < 50001; ++i) {  // 2 entries each
        ASSERT_OK(mtiaFree(p));
        p = mallocOn(kKiB);
    }
    freeOk(p);
    JsonSnapshot snap;
    EXPECT_EQ(snap.trace().size(), 100000u);
}

TEST_F(History, ShrinkingTheRingKeepsTheNewestAndGrowingKeepsOrder) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 6));
    for (int i = 1; i <= 5; ++i)
        freeOk(mallocOn(kKiB * i));  // wraps: alloc, free_requested, free_completed
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 3));
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 10));
    freeOk(mallocOn(kKiB * 6));
    JsonSnapshot snap;
    std::vector<uint64_t> sizes;
    for (element e : snap.trace())
        if (str(e, "action") != "snapshot") sizes.push_back(u64(e, "size"));
    EXPECT_EQ(sizes,
              (std::vector<uint64_t>{5 * kKiB, 5 * kKiB, 5 * kKiB, 6 * kKiB, 6 * kKiB, 6 * kKiB}));
}

TEST_F(History, StateModeKeepsNoTraceAndOffForgetsEverything) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryState, mtiaStacksCpp, 0));
    void* p = mallocOn(kMiB);
    {
        JsonSnapshot snap;
        EXPECT_EQ(snap.trace().size(), 0u) << "state mode keeps no trace";
        auto [seg, block] = snap.block(p);
        ASSERT_FALSE(block.is_null());
        EXPECT_FALSE(frameNames(block).empty()) << "state mode keeps the live block's stack";
    }
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksCpp, 0));
    {
        JsonSnapshot snap;
        auto [seg, block] = snap.block(p);
        ASSERT_FALSE(block.is_null());
        EXPECT_TRUE(frameNames(block).empty()) << "turning recording off forgets the stacks";
        EXPECT_TRUE(frameNames(seg).empty());
    }
    freeOk(p);
}

TEST_F(History, TracesOnlyWithTheFlag) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    void* p = mallocOn(kMiB);
    JsonSnapshot fast(0);
    int devices = 0;
    ASSERT_OK(mtiaGetDeviceCount(&devices));
    ASSERT_EQ(fast.root()["device_traces"].get_array().size(), static_cast<size_t>(devices));
    for (int d = 0; d < devices; ++d) EXPECT_EQ(fast.trace(d).size(), 0u);
    EXPECT_FALSE(fast.block(p).second.is_null());
    freeOk(p);
}

TEST_F(History, PrivatePoolIdsInEntriesAndSegments) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    mtiaMemPoolId_t pool{};
    ASSERT_OK(mtiaGraphPoolHandle(&pool));
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, pool, nullptr));
    void* p = mallocOn(kMiB);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, pool));
    JsonSnapshot snap;
    const auto allocs = snap.entries("alloc");
    ASSERT_EQ(allocs.size(), 1u);
    EXPECT_EQ(allocs[0]["pool_id"].at(1).get_uint64().value(), pool.second);
    auto [seg, block] = snap.block(p);
    ASSERT_FALSE(seg.is_null());
    EXPECT_EQ(seg["segment_pool_id"].at(0).get_uint64().value(), pool.first);
    EXPECT_EQ(seg["segment_pool_id"].at(1).get_uint64().value(), pool.second);
    freeOk(p);
    ASSERT_OK(mtiaMemPoolRelease(0, pool));
}

TEST_F(History, PendingFreeUntilTheOtherStreamIsDone) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    Stream other;
    Latch latch;
    ASSERT_OK(latch.block(other));
    void* p = mallocOn(kMiB);
    ASSERT_OK(mtiaRecordStream(p, other));
    freeOk(p);
    {
        JsonSnapshot snap;
        auto [seg, block] = snap.block(p);
        ASSERT_FALSE(block.is_null());
        EXPECT_EQ(str(block, "state"), "active_pending_free");
        EXPECT_EQ(snap.entries("free_requested").size(), 1u);
        EXPECT_EQ(snap.entries("free_completed").size(), 0u);
    }
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(other));
    freeOk(mallocOn(
        kKiB, other));  // the next allocation completes the free (on another stream: no reuse)
    JsonSnapshot snap;
    size_t completed = 0;
    for (element e : snap.entries("free_completed")) completed += u64(e, "addr") == addr(p) ? 1 : 0;
    EXPECT_EQ(completed, 1u);
    EXPECT_EQ(str(snap.block(p).second, "state"), "inactive");
}

TEST_F(History, AnnotationsAndUserMetadata) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    ASSERT_OK(mtiaMemoryAnnotate("phase", "forward"));
    void* p = mallocOn(kKiB);
    ASSERT_OK(mtiaMemoryAnnotate("phase", nullptr));
    freeOk(p);
    JsonSnapshot snap;
    EXPECT_EQ(str(snap.entries("alloc").at(0), "user_metadata"), "phase=forward");
    EXPECT_EQ(str(snap.entries("free_requested").at(0), "user_metadata"), "");
    const array notes = snap.root()["external_annotations"].get_array().value();
    ASSERT_GE(notes.size(), 2u);
    const element start = notes.at(notes.size() - 2).value();
    const element end = notes.at(notes.size() - 1).value();
    EXPECT_EQ(str(start, "name"), "phase");
    EXPECT_EQ(str(start, "value"), "forward");
    EXPECT_EQ(str(start, "stage"), "START");
    EXPECT_EQ(str(end, "stage"), "END");
    EXPECT_LE(i64(start, "time_us"), i64(end, "time_us"));
    EXPECT_EQ(i64(start, "device"), 0);
}

// The expandable-segment suite runs with MTIA_ALLOC_CONF=expandable_segments:True.
TEST_F(History, ExpandableSegmentsMapAndUnmap) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    void* p = mallocOn(5 * kMiB);
    void* q = mallocOn(7 * kMiB);
    {
        JsonSnapshot snap;
        auto [seg, block] = snap.block(q);
        ASSERT_FALSE(seg.is_null());
        EXPECT_TRUE(seg["is_expandable"].get_bool().value());
        EXPECT_GE(snap.entries("segment_map").size(), 1u);
        EXPECT_EQ(snap.entries("segment_alloc").size(), 0u);
    }
    freeOk(p);
    freeOk(q);
    ASSERT_OK(mtiaEmptyCache());
    JsonSnapshot snap;
    uint64_t mapped = 0;
    uint64_t unmapped = 0;
    for (element e : snap.entries("segment_map")) mapped += u64(e, "size");
    for (element e : snap.entries("segment_unmap")) unmapped += u64(e, "size");
    EXPECT_GE(mapped, 12 * kMiB);
    EXPECT_EQ(mapped, unmapped);
}

}  // namespace
}  // namespace history_test
