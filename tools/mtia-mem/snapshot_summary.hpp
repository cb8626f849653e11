// What a snapshot's segments say about each device: reserved, allocated,
// active and free cached bytes, how fragmented the free bytes are, the
// private pools and the allocation sites of the live blocks. The figures are
// defined in README.md ("summary").
#pragma once

#include "allocator/snapshot/model.hpp"
#include "site_tally.hpp"

#include <cstdint>
#include <vector>

namespace mtia::mem {

struct PoolUsage {
    uint64_t id[2] = {0, 0};
    size_t segments = 0;
    uint64_t reserved = 0;
    uint64_t allocated = 0;
};

struct DeviceSummary {
    int device = 0;
    size_t segments = 0;
    size_t expandableSegments = 0;
    uint64_t reserved = 0;                // total_size of the segments
    uint64_t allocated = 0;               // active_allocated blocks
    uint64_t active = 0;                  // active_allocated and active_pending_free blocks
    uint64_t inactive = 0;                // free cached blocks
    uint64_t inactiveSplit = 0;           // free blocks in segments that hold other blocks too
    uint64_t largestFree = 0;             // the largest free block
    std::vector<PoolUsage> privatePools;  // segment_pool_id != (0, 0), by id
    SiteTally sites;                      // active_allocated blocks by stack

    // 1 - largestFree / inactive: 0 when the free bytes are one block (or there are none), near 1
    // when they are many small pieces.
    double fragmentation() const {
        return inactive == 0 ? 0.0 : 1.0 - double(largestFree) / double(inactive);
    }
};

// One per device with segments, by device ordinal.
std::vector<DeviceSummary> summarize(const Snapshot& snap);

}  // namespace mtia::mem
