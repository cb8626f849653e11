// A device's trace turned into the calls a replay makes, before any is timed:
// trace addresses become slots of a flat table and trace streams indices of
// a stream table, so the timed loop does no lookups of its own and ns per op
// measures the allocator.
//
// Which entry frees a block: free_requested (PyTorch records it when the
// tensor dies; free_completed follows once other streams' uses are done, and
// our mtiaFree defers reuse the same way), else free_completed when the trace
// has no request for the block. A block freed in the trace but allocated
// before it began (the history ring buffer dropped its alloc) is allocated in
// a prelude, untimed, so that the replay holds the memory the recording did.
#pragma once

#include "allocator/snapshot/model.hpp"

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace mtia::mem {

struct ReplayOp {
    enum Kind : uint8_t { Alloc, Free };
    Kind kind;
    uint16_t stream;  // index into ReplayPlan::streams (allocations only)
    uint32_t slot;
    uint64_t size;  // allocations only
};

struct ReplayPlan {
    std::vector<uint64_t> streams;  // the trace's stream numbers, in order of first use
    std::vector<ReplayOp> prelude;  // allocations of blocks live when the trace began
    std::vector<ReplayOp> ops;      // the trace's allocations and frees, in order
    uint32_t slots = 0;             // the table size: blocks live at once, prelude included
};

class PlanError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Throws PlanError for traces beyond what one table holds (more than 65536 streams or 2^32 live
// blocks).
ReplayPlan planReplay(const std::vector<TraceEntry>& entries);

}  // namespace mtia::mem
