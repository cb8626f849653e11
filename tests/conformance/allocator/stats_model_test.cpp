// Conformance: the statistics after random allocation and free sequences, against a model of what
// the caller did (allocation count, rounded and requested bytes per pool) and the invariants every
// snapshot keeps (all = small + large, peak >= current, current = allocated - freed since the last
// reset, reserved >= active, reserved = what mtiaMemGetInfo says is used, segment sizes per pool,
// device allocations less frees = segments), plus the reset semantics.
#include "alloc_test_util.hpp"

#include <random>

using namespace alloc_test;

namespace {

class StatsModel : public AllocTest {};

using Arr = mtiaStat (mtiaMemoryStats::*)[3];
struct Named {
    Arr field;
    const char* name;
};
const Named kArrays[] = {
    {&mtiaMemoryStats::allocation, "allocation"},
    {&mtiaMemoryStats::segment, "segment"},
    {&mtiaMemoryStats::active, "active"},
    {&mtiaMemoryStats::inactive_split, "inactive_split"},
    {&mtiaMemoryStats::allocated_bytes, "allocated_bytes"},
    {&mtiaMemoryStats::reserved_bytes, "reserved_bytes"},
    {&mtiaMemoryStats::active_bytes, "active_bytes"},
    {&mtiaMemoryStats::inactive_split_bytes, "inactive_split_bytes"},
    {&mtiaMemoryStats::requested_bytes, "requested_bytes"},
};
const char* const kViews[] = {"all", "small", "large"};

size_t rounded(size_t size) {
    return size < 512 ? 512 : (size + 511) / 512 * 512;
}
int poolOf(size_t r) {
    return r <= kMiB ? mtiaStatSmallPool : mtiaStatLargePool;
}

struct Live {
    void* p;
    size_t requested;
    size_t rounded;
    int pool;
};

struct Model {
    std::vector<Live> live;
    int64_t count[3] = {}, requested[3] = {}, roundedBytes[3] = {};
    bool maybePending = false;  // a free with recorded streams may still wait

