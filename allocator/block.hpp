// A block: a piece of one segment (one device allocation), either handed
// out or cached free. The blocks of a segment form a list in address order,
// so freeing one can merge it with free neighbours, and a segment whose only
// block is free can go back to the device.
#pragma once

#include "allocator/size_policy.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mtia::streams {
class Stream;
}

namespace mtia::allocator {

class AllocContext;
class BlockPool;
struct Segment;

struct Block {
    uintptr_t address = 0;
    size_t size = 0;            // bytes, a multiple of kMinBlockSize
    size_t requested = 0;       // bytes the caller asked for while allocated
    uint64_t stream = 0;        // the stream it was allocated on; a free block is reused on it only
    BlockPool* pool = nullptr;  // the pool it belongs to (a private pool's, or a device pool)
    bool allocated = false;
    bool cached = false;    // in its pool's set of free blocks
    Block* prev = nullptr;  // neighbours in the segment, lower and higher addresses
    Block* next = nullptr;
    Segment* segment = nullptr;  // the segment it is part of
    bool mapped = true;  // false: unmapped addresses of an expandable segment (never cached)
    // Other streams that used it (mtiaRecordStream) while allocated; a freed block waits for the
    // work they had queued at the free before it is cached again.
    std::vector<std::shared_ptr<streams::Stream>> streamUses;
    int pendingUses = 0;  // of those waits, the ones not yet done
    uint64_t gcStamp =
        0;  // the pool search count when it was cached (its age for garbage collection)
    // Memory history: who allocated it (one reference), from allocation until the free completes;
    // null when not recording.
    AllocContext* context = nullptr;

    // Part of a segment that was split (the segment cannot go back to the device as a whole).
    bool isSplit() const { return prev != nullptr || next != nullptr; }
};

// Splits rounded bytes off the front of free block b: b keeps them, the rest becomes a new free
// block after it (same stream and pool), which is returned for the caller to cache. Requires
// kMinBlockSize <= b->size - rounded. Throws std::bad_alloc (b unchanged).
Block* splitBlock(Block* b, size_t rounded);

// Merges free block b with its free neighbours, taking them out of b's pool and deleting them;
// returns the bytes b gained. b itself must not be in the pool while this runs.
size_t mergeFreeNeighbours(Block* b);

}  // namespace mtia::allocator
