// Replays the allocations and frees of a snapshot's trace through our
// caching allocator (the public C ABI, on the simulated device) and reports
// what it cost: peak reserved and allocated bytes, device allocations and
// frees, retries, out-of-memory failures and time per operation.
#pragma once

#include "snapshot.hpp"

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
  uint64_t ops = 0;     // allocations and frees replayed
  double seconds = 0;   // time spent replaying them (the tool's own lookups included)
  uint64_t unknownFrees = 0;  // frees of blocks allocated before the trace began

  double ratio() const { return peakAllocated > 0 ? double(peakReserved) / double(peakAllocated) : 0.0; }
  double nsPerOp() const { return ops > 0 ? seconds * 1e9 / double(ops) : 0.0; }
};

struct ReplayResult {
  std::vector<ReplayFigures> devices;
  ReplayFigures total;
};

// conf: allocator settings applied first (mtiaAllocatorSetConfig), "" for none.
// Throws ReplayError when the runtime refuses something other than memory (bad settings, a device the
// machine lacks).
ReplayResult replay(const Snapshot& snap, const std::string& conf);

}  // namespace mtia::mem
