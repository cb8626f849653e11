// What mtia-mem reads from a memory snapshot (PyTorch 2.x schema, the
// reference notes section 4): the allocator trace of each device. Later
// subcommands (summary, diff, plot) add the segments here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mtia::mem {

enum class Action { Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap, Snapshot, Oom, Other };

struct TraceEntry {
  Action action = Action::Other;
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t stream = 0;  // the stream as an integer (PyTorch: the raw handle; 0 = default stream)
  double timeUs = 0;
};

struct Snapshot {
  std::vector<std::vector<TraceEntry>> deviceTraces;  // index = device ordinal
};

// "alloc" -> Action::Alloc, ...; unknown names are Action::Other.
Action actionFromName(std::string_view name);
const char* actionName(Action a);

}  // namespace mtia::mem
