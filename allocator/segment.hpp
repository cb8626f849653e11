// A segment: one range of device addresses the allocator got from the driver,
// cut into blocks. A plain segment is one physical allocation mapped at once;
// an expandable segment reserves a large address range and maps physical
// chunks into it as it grows (PyTorch's expandable_segments), so growing and
// shrinking never move live blocks.
#pragma once

#include "allocator/size_policy.hpp"

#include <mtia/mtia_driver.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mtia::streams {
class Stream;
}

namespace mtia::allocator {

class AllocContext;
struct Block;
class BlockPool;
struct PrivatePool;

struct Segment {
    uintptr_t base = 0;
    size_t size = 0;  // bytes of addresses (the reservation, for an expandable segment)
    PoolKind kind = PoolKind::Small;
    uint64_t stream = 0;           // id of the stream whose allocations it serves
    PrivatePool* owner = nullptr;  // null: the device's default pools
    Block* head = nullptr;         // the block at base; the others follow through next
    bool expandable = false;
    mtiaDrvMem mem = nullptr;  // plain segments: the physical allocation behind all of it
    // Expandable segments: one physical allocation per chunk of chunkSize bytes, null while
    // unmapped.
    size_t chunkSize = 0;
    std::vector<mtiaDrvMem> chunks;
    size_t mappedBytes = 0;
    // Released private pools give a segment back as soon as its work is done: the stream it serves
    // and the command number submitted there when its last block was freed. A free that could not
    // ask the stream (a capture was underway, or the driver failed) leaves stampPending: the number
    // is read later, which only makes it larger (conservative).
    std::shared_ptr<streams::Stream> streamRef;
    uint64_t lastFreeSeq = 0;
    bool stampPending = false;
    // Memory history: the allocation that made it (one reference), null when not recording.
    AllocContext* context = nullptr;

    bool contains(uintptr_t p) const { return p >= base && p - base < size; }
};

}  // namespace mtia::allocator
