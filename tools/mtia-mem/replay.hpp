// Replays the allocations and frees of a snapshot's traces through our
// caching allocator (the public C ABI, on the simulated device) and reports
// what it cost: peak reserved and allocated bytes, device allocations and
// frees, retries, out-of-memory failures and time per operation. An
// allocation that runs out of memory is counted and skipped (with its free),
// as the question is usually "would it fit".
#pragma once

#include "allocator/snapshot/model.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mtia::mem {

class ReplayError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ReplayFigures {
    int device = -1;  // -1: all devices together
    int64_t peakReserved = 0;
    int64_t peakAllocated = 0;
    int64_t deviceAllocs = 0;
    int64_t deviceFrees = 0;
    int64_t retries = 0;
    int64_t ooms = 0;
    uint64_t ops = 0;    // allocations and frees replayed (timed)
    double seconds = 0;  // time spent in them
    uint64_t preexisting =
        0;  // blocks freed in the trace but allocated before it, allocated untimed first
    uint64_t skippedAllocs = 0;  // allocations that ran out of memory
    size_t streams = 0;

    double ratio() const {
        return peakAllocated > 0 ? double(peakReserved) / double(peakAllocated) : 0.0;
    }
    double nsPerOp() const { return ops > 0 ? seconds * 1e9 / double(ops) : 0.0; }
};

struct ReplayResult {
    std::vector<ReplayFigures> devices;  // those with allocations in the trace
    ReplayFigures total;                 // peaks and counts summed over them
};

// conf: allocator settings applied first (mtiaAllocatorSetConfig), "" for none. Throws ReplayError
// when the trace has no allocations, names a device the simulated machine lacks, or the runtime
// refuses something other than memory (bad settings, a failed start).
ReplayResult replay(const Snapshot& snap, const std::string& conf);

}  // namespace mtia::mem
