// The in-memory model of a memory snapshot that every mtia-mem subcommand
// works on, whatever file it came from: PyTorch 2.x's dict (segments and one
// trace per device; reference notes section 4.2) and the older shapes that
// still carry segments (2.0 and 1.13, sections 4.3 and 4.4). Stacks are
// interned: a snapshot of hundreds of MB repeats the same few thousand
// tracebacks, and summaries and diffs group by them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mtia::mem {

enum class Action : uint8_t {
  Alloc,
  FreeRequested,
  FreeCompleted,
  SegmentAlloc,
  SegmentFree,
  SegmentMap,
  SegmentUnmap,
  Snapshot,
  Oom,
  Annotate,
  Other,  // an action newer than this reader; kept so that indices stay those of the file
};

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive, Other };

struct Frame {
  std::string filename;
  int64_t line = 0;
  std::string name;
  bool operator==(const Frame&) const = default;
};

// Stack 0 is the empty stack (nothing recorded, or frames not read).
using StackId = uint32_t;

class StackTable {
 public:
  StackTable() : stacks_(1) {}
  StackId intern(const std::vector<Frame>& frames);
  const std::vector<Frame>& frames(StackId id) const { return stacks_[id]; }
  size_t size() const { return stacks_.size(); }

 private:
  std::vector<std::vector<Frame>> stacks_;
  std::unordered_map<std::string, StackId> index_;
};

struct TraceEntry {
  Action action = Action::Other;
  int32_t device = 0;
  uint64_t addr = 0;  // device_free for Action::Oom
  uint64_t size = 0;  // its meaning depends on the action (reference notes 4.2)
  uint64_t stream = 0;  // PyTorch: the raw stream handle as an integer; 0 is the default stream
  double timeUs = 0;
  StackId stack = 0;
};

struct Block {
  uint64_t address = 0;  // 1.13 and 2.0 files have none: the segment's address plus the blocks before
  uint64_t size = 0;
  uint64_t requestedSize = 0;  // 1.13: history[0].real_size, else size
  BlockState state = BlockState::Other;
  StackId stack = 0;
};

struct Segment {
  int32_t device = 0;
  uint64_t address = 0;
  uint64_t totalSize = 0;
  uint64_t allocatedSize = 0;
  uint64_t activeSize = 0;
  uint64_t requestedSize = 0;
  uint64_t stream = 0;
  bool large = true;  // segment_type "large" or "small"
  bool expandable = false;
  uint64_t poolId[2] = {0, 0};  // (0, 0): the default pool
  StackId stack = 0;
  std::vector<Block> blocks;
};

// Which layout the file had.
enum class Shape : uint8_t { V2, SegmentList };  // SegmentList: PyTorch 1.13's bare list of segments

struct Snapshot {
  Shape shape = Shape::V2;
  bool hasTraces = false;  // the file had device_traces (snapshots taken without history have none)
  std::vector<Segment> segments;
  std::vector<std::vector<TraceEntry>> deviceTraces;  // index = device ordinal
  StackTable stacks;
};

// "alloc" -> Action::Alloc, ...; unknown names are Action::Other.
Action actionFromName(std::string_view name);
const char* actionName(Action a);
BlockState blockStateFromName(std::string_view name);
const char* blockStateName(BlockState s);

}  // namespace mtia::mem
