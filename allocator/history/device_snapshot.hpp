// What one device allocator hands out for a snapshot: a copy of its segments
// and blocks (as PyTorch's snapshot shows them) and of its trace ring, taken
// under its lock. Every context in it carries one reference of its own, which
// the snapshot assembly (snapshot_assembly.hpp) drops when done.
#pragma once

#include "allocator/history/trace_ring.hpp"
#include "allocator/pool_id.hpp"
#include "allocator/snapshot/model.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mtia::allocator {

struct SnapshotBlock {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requested = 0;  // the request of an active block, else its size
    mem::BlockState state = mem::BlockState::Inactive;
    AllocContext* context = nullptr;  // active blocks allocated while recording
};

// A plain segment, or one mapped range of an expandable segment (PyTorch reports each mapped range
// of an expandable segment as a segment of its own).
struct SnapshotSegment {
    uint64_t address = 0;
    uint64_t totalSize = 0;
    uint64_t stream = 0;
    bool large = true;
    bool expandable = false;
    PoolId pool;
    AllocContext* context = nullptr;
    size_t firstBlock =
        0;  // its blocks: DeviceSnapshot::blocks[firstBlock, firstBlock + blockCount)
    size_t blockCount = 0;
};

struct DeviceSnapshot {
    int device = 0;
    // The id of the device's default stream (0: not created). The assembly writes 0 in its place,
    // as PyTorch writes the null handle of a device's default stream; other streams keep their ids.
    uint64_t defaultStream = 0;
    std::vector<SnapshotSegment> segments;  // by address
    std::vector<SnapshotBlock> blocks;
    std::vector<TraceRecord> trace;  // oldest first; empty without traces
};

}  // namespace mtia::allocator
