// How the caching allocator sizes things, after PyTorch's CUDA caching
// allocator: the size a request is served with, the pool it comes from, the
// size of the device allocation (segment) made for it, and when a cached
// block may serve a request or be split. Pure functions of the request and
// the settings, so every boundary can be tested on its own.
#pragma once

#include "allocator/alloc_config.hpp"

#include <cstddef>
#include <cstdint>

namespace mtia::allocator {

inline constexpr size_t kMinBlockSize = 512;             // every block is a multiple of this
inline constexpr size_t kSmallSize = AllocConfig::kMiB;  // requests up to this go to the small pool
inline constexpr size_t kSmallBuffer = 2 * AllocConfig::kMiB;  // segment size of the small pool
inline constexpr size_t kMinLargeAlloc =
    10 * AllocConfig::kMiB;                                     // below this, large requests share
inline constexpr size_t kLargeBuffer = 20 * AllocConfig::kMiB;  // ... segments of this size
inline constexpr size_t kRoundLarge = 2 * AllocConfig::kMiB;  // larger ones get their own, rounded

enum class PoolKind { Small, Large };

// The size a request of size bytes is served with: at least kMinBlockSize, a multiple of it, or,
// when the settings give the request's interval 2 or more roundup_power2_divisions and the request
// is larger than that many minimum blocks, the next of those equal steps between two powers of two
// (a power of two stays as it is). Throws Error(mtiaErrorInvalidValue) when the result does not fit
// in size_t.
size_t roundSizeSlow(size_t size, const AllocConfig& config);
inline size_t roundSize(size_t size, const AllocConfig& config) {
    // The common case inline: plain 512-byte rounding of a size that cannot overflow.
    if (size < kMinBlockSize) return kMinBlockSize;
    if (config.roundupDivisionsFor(size) <= 1 && size <= SIZE_MAX - kMinBlockSize)
        return (size + kMinBlockSize - 1) & ~(kMinBlockSize - 1);
    return roundSizeSlow(size, config);
}

// The pool a rounded size comes from.
inline PoolKind poolFor(size_t rounded) {
    return rounded <= kSmallSize ? PoolKind::Small : PoolKind::Large;
}

// The size of the segment to allocate for a rounded request that no cached block serves. Throws
// Error(mtiaErrorInvalidValue) when it does not fit in size_t.
size_t segmentSize(size_t rounded);

// Whether a cached free block of blockSize bytes may serve a rounded request: a request below
// max_split_size_mb never takes an oversize block (one of at least that size), and an oversize
// request takes one only if it wastes less than max_non_split_rounding_mb.
inline bool mayServe(size_t blockSize, size_t rounded, const AllocConfig& config) {
    if (blockSize < rounded) return false;
    const bool oversizeBlock = blockSize >= config.maxSplitSize;
    if (rounded < config.maxSplitSize) return !oversizeBlock;
    // An oversize request: the block must not waste max_non_split_rounding_mb or more.
    return blockSize - rounded < config.maxNonSplitRounding;
}

// Whether serving a rounded request from a block of blockSize (>= rounded) bytes splits off the
// rest as a free block: in the small pool and in expandable segments when at least kMinBlockSize is
// left, in the large pool when the request is below max_split_size_mb and more than kSmallSize is
// left.
inline bool shouldSplit(PoolKind pool, bool expandable, size_t blockSize, size_t rounded,
                        const AllocConfig& config) {
    const size_t rest = blockSize - rounded;
    if (pool == PoolKind::Small || expandable) return rest >= kMinBlockSize;
    return rounded < config.maxSplitSize && rest > kSmallSize;
}

}  // namespace mtia::allocator
