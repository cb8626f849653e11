// A private pool (graph capture, mtiaMemPoolBeginAllocateToPool): blocks of
// its own that never serve other pools, kept while it has users. Once the
// last user releases it, its segments go back to the device as soon as they
// hold no live block, and the pool is forgotten when none is left.
#pragma once

#include "allocator/block_pool.hpp"
#include "allocator/pool_id.hpp"

namespace mtia::allocator {

struct PrivatePool {
    explicit PrivatePool(PoolId poolId) : id(poolId) {
        small.owner = this;
        large.owner = this;
    }
    PrivatePool(const PrivatePool&) = delete;
    PrivatePool& operator=(const PrivatePool&) = delete;

    BlockPool& of(PoolKind kind) { return kind == PoolKind::Small ? small : large; }

    PoolId id;
    BlockPool small{PoolKind::Small};
    BlockPool large{PoolKind::Large};
    int users = 1;        // begin-allocate calls and graphs holding it, less releases
    int segments = 0;     // segments it holds from the device
    size_t reserved = 0;  // bytes of those segments (mapped bytes, for expandable ones)
};

}  // namespace mtia::allocator
