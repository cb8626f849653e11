// Snapshots and statistics describe the same allocator: the sums over a snapshot's segments equal
// mtiaMemoryGetStats at the same moment (issue 16, item 8), also while a free waits for another
// stream (the block is active_pending_free: still active, still counted in requested_bytes, as in
// PyTorch) and in a private pool; and snapshots write a device's default stream as 0, as PyTorch
// does, while other streams keep their mtiaStreamGetId (item 9; the pickle is checked by
// snapshot_python_check.sh).
#include "history_test_util.hpp"

#include <string>

namespace history_test {
namespace {

using SnapshotStats = HistoryTest;
using SnapshotStreams = HistoryTest;

// The snapshot's sums for one statistics view (mtiaStatAll, mtiaStatSmallPool, mtiaStatLargePool).
struct Sums {
    int64_t reserved = 0, allocated = 0, active = 0, requested = 0, allocations = 0,
            activeBlocks = 0, segments = 0, pending = 0;
};

Sums sumsOf(const JsonSnapshot& snap, int view) {
    Sums out;
    for (element s : snap.segments()) {
        const bool small = str(s, "segment_type") == "small";
        if (view == mtiaStatSmallPool && !small) continue;
        if (view == mtiaStatLargePool && small) continue;
        ++out.segments;
        out.reserved += i64(s, "total_size");
        out.allocated += i64(s, "allocated_size");
        out.active += i64(s, "active_size");
        out.requested += i64(s, "requested_size");
        for (element b : s["blocks"].get_array()) {
            const std::string_view state = str(b, "state");
            if (state == "active_allocated") ++out.allocations;
            if (state != "inactive") ++out.activeBlocks;
            if (state == "active_pending_free") ++out.pending;
        }
    }
    return out;
}

// Every view of the statistics equals the snapshot's sums; says which field differs.
::testing::AssertionResult statsMatch(const JsonSnapshot& snap, const mtiaMemoryStats& st) {
    const char* const views[] = {"all", "small", "large"};
    for (int v = 0; v < 3; ++v) {
        const Sums s = sumsOf(snap, v);
        const struct {
            const char* name;
            int64_t stat, sum;
        } pairs[] = {
            {"reserved_bytes / total_size", st.reserved_bytes[v].current, s.reserved},
            {"allocated_bytes / allocated_size", st.allocated_bytes[v].current, s.allocated},
            {"active_bytes / active_size", st.active_bytes[v].current, s.active},
            {"requested_bytes / requested_size", st.requested_bytes[v].current, s.requested},
            {"allocation / active_allocated blocks", st.allocation[v].current, s.allocations},
            {"active / active blocks", st.active[v].current, s.activeBlocks},
            {"segment / segments", st.segment[v].current, s.segments},
        };
        for (const auto& p : pairs)
            if (p.stat != p.sum)
                return ::testing::AssertionFailure()
                       << views[v] << ": " << p.name << ": statistics say " << p.stat
                       << ", the snapshot's segments " << p.sum;
    }
    return ::testing::AssertionSuccess();
}

int64_t pendingBlocks(const JsonSnapshot& snap) {
    return sumsOf(snap, mtiaStatAll).pending;
}

// The "stream" of the segment holding p, or -1 when no segment holds it.
int64_t segmentStream(const JsonSnapshot& snap, const void* p) {
    for (element s : snap.segments())
        if (addr(p) >= u64(s, "address") && addr(p) - u64(s, "address") < u64(s, "total_size"))
            return static_cast<int64_t>(u64(s, "stream"));
    return -1;
}

TEST_F(SnapshotStats, EqualSnapshotSumsWhileAFreeWaitsForABlockedStream) {
    Stream owner, user;
    ASSERT_OK(owner.status());
    ASSERT_OK(user.status());
    Latch latch;
    ASSERT_OK(latch.block(user));
    ASSERT_TRUE(latch.waitEntered());
    // A small and a large block with unrounded requests, both used by the blocked stream, then
    // freed.
    void* small = mallocOn(1000, owner);
    void* large = mallocOn(3 * kMiB + 5, owner);
    void* kept = mallocOn(700, owner);
    ASSERT_NE(small, nullptr);
    ASSERT_NE(large, nullptr);
    ASSERT_NE(kept, nullptr);
    for (void* p : {small, large}) ASSERT_OK(mtiaRecordStream(p, user));
    const mtiaMemoryStats before = memStats();
    freeOk(small);
    freeOk(large);
    {
        const mtiaMemoryStats during = memStats();
        const JsonSnapshot snap(0);
        ASSERT_EQ(pendingBlocks(snap), 2) << "both frees wait for the blocked stream:\n"
                                          << snap.text();
        EXPECT_TRUE(statsMatch(snap, during)) << snap.text();
        EXPECT_EQ(cur(during.requested_bytes), cur(before.requested_bytes))
            << "a pending free keeps its request in requested_bytes, as it stays in active_bytes";
        EXPECT_EQ(cur(during.allocated_bytes),
                  cur(before.allocated_bytes) - static_cast<int64_t>(1024 + (3 * kMiB + 512)))
            << "allocated_bytes drops at the free";
    }
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(user));
    freeOk(mallocOn(512, owner));  // the next allocation completes the frees whose streams finished
    {
        const mtiaMemoryStats after = memStats();
        const JsonSnapshot snap(0);
        EXPECT_EQ(pendingBlocks(snap), 0) << snap.text();
        EXPECT_TRUE(statsMatch(snap, after)) << snap.text();
        EXPECT_EQ(cur(after.requested_bytes),
                  cur(before.requested_bytes) - static_cast<int64_t>(1000 + 3 * kMiB + 5));
    }
    freeOk(kept);
}

TEST_F(SnapshotStats, EqualSnapshotSumsForAPendingFreeInAPrivatePool) {
    Stream owner, user;
    ASSERT_OK(owner.status());
    ASSERT_OK(user.status());
    mtiaMemPoolId_t pool{};
    ASSERT_OK(mtiaGraphPoolHandle(&pool));
    Latch latch;
    ASSERT_OK(latch.block(user));
    ASSERT_TRUE(latch.waitEntered());
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, pool, nullptr));  // this thread's allocations
    void* p = mallocOn(5 * kMiB + 3, owner);
    void* q = mallocOn(2000, owner);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, pool));
    ASSERT_NE(p, nullptr);
    ASSERT_NE(q, nullptr);
    ASSERT_OK(mtiaRecordStream(p, user));
    ASSERT_OK(mtiaRecordStream(q, user));
    freeOk(p);
    freeOk(q);
    {
        const mtiaMemoryStats during = memStats();
        const JsonSnapshot snap(0);
        ASSERT_EQ(pendingBlocks(snap), 2) << snap.text();
        EXPECT_TRUE(statsMatch(snap, during)) << snap.text();
    }
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(user));
    freeOk(mallocOn(512, owner));            // completes the pool's frees
    ASSERT_OK(mtiaMemPoolRelease(0, pool));  // and its idle segments go back
    const mtiaMemoryStats after = memStats();
    const JsonSnapshot snap(0);
    EXPECT_EQ(pendingBlocks(snap), 0) << snap.text();
    EXPECT_TRUE(statsMatch(snap, after)) << snap.text();
}