    void add(const Live& l) {
        live.push_back(l);
        for (int v : {0, l.pool}) {
            ++count[v];
            requested[v] += static_cast<int64_t>(l.requested);
            roundedBytes[v] += static_cast<int64_t>(l.rounded);
        }
    }
    Live take(size_t i) {
        Live l = live[i];
        live[i] = live.back();
        live.pop_back();
        for (int v : {0, l.pool}) {
            --count[v];
            requested[v] -= static_cast<int64_t>(l.requested);
            roundedBytes[v] -= static_cast<int64_t>(l.rounded);
        }
        return l;
    }
};

// What resetAccumulated left: currents at that moment (current = base + allocated - freed after
// it).
struct Base {
    int64_t current[9][3] = {};
    int64_t segments = 0;
    void take(const mtiaMemoryStats& s) {
        for (size_t f = 0; f < 9; ++f)
            for (int v = 0; v < 3; ++v) current[f][v] = (s.*kArrays[f].field)[v].current;
        segments = s.segment[0].current;
    }
};

// Whether the allocator grows expandable segments (MTIA_ALLOC_CONF=expandable_segments:True).
bool expandable() {
    char buf[1024] = {};
    return mtiaAllocatorGetConfig(buf, sizeof buf) == mtiaSuccess &&
           std::string(buf).find("expandable_segments:True") != std::string::npos;
}

::testing::AssertionResult invariants(const mtiaMemoryStats& s, const Model& m, const Base& base,
                                      const Model& start) {
    static const bool grows = expandable();
    auto fail = [](const std::string& what) { return ::testing::AssertionFailure() << what; };
    for (size_t f = 0; f < 9; ++f) {
        const mtiaStat* a = s.*kArrays[f].field;
        const std::string n = kArrays[f].name;
        if (a[0].current != a[1].current + a[2].current)
            return fail(n + ".current: all != small + large");
        if (a[0].allocated != a[1].allocated + a[2].allocated)
            return fail(n + ".allocated: all != small + large");
        if (a[0].freed != a[1].freed + a[2].freed) return fail(n + ".freed: all != small + large");
        if (a[0].peak > a[1].peak + a[2].peak) return fail(n + ".peak: all > small + large");
        if (a[0].peak < a[1].peak || a[0].peak < a[2].peak)
            return fail(n + ".peak: all below a pool's peak");
        for (int v = 0; v < 3; ++v) {
            const std::string nv = n + "." + kViews[v];
            if (a[v].current < 0) return fail(nv + ".current < 0");
            if (a[v].peak < a[v].current) return fail(nv + ": peak < current");
            if (a[v].current != base.current[f][v] + a[v].allocated - a[v].freed)
                return fail(nv + ": current != current at reset + allocated - freed");
        }
    }
    for (int v = 0; v < 3; ++v) {
        const std::string view = kViews[v];
        if (s.allocation[v].current - start.count[v] != m.count[v])
            return fail("allocation." + view + " is " + std::to_string(s.allocation[v].current) +
                        ", the model says " + std::to_string(m.count[v] + start.count[v]));
        // A free still waiting for other streams keeps its request in requested_bytes (as in
        // active_bytes).
        const int64_t requested = s.requested_bytes[v].current - start.requested[v];
        if (m.maybePending ? requested < m.requested[v] : requested != m.requested[v])
            return fail("requested_bytes." + view + " disagrees with the model");
        if (s.requested_bytes[v].current > s.active_bytes[v].current)
            return fail("requested_bytes." + view + " > active_bytes");
        const int64_t alloc = s.allocated_bytes[v].current - start.roundedBytes[v];
        if ((v == mtiaStatSmallPool || grows) && alloc != m.roundedBytes[v])
            return fail("allocated_bytes." + view + " is not the sum of the rounded sizes");
        // A large block keeps what is left when that is 1 MiB or less.
        const int64_t largeCount = m.count[mtiaStatLargePool];
        if (v != mtiaStatSmallPool &&
            (alloc < m.roundedBytes[v] ||
             alloc > m.roundedBytes[v] + largeCount * static_cast<int64_t>(kMiB)))
            return fail("allocated_bytes." + view +
                        " is outside [rounded sizes, + 1 MiB per large block]");
        if (s.active[v].current < s.allocation[v].current)
            return fail("active." + view + " < allocation");
        if (s.active_bytes[v].current < s.allocated_bytes[v].current)
            return fail("active_bytes." + view + " < allocated");
        if (!m.maybePending && s.active[v].current != s.allocation[v].current)
            return fail("active." + view + " != allocation with no pending free");
        if (!m.maybePending && s.active_bytes[v].current != s.allocated_bytes[v].current)
            return fail("active_bytes." + view + " != allocated_bytes with no pending free");
        if (s.reserved_bytes[v].current <
            s.active_bytes[v].current + s.inactive_split_bytes[v].current)
            return fail("reserved_bytes." + view + " < active + inactive split");
        if (s.inactive_split_bytes[v].current < 512 * s.inactive_split[v].current)
            return fail("inactive_split_bytes." + view + " < 512 x inactive_split");
    }
    if (grows) {
        // Expandable segments map 2 MiB chunks (small pool) and 20 MiB chunks (large pool).
        if (s.reserved_bytes[1].current % static_cast<int64_t>(2 * kMiB) != 0 ||
            s.reserved_bytes[2].current % static_cast<int64_t>(20 * kMiB) != 0)
            return fail("expandable segments map other than 2 MiB / 20 MiB chunks");
        if (s.inactive_split[0].current != 0)
            return fail("expandable segments count as inactive split");
    } else {
        if (s.reserved_bytes[1].current != static_cast<int64_t>(2 * kMiB) * s.segment[1].current)
            return fail("small-pool segments are not 2 MiB each");
        if (s.reserved_bytes[2].current < static_cast<int64_t>(10 * kMiB) * s.segment[2].current ||
            s.reserved_bytes[2].current % static_cast<int64_t>(2 * kMiB) != 0)
            return fail("large-pool segments are not multiples of 2 MiB of at least 10 MiB");
        if (s.num_device_alloc - s.num_device_free != s.segment[0].current - base.segments)
            return fail("device allocations less frees since the reset != segments gained");
    }
    if (s.num_ooms != 0) return fail("num_ooms");
    if (s.oversize_allocations.current != 0 || s.oversize_segments.current != 0)
        return fail("oversize without a limit");
    if (s.max_split_size != -1) return fail("max_split_size");
    const MemInfo info = memInfo();
    if (static_cast<int64_t>(info.total - info.free) != s.reserved_bytes[0].current)
        return fail("reserved_bytes " + std::to_string(s.reserved_bytes[0].current) +
                    " != total - free " + std::to_string(info.total - info.free) +
                    " from mtiaMemGetInfo");
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult peaksAreCurrent(const mtiaMemoryStats& s) {
    for (const Named& n : kArrays)
        for (int v = 0; v < 3; ++v)
            if ((s.*n.field)[v].peak != (s.*n.field)[v].current)
                return ::testing::AssertionFailure()
                       << n.name << "." << kViews[v] << ": peak " << (s.*n.field)[v].peak
                       << " != current " << (s.*n.field)[v].current;
    if (s.oversize_allocations.peak != s.oversize_allocations.current ||
        s.oversize_segments.peak != s.oversize_segments.current)
        return ::testing::AssertionFailure() << "oversize peaks";
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult accumulatedAreZero(const mtiaMemoryStats& s,
                                              const mtiaMemoryStats& before) {
    for (const Named& n : kArrays)
        for (int v = 0; v < 3; ++v) {
            const mtiaStat& a = (s.*n.field)[v];
            const mtiaStat& b = (before.*n.field)[v];
            if (a.allocated != 0 || a.freed != 0)
                return ::testing::AssertionFailure()
                       << n.name << "." << kViews[v] << " allocated/freed not zeroed";
            if (a.current != b.current || a.peak != b.peak)
                return ::testing::AssertionFailure()
                       << n.name << "." << kViews[v] << " current or peak changed";
        }
    if (s.num_alloc_retries || s.num_ooms || s.num_sync_all_streams || s.num_device_alloc ||
        s.num_device_free)
        return ::testing::AssertionFailure() << "event counters not zeroed";
    if (s.oversize_allocations.allocated || s.oversize_allocations.freed ||
        s.oversize_segments.allocated || s.oversize_segments.freed)
        return ::testing::AssertionFailure() << "oversize totals not zeroed";
    return ::testing::AssertionSuccess();
}

}  // namespace

TEST_F(StatsModel, RandomSequencesKeepTheStatisticsConsistent) {
    Stream s1, s2;
    ASSERT_OK(s1.status());
    ASSERT_OK(s2.status());
    const mtiaStream_t streams[] = {nullptr, s1.get(), s2.get()};
    // MTIA_TEST_SEED replays another sequence (the failure message names the seed).
    const char* seedText = std::getenv("MTIA_TEST_SEED");
    const uint64_t seed = seedText != nullptr ? std::strtoull(seedText, nullptr, 10) : 20240611;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return static_cast<size_t>(rng() % n); };

    const mtiaMemoryStats before = memStats();
    ASSERT_OK(mtiaMemoryResetAccumulatedStats(0));
    Base base;
    base.take(memStats());
    Model start;  // what other tests left live (nothing, normally)
    for (int v = 0; v < 3; ++v) {
        start.count[v] = before.allocation[v].current;
        start.requested[v] = before.requested_bytes[v].current;
        start.roundedBytes[v] = before.allocated_bytes[v].current;
    }
    Model m;
    int64_t liveBytes = 0;
    constexpr int kOps = 2500;
    int resets = 0, peakResets = 0, empties = 0, recorded = 0;
    for (int op = 0; op < kOps; ++op) {
        const size_t dice = pick(1000);
        if (dice < 560 && liveBytes < static_cast<int64_t>(512 * kMiB)) {
            size_t size;
            const size_t kind = pick(100);
            if (kind < 35)
                size = 1 + pick(8 * kKiB);
            else if (kind < 60)
                size = 1 + pick(kMiB);
            else if (kind < 94)
                size = kMiB + 1 + pick(9 * kMiB);
            else
                size = 10 * kMiB + pick(30 * kMiB);
            const mtiaStream_t s = streams[pick(3)];
            void* p = nullptr;
            ASSERT_OK(mtiaMallocAsync(&p, size, s)) << "op " << op;
            const size_t r = rounded(size);
            m.add({p, size, r, poolOf(r)});
            liveBytes += static_cast<int64_t>(r);
        } else if (dice < 960 && !m.live.empty()) {
            const size_t i = pick(m.live.size());
            if (pick(20) == 0) {
                // Used on another stream: the free waits for it.
                const mtiaStream_t user = streams[1 + pick(2)];
                ASSERT_OK(mtiaRecordStream(m.live[i].p, user));
                ASSERT_OK(launchFill(user, static_cast<float*>(m.live[i].p), 1.0f, 16));
                m.maybePending = true;
                ++recorded;
            }
            const Live l = m.take(i);
            ASSERT_OK(mtiaFree(l.p)) << "op " << op;
            liveBytes -= static_cast<int64_t>(l.rounded);
        } else if (dice < 975) {
            ASSERT_OK(mtiaEmptyCache());  // also waits for pending frees
            m.maybePending = false;
            ++empties;
        } else if (dice < 990) {
            ASSERT_OK(mtiaMemoryResetPeakStats(0));
            EXPECT_TRUE(peaksAreCurrent(memStats())) << "op " << op;
            ++peakResets;
        } else {
            const mtiaMemoryStats b = memStats();
            ASSERT_OK(mtiaMemoryResetAccumulatedStats(0));
            const mtiaMemoryStats a = memStats();
            EXPECT_TRUE(accumulatedAreZero(a, b)) << "op " << op;
            base.take(a);
            ++resets;
        }
        const mtiaMemoryStats now = memStats();
        ASSERT_TRUE(invariants(now, m, base, start)) << "after op " << op;
        if (!m.live.empty() && op % 16 == 0) {
            const Live& l = m.live[pick(m.live.size())];
            mtiaPointerAttributes attr = MTIA_POINTER_ATTRIBUTES_INIT;
            ASSERT_OK(mtiaPointerGetAttributes(&attr, static_cast<char*>(l.p) + l.requested - 1));
            EXPECT_EQ(attr.base, l.p);
            EXPECT_EQ(attr.size, l.requested);
            EXPECT_EQ(attr.device, 0);
        }
    }
    EXPECT_GT(resets, 0);
    EXPECT_GT(peakResets, 0);
    EXPECT_GT(empties, 0);
    EXPECT_GT(recorded, 0);
    while (!m.live.empty()) ASSERT_OK(mtiaFree(m.take(0).p));
    ASSERT_OK(mtiaEmptyCache());
    m.maybePending = false;
    const mtiaMemoryStats end = memStats();
    EXPECT_TRUE(invariants(end, m, base, start));
    EXPECT_EQ(cur(end.allocation), cur(before.allocation));
    EXPECT_EQ(cur(end.active), cur(before.active));
    EXPECT_EQ(cur(end.reserved_bytes), cur(before.reserved_bytes));
    EXPECT_EQ(cur(end.inactive_split), cur(before.inactive_split));
}

TEST_F(StatsModel, PeaksFollowTheHighWaterMarkUntilReset) {
    void* a = mallocOn(6 * kMiB);
    void* b = mallocOn(4096);
    ASSERT_TRUE(a && b);
    const mtiaMemoryStats high = memStats();
    freeOk(a);
    freeOk(b);
    const mtiaMemoryStats low = memStats();
    EXPECT_EQ(low.allocated_bytes[0].peak, high.allocated_bytes[0].peak)
        << "the peak fell with current";
    EXPECT_GE(low.allocated_bytes[0].peak,
              cur(low.allocated_bytes) + static_cast<int64_t>(6 * kMiB + 4096));
    EXPECT_GE(low.allocation[mtiaStatLargePool].peak, 1);
    ASSERT_OK(mtiaMemoryResetPeakStats(0));
    const mtiaMemoryStats reset = memStats();
    EXPECT_TRUE(peaksAreCurrent(reset));
    EXPECT_EQ(reset.allocated_bytes[0].allocated, low.allocated_bytes[0].allocated)
        << "totals changed";
    EXPECT_EQ(reset.num_device_alloc, low.num_device_alloc);
    void* c = mallocOn(4096);
    EXPECT_EQ(memStats().allocated_bytes[mtiaStatSmallPool].peak,
              cur(reset.allocated_bytes, mtiaStatSmallPool) + 4096);
    freeOk(c);
}

TEST_F(StatsModel, ResetAccumulatedZeroesTotalsAndCountersOnly) {
    void* a = mallocOn(12 * kMiB);
    void* b = mallocOn(4096);
    ASSERT_TRUE(a && b);
    freeOk(b);
    const mtiaMemoryStats before = memStats();
    EXPECT_GT(before.num_device_alloc, 0);
    ASSERT_OK(mtiaMemoryResetAccumulatedStats(0));
    EXPECT_TRUE(accumulatedAreZero(memStats(), before));
    freeOk(a);
    const mtiaMemoryStats after = memStats();
    EXPECT_EQ(after.allocation[mtiaStatAll].freed, 1);
    EXPECT_EQ(after.allocated_bytes[mtiaStatLargePool].freed, static_cast<int64_t>(12 * kMiB));
    EXPECT_EQ(after.allocation[mtiaStatAll].allocated, 0);
}

TEST_F(StatsModel, MemGetInfoAgreesWithTheStatsOnEveryDevice) {
    for (int dev = 0; dev < devices_; ++dev) {
        SCOPED_TRACE(dev);
        DeviceScope scope(dev);
        void* a = mallocOn(3 * kMiB);
        void* b = mallocOn(100);
        ASSERT_TRUE(a && b);
        const mtiaMemoryStats s = memStats(dev);
        const MemInfo info = memInfo();
        mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
        ASSERT_OK(mtiaGetDeviceProperties(&prop, dev));
        EXPECT_EQ(info.total, prop.totalGlobalMem);
        EXPECT_EQ(static_cast<int64_t>(info.total - info.free), cur(s.reserved_bytes));
        EXPECT_EQ(cur(s.reserved_bytes), static_cast<int64_t>(22 * kMiB));
        freeOk(a);
        freeOk(b);
        ASSERT_OK(mtiaEmptyCache());
        EXPECT_EQ(memInfo().free, info.total);
    }
}
