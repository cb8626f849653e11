// What changed between two snapshots of one process: the blocks live
// (active_allocated) in the later one that the earlier one lacks, by
// allocation site, the leak finder. A block is the same in both when its
// device, address, size and allocation stack are; a block freed and another
// allocated at the same place since counts as new if its size or stack differ.
#pragma once

#include "allocator/snapshot/model.hpp"
#include "site_tally.hpp"

#include <cstdint>
#include <map>

namespace mtia::mem {

struct DeviceChange {
    uint64_t newBlocks = 0, newBytes = 0;
    uint64_t freedBlocks = 0, freedBytes = 0;
};

struct SnapshotDiff {
    SiteTally added;           // live in after, not in before; stacks of the `after` snapshot
    uint64_t freedBlocks = 0;  // live in before, not in after
    uint64_t freedBytes = 0;
    uint64_t beforeBlocks = 0, beforeBytes = 0;  // live blocks of each snapshot
    uint64_t afterBlocks = 0, afterBytes = 0;
    std::map<int, DeviceChange> devices;  // the same per device, for devices with changes
};

SnapshotDiff diffSnapshots(const Snapshot& before, const Snapshot& after);

}  // namespace mtia::mem