TEST_F(SnapshotStreams, DefaultStreamIsZeroOtherStreamsKeepTheirIds) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    mtiaStream_t def = nullptr;
    ASSERT_OK(mtiaGetDefaultStream(0, &def));
    int64_t defId = -1;
    ASSERT_OK(mtiaStreamGetId(def, &defId));
    ASSERT_GT(defId, 0);
    Stream other;
    ASSERT_OK(other.status());
    int64_t otherId = -1;
    ASSERT_OK(mtiaStreamGetId(other, &otherId));
    void* onDefault = mallocOn(3 * kMiB + 1, def);  // large: segments of their own
    void* onOther = mallocOn(3 * kMiB + 2, other);
    ASSERT_NE(onDefault, nullptr);
    ASSERT_NE(onOther, nullptr);
    {
        const JsonSnapshot snap;
        EXPECT_EQ(segmentStream(snap, onDefault), 0)
            << "the default stream (id " << defId << ") is written as 0";
        EXPECT_EQ(segmentStream(snap, onOther), otherId);
        for (element e : snap.entries("alloc")) {
            if (u64(e, "addr") == addr(onDefault)) {
                EXPECT_EQ(u64(e, "stream"), 0u) << "trace entry of the default stream";
            } else if (u64(e, "addr") == addr(onOther)) {
                EXPECT_EQ(i64(e, "stream"), otherId);
            }
        }
        EXPECT_EQ(snap.entries("alloc").size(), 2u);
    }
    freeOk(onDefault);
    freeOk(onOther);
    const JsonSnapshot snap;
    size_t seen = 0;
    for (const char* action : {"free_requested", "free_completed"})
        for (element e : snap.entries(action)) {
            ++seen;
            EXPECT_EQ(u64(e, "stream"),
                      u64(e, "addr") == addr(onDefault) ? 0u : static_cast<uint64_t>(otherId))
                << action;
        }
    EXPECT_EQ(seen, 4u);
}

}  // namespace
}  // namespace history_test
