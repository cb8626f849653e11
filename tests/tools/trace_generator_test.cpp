// mtia-mem's trace generator: the same seed gives the same trace, every block is freed once and
// only once (request, then completion), the sizes span small, mid and large tensors, the peak stays
// within the budget, and each workload shows its own pattern (a second stream, varying lengths,
// growing caches).
#include "trace_generator.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

namespace {

using namespace mtia::mem;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

GeneratedTrace make(const char* workload, int steps, uint64_t seed, uint64_t budget = 16 * kGiB) {
    GenerateOptions o;
    EXPECT_TRUE(workloadFromName(workload, o.workload));
    o.steps = steps;
    o.seed = seed;
    o.budgetBytes = budget;
    return generate(o);
}

struct Contents {
    size_t allocs = 0, small = 0, mid = 0, large = 0;
    std::set<uint64_t> streams;
    uint64_t peak = 0;
};

// Checks the trace is balanced and well ordered; returns what it holds.
Contents check(const std::vector<TraceEntry>& trace, const char* name) {
    Contents s;
    std::map<uint64_t, uint64_t> live, requested;
    uint64_t bytes = 0;
    double lastTime = 0;
    for (const TraceEntry& e : trace) {
        EXPECT_GE(e.timeUs, lastTime) << name;
        lastTime = e.timeUs;
        if (e.action == Action::Alloc) {
            EXPECT_GT(e.size, 0u) << name;
            EXPECT_TRUE(live.emplace(e.addr, e.size).second)
                << name << ": address allocated twice while live";
            EXPECT_EQ(requested.count(e.addr), 0u)
                << name << ": address reused before its free completed";
            ++s.allocs;
            s.small += e.size < kMiB;
            s.mid += e.size >= kMiB && e.size <= 10 * kMiB;
            s.large += e.size > 10 * kMiB;
            s.streams.insert(e.stream);
            bytes += e.size;
            s.peak = std::max(s.peak, bytes);
        } else if (e.action == Action::FreeRequested) {
            auto it = live.find(e.addr);
            EXPECT_NE(it, live.end()) << name << ": free of a block that is not live";
            if (it == live.end()) continue;
            EXPECT_EQ(it->second, e.size) << name;
            requested.emplace(e.addr, e.size);
            live.erase(it);
        } else if (e.action == Action::FreeCompleted) {
            auto it = requested.find(e.addr);
            EXPECT_NE(it, requested.end()) << name << ": completion without a request";
            if (it == requested.end()) continue;
            bytes -= it->second;
            requested.erase(it);
        } else {
            ADD_FAILURE() << name << ": unexpected action " << actionName(e.action);
        }
    }
    EXPECT_TRUE(live.empty()) << name << ": " << live.size() << " blocks never freed";
    EXPECT_TRUE(requested.empty()) << name << ": " << requested.size() << " frees never completed";
    return s;
}

TEST(TraceGenerator, SameSeedSameTrace) {
    for (const char* name : {"train", "train-varlen", "kv-cache"}) {
        const GeneratedTrace a = make(name, 2, 42);
        const GeneratedTrace b = make(name, 2, 42);
        ASSERT_EQ(a.snapshot.deviceTraces.size(), 1u);
        const auto& x = a.snapshot.deviceTraces[0];
        const auto& y = b.snapshot.deviceTraces[0];
        ASSERT_EQ(x.size(), y.size()) << name;
        for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_EQ(x[i].action, y[i].action) << name << " " << i;
            ASSERT_EQ(x[i].addr, y[i].addr);
            ASSERT_EQ(x[i].size, y[i].size);
            ASSERT_EQ(x[i].stream, y[i].stream);
            ASSERT_EQ(x[i].timeUs, y[i].timeUs);
        }
        EXPECT_EQ(a.model, b.model);
        EXPECT_TRUE(a.snapshot.segments.empty());
    }
    // Another seed, another trace.
    const GeneratedTrace one = make("train-varlen", 3, 1), two = make("train-varlen", 3, 2);
    const auto& a = one.snapshot.deviceTraces[0];
    const auto& b = two.snapshot.deviceTraces[0];
    bool differs = a.size() != b.size();
    for (size_t i = 0; !differs && i < a.size(); ++i) differs = a[i].size != b[i].size;
    EXPECT_TRUE(differs) << "another seed gives the same trace";
}

