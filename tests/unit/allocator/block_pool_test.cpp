// Blocks and pools: best fit per stream, the oversize rules, split and merge.
#include "allocator/block_pool.hpp"
#include "allocator/segment.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

using namespace mtia::allocator;

namespace {

constexpr size_t kMiB = AllocConfig::kMiB;

// A segment of one free block, owned by the test.
struct Segments {
    std::vector<std::unique_ptr<Block>> owned;
    Block* make(BlockPool& pool, uint64_t stream, uintptr_t address, size_t size) {
        owned.push_back(std::make_unique<Block>());
        Block* b = owned.back().get();
        b->address = address;
        b->size = size;
        b->stream = stream;
        b->pool = &pool;
        return b;
    }
};

}  // namespace

TEST(BlockPool, BestFitIsTheSmallestLargeEnoughBlockOfTheStream) {
    BlockPool pool(PoolKind::Large);
    Segments s;
    const AllocConfig c;
    Block* s1big = s.make(pool, 1, 0x100000000, 40 * kMiB);
    Block* s1small = s.make(pool, 1, 0x200000000, 4 * kMiB);
    Block* s1mid = s.make(pool, 1, 0x300000000, 8 * kMiB);
    Block* s2 = s.make(pool, 2, 0x400000000, 6 * kMiB);
    for (Block* b : {s1big, s1small, s1mid, s2}) pool.insert(b);
    EXPECT_EQ(pool.bestFit(1, 4 * kMiB, c), s1small);
    EXPECT_EQ(pool.bestFit(1, 5 * kMiB, c), s1mid);
    EXPECT_EQ(pool.bestFit(1, 9 * kMiB, c), s1big);
    EXPECT_EQ(pool.bestFit(1, 41 * kMiB, c), nullptr);
    EXPECT_EQ(pool.bestFit(2, 5 * kMiB, c),
              s2);  // stream-ordered reuse: only its own stream's blocks
    EXPECT_EQ(pool.bestFit(2, 7 * kMiB, c), nullptr);  // stream 1's blocks are not candidates
    EXPECT_EQ(pool.bestFit(3, 1 * kMiB, c), nullptr);
    // Equal sizes: the lower address first.
    Block* twin = s.make(pool, 1, 0x050000000, 8 * kMiB);
    pool.insert(twin);
    EXPECT_EQ(pool.bestFit(1, 5 * kMiB, c), twin);
    EXPECT_TRUE(pool.erase(twin));
    EXPECT_FALSE(pool.erase(twin));
    EXPECT_EQ(pool.size(), 4u);
}

TEST(BlockPool, OversizeBlocksFollowMaxSplitSize) {
    BlockPool pool(PoolKind::Large);
    Segments s;
    const AllocConfig c = AllocConfig::parse("max_split_size_mb:64,max_non_split_rounding_mb:20");
    Block* big = s.make(pool, 1, 0x100000000, 100 * kMiB);
    pool.insert(big);
    EXPECT_EQ(pool.bestFit(1, 30 * kMiB, c),
              nullptr);  // a small request never takes an oversize block
    EXPECT_EQ(pool.bestFit(1, 70 * kMiB, c), nullptr);  // wastes 30 MiB >= 20
    EXPECT_EQ(pool.bestFit(1, 90 * kMiB, c), big);      // wastes 10 MiB
}

TEST(BlockPool, SplitAndMergeRestoreTheSegment) {
    BlockPool pool(PoolKind::Small);
    Segment seg;
    Block* whole = pool.makeBlock();
    whole->segment = &seg;
    seg.head = whole;
    whole->address = 0x1000000;
    whole->size = 2 * kMiB;
    whole->stream = 7;
    whole->pool = &pool;
    // Three pieces: a | b | rest.
    Block* rest = splitBlock(whole, 4096);
    Block* a = whole;
    Block* b = rest;
    rest = splitBlock(b, 8192);
    EXPECT_EQ(a->size, 4096u);
    EXPECT_EQ(b->address, 0x1000000u + 4096);
    EXPECT_EQ(b->size, 8192u);
    EXPECT_EQ(rest->address, 0x1000000u + 4096 + 8192);
    EXPECT_EQ(rest->size, 2 * kMiB - 4096 - 8192);
    EXPECT_EQ(a->next, b);
    EXPECT_EQ(b->prev, a);
    EXPECT_EQ(b->next, rest);
    EXPECT_EQ(rest->prev, b);
    EXPECT_EQ(rest->stream, 7u);
    EXPECT_TRUE(a->isSplit() && b->isSplit() && rest->isSplit());

    // a and b are handed out; the rest is cached.
    a->allocated = b->allocated = true;
    pool.insert(rest);
    // Freeing a: its only neighbour (b) is allocated, nothing merges.
    a->allocated = false;
    EXPECT_EQ(mergeFreeNeighbours(a), 0u);
    pool.insert(a);
    // Freeing b merges both neighbours back into one block: the whole segment again.
    b->allocated = false;
    EXPECT_EQ(mergeFreeNeighbours(b), 2 * kMiB - 8192);
    EXPECT_EQ(b->address, 0x1000000u);
    EXPECT_EQ(b->size, 2 * kMiB);
    EXPECT_FALSE(b->isSplit());
    EXPECT_EQ(pool.size(), 0u);  // the neighbours left the pool (and were destroyed)
    EXPECT_EQ(seg.head, b);      // a was the segment's head; the merged block took its place
    pool.destroyBlock(b);
}

TEST(BlockPool, NeighboursNotCachedInThePoolStayApart) {
    // A free neighbour that is not cached (its frees still wait for other streams) is not merged.
    BlockPool pool(PoolKind::Small);
    Block* whole = pool.makeBlock();
    whole->address = 0x2000000;
    whole->size = 2 * kMiB;
    whole->stream = 1;
    whole->pool = &pool;
    Block* rest = splitBlock(whole, 512);
    rest->allocated = false;  // free, but not in the pool
    EXPECT_EQ(mergeFreeNeighbours(whole), 0u);
    EXPECT_EQ(whole->next, rest);
    pool.insert(rest);
    EXPECT_EQ(mergeFreeNeighbours(whole), 2 * kMiB - 512);
    EXPECT_EQ(whole->size, 2 * kMiB);
    pool.destroyBlock(whole);
}
