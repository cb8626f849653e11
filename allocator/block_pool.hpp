// The free blocks of one pool (a device's small or large pool, or a private
// pool), ordered by stream, size and address: a best-fit search is one
// lower_bound, and a block freed on a stream is found only by requests on
// that stream (stream-ordered reuse). Not thread-safe: the allocator holds
// its device lock.
#pragma once

#include "allocator/alloc_config.hpp"
#include "allocator/block.hpp"
#include "allocator/node_recycler.hpp"

#include <cstddef>
#include <set>

namespace mtia::allocator {

struct PrivatePool;

class BlockPool {
public:
    explicit BlockPool(PoolKind kind) : kind_(kind) {}
    BlockPool(const BlockPool&) = delete;
    BlockPool& operator=(const BlockPool&) = delete;

    PoolKind kind() const { return kind_; }
    PrivatePool* owner =
        nullptr;  // the private pool it belongs to; null for a device's default pools

    // Caches a free block of this pool. Throws std::bad_alloc (nothing cached).
    void insert(Block* b);
    // Takes a cached block out; false when it was not cached here.
    bool erase(Block* b);
    bool contains(const Block* b) const { return b->cached && b->pool == this; }

    // Gives cached block b a new address and size, keeping it cached: in place when its order among
    // the cached blocks allows (carving from or growing the one free block of a segment, the common
    // case), else by taking it out and putting it back. Throws std::bad_alloc only in the latter
    // case (b is then no longer cached).
    void rekey(Block* b, uintptr_t address, size_t size);

    // Blocks of this pool come from (and go back to) its own recycling store: splitting and merging
    // on every allocation and free then costs no trip to malloc. Throws std::bad_alloc.
    Block* makeBlock();
    void destroyBlock(Block* b) noexcept;
    size_t size() const { return free_.size(); }

    // The smallest cached block of stream that may serve a rounded request (mayServe: oversize
    // blocks only for oversize requests, and wasting less than max_non_split_rounding_mb), or
    // nullptr. The block stays cached.
    Block* bestFit(uint64_t stream, size_t rounded, const AllocConfig& config) const;

    // The cached blocks, by stream, size and address.
    template <class Fn>
    void forEach(Fn&& fn) const {
        for (Block* b : free_) fn(b);
    }

private:
    struct ByStreamSizeAddress {
        bool operator()(const Block* a, const Block* b) const {
            if (a->stream != b->stream) return a->stream < b->stream;
            if (a->size != b->size) return a->size < b->size;
            return a->address < b->address;
        }
    };

    using FreeSet = std::set<Block*, ByStreamSizeAddress, RecyclingAllocator<Block*>>;

    const PoolKind kind_;
    NodeRecycler store_;  // blocks and set nodes; outlives free_
    FreeSet free_{ByStreamSizeAddress{}, RecyclingAllocator<Block*>(&store_)};
    // Where the last bestFit() found its block, so rekey() of that block needs no second search.
    // Reset whenever that element leaves the set.
    mutable FreeSet::iterator lastFit_ = free_.end();
};

}  // namespace mtia::allocator