TEST(TraceGenerator, BalancedRealisticAndWithinBudget) {
    for (const char* name : {"train", "train-varlen", "kv-cache"}) {
        const GeneratedTrace g = make(name, name[0] == 'k' ? 150 : 2, 7);
        const Contents s = check(g.snapshot.deviceTraces[0], name);
        EXPECT_GT(s.allocs, 1000u) << name;
        EXPECT_GT(s.small, s.allocs / 10) << name << ": too few tensors below 1 MiB";
        EXPECT_GT(s.mid, s.allocs / 20) << name << ": too few tensors of 1-10 MiB";
        EXPECT_GT(s.large, 10u) << name << ": too few tensors above 10 MiB";
        EXPECT_EQ(s.peak, g.peakBytes) << name;
        EXPECT_LE(s.peak, 16 * kGiB * 7 / 10) << name << ": over 70% of the budget";
        EXPECT_GT(s.peak, 16 * kGiB / 4) << name << ": a 16 GiB device barely used";
        EXPECT_FALSE(g.model.empty());
    }
    // Training reduces gradients on a second stream; serving runs on one.
    EXPECT_EQ(check(make("train", 1, 1).snapshot.deviceTraces[0], "train").streams.size(), 2u);
    EXPECT_EQ(check(make("kv-cache", 50, 1).snapshot.deviceTraces[0], "kv").streams.size(), 1u);
}

TEST(TraceGenerator, WorkloadsHaveTheirPatterns) {
    // Varying lengths: the largest allocation (the fp32 logits) changes from step to step; at a
    // fixed length it repeats.
    auto logitSizes = [](const std::vector<TraceEntry>& trace) {
        std::set<uint64_t> sizes;
        for (const TraceEntry& e : trace)
            if (e.action == Action::Alloc && e.size > 10 * kMiB && e.size % 50304 == 0)
                sizes.insert(e.size);
        return sizes;
    };
    EXPECT_GE(logitSizes(make("train-varlen", 6, 3).snapshot.deviceTraces[0]).size(), 8u);
    EXPECT_LE(logitSizes(make("train", 6, 3).snapshot.deviceTraces[0]).size(), 4u);
    // KV caches grow: an allocation one 16-token block larger than the block freed right after it.
    const GeneratedTrace serving = make("kv-cache", 200, 5);
    const auto& kv = serving.snapshot.deviceTraces[0];
    size_t growths = 0;
    for (size_t i = 0; i + 1 < kv.size(); ++i) {
        if (kv[i].action != Action::Alloc || kv[i + 1].action != Action::FreeRequested ||
            kv[i].size <= kv[i + 1].size)
            continue;
        const uint64_t block = kv[i].size - kv[i + 1].size;  // 16 tokens of one layer's K or V
        growths += kv[i].size % block == 0 && block % 16 == 0;
    }
    EXPECT_GT(growths, 100u);
}

TEST(TraceGenerator, FollowsTheBudget) {
    const GeneratedTrace small = make("train", 1, 1, 4 * kGiB);
    const GeneratedTrace big = make("train", 1, 1, 64 * kGiB);
    EXPECT_LE(small.peakBytes, 4 * kGiB * 7 / 10);
    EXPECT_LE(big.peakBytes, 64 * kGiB * 7 / 10);
    EXPECT_GT(big.peakBytes, 2 * small.peakBytes);
    EXPECT_NE(small.model, big.model);
    const GeneratedTrace serving = make("kv-cache", 100, 1, 4 * kGiB);
    EXPECT_LE(serving.peakBytes, 4 * kGiB * 7 / 10);
    try {
        make("train", 1, 1, 256 * kMiB);
        ADD_FAILURE() << "a 256 MiB budget was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("--device-memory-budget 256.00 MiB"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(make("kv-cache", 1, 1, 256 * kMiB), std::invalid_argument);
    Workload w;
    EXPECT_FALSE(workloadFromName("inference", w));
}

}  // namespace
