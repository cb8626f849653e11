// The caching allocator's size policy at its boundaries: rounding, pool choice, segment sizes,
// which cached blocks may serve a request, and when a block is split.
#include "allocator/size_policy.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>

using namespace mtia::allocator;

namespace {

constexpr size_t kMiB = AllocConfig::kMiB;

}  // namespace

TEST(SizePolicy, RoundsToMultiplesOf512) {
    const AllocConfig c;
    EXPECT_EQ(roundSize(0, c), 512u);
    EXPECT_EQ(roundSize(1, c), 512u);
    EXPECT_EQ(roundSize(511, c), 512u);
    EXPECT_EQ(roundSize(512, c), 512u);
    EXPECT_EQ(roundSize(513, c), 1024u);
    EXPECT_EQ(roundSize(kMiB + 1, c), kMiB + 512);
    EXPECT_EQ(roundSize(SIZE_MAX - 511, c), SIZE_MAX - 511);  // already a multiple of 512
    EXPECT_THROW(roundSize(SIZE_MAX - 510, c), mtia::Error);  // would overflow
}

TEST(SizePolicy, RoundupPower2Divisions) {
    const AllocConfig four = AllocConfig::parse("roundup_power2_divisions:4");
    EXPECT_EQ(roundSize(1200 * kMiB, four), 1280 * kMiB);  // steps of 256 MiB between 1 and 2 GiB
    EXPECT_EQ(roundSize(1024 * kMiB, four), 1024 * kMiB);  // a power of two stays
    EXPECT_EQ(roundSize(1280 * kMiB, four), 1280 * kMiB);  // a step stays
    EXPECT_EQ(roundSize(1281 * kMiB, four), 1536 * kMiB);
    EXPECT_EQ(roundSize(3 * kMiB, four), 3 * kMiB);  // steps of 512 KiB between 2 and 4 MiB
    EXPECT_EQ(roundSize(3 * kMiB + 1, four), 3 * kMiB + 512 * 1024);
    // At most 4 minimum blocks: plain 512-byte rounding.
    EXPECT_EQ(roundSize(2000, four), 2048u);
    EXPECT_EQ(roundSize(2049, four), 2560u);  // 2049 > 2048: steps of 512 between 2048 and 4096
    // Per interval: 1 or 0 divisions mean plain rounding.
    const AllocConfig mixed = AllocConfig::parse("roundup_power2_divisions:[1:1,2:8,>:2]");
    EXPECT_EQ(roundSize(kMiB + 1000, mixed), kMiB + 1024);  // interval [1, 2) MiB: 1 division
    EXPECT_EQ(roundSize(2 * kMiB + 1, mixed),
              2 * kMiB + 256 * 1024);                 // [2, 4) MiB: steps of 256 KiB
    EXPECT_EQ(roundSize(5 * kMiB, mixed), 6 * kMiB);  // [4, 8) MiB and up: halves
    EXPECT_THROW(roundSize(SIZE_MAX - 5, mixed), mtia::Error);
}

TEST(SizePolicy, PoolsAndSegmentSizes) {
    EXPECT_EQ(poolFor(512), PoolKind::Small);
    EXPECT_EQ(poolFor(kMiB), PoolKind::Small);  // up to and including 1 MiB
    EXPECT_EQ(poolFor(kMiB + 512), PoolKind::Large);
    EXPECT_EQ(segmentSize(512), 2 * kMiB);
    EXPECT_EQ(segmentSize(kMiB), 2 * kMiB);
    EXPECT_EQ(segmentSize(kMiB + 512), 20 * kMiB);
    EXPECT_EQ(segmentSize(10 * kMiB - 512), 20 * kMiB);
    EXPECT_EQ(segmentSize(10 * kMiB), 10 * kMiB);  // from 10 MiB on: its own segment, 2 MiB-rounded
    EXPECT_EQ(segmentSize(10 * kMiB + 512), 12 * kMiB);
    EXPECT_EQ(segmentSize(SIZE_MAX - 2 * kMiB + 1), SIZE_MAX - 2 * kMiB + 1);
    EXPECT_THROW(segmentSize(SIZE_MAX - 511), mtia::Error);
}

TEST(SizePolicy, OversizeBlocksServeOnlyOversizeRequests) {
    const AllocConfig unlimited;
    EXPECT_TRUE(mayServe(100 * kMiB, kMiB + 512, unlimited));  // no limit: any larger block
    EXPECT_FALSE(mayServe(kMiB, kMiB + 512, unlimited));       // too small
    const AllocConfig c = AllocConfig::parse("max_split_size_mb:64,max_non_split_rounding_mb:32");
    EXPECT_TRUE(mayServe(63 * kMiB, 30 * kMiB, c));
    EXPECT_FALSE(
        mayServe(64 * kMiB, 30 * kMiB, c));  // an oversize block never serves a smaller request
    EXPECT_TRUE(mayServe(64 * kMiB, 64 * kMiB, c));
    EXPECT_TRUE(mayServe(95 * kMiB, 64 * kMiB, c));   // wastes 31 MiB < 32
    EXPECT_FALSE(mayServe(96 * kMiB, 64 * kMiB, c));  // wastes 32 MiB
}

TEST(SizePolicy, SplitRules) {
    const AllocConfig c;
    // Small pool: any remainder of at least 512 bytes.
    EXPECT_TRUE(shouldSplit(PoolKind::Small, false, 2 * kMiB, 2 * kMiB - 512, c));
    EXPECT_FALSE(shouldSplit(PoolKind::Small, false, 1024, 1024, c));
    // Large pool: more than 1 MiB left.
    EXPECT_FALSE(shouldSplit(PoolKind::Large, false, 20 * kMiB, 19 * kMiB, c));
    EXPECT_TRUE(shouldSplit(PoolKind::Large, false, 20 * kMiB, 19 * kMiB - 512, c));
    // Expandable segments split like the small pool.
    EXPECT_TRUE(shouldSplit(PoolKind::Large, true, 20 * kMiB, 20 * kMiB - 512, c));
    // Oversize requests are never split off.
    const AllocConfig limited = AllocConfig::parse("max_split_size_mb:64");
    EXPECT_TRUE(shouldSplit(PoolKind::Large, false, 80 * kMiB, 32 * kMiB, limited));
    EXPECT_FALSE(shouldSplit(PoolKind::Large, false, 100 * kMiB, 64 * kMiB, limited));
}
