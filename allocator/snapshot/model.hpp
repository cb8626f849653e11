// The in-memory model of a memory snapshot: what the runtime's
// mtiaMemorySnapshot fills and writes, and what every mtia-mem subcommand
// works on, whatever file it came from: PyTorch 2.x's dict (segments and one
// trace per device; reference notes section 4.2) and the older shapes that
// still carry segments (2.0 and 1.13, sections 4.3 and 4.4). Stacks are
// interned: a snapshot of hundreds of MB repeats the same few thousand
// tracebacks, and summaries and diffs group by them.
//
// Self-contained (the standard library and fmt): the runtime's allocator and
// the mtia-mem tool compile the same model and writers (the static library
// mtia_snapshot_format), so both write one schema.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
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
    // The id of the stack with these frames if it was interned, else nullopt (the empty stack is
    // 0): a diff matches the stacks of two snapshots, each with its own table.
    std::optional<StackId> find(const std::vector<Frame>& frames) const;
    const std::vector<Frame>& frames(StackId id) const { return stacks_[id]; }
    size_t size() const { return stacks_.size(); }

private:
    std::vector<std::vector<Frame>> stacks_;
    std::unordered_map<std::string, StackId> index_;
};

// A value of the snapshot's free-form parts (allocator_settings, the entries of
// external_annotations): what JSON and Python's pickle share. Dict keys are strings, kept in order.
struct Value {
    enum class Kind : uint8_t { None, Bool, Int, Float, String, List, Tuple, Dict };
    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0;
    std::string text;
    std::vector<Value> items;                           // List, Tuple
    std::vector<std::pair<std::string, Value>> fields;  // Dict

    static Value of(bool b) {
        Value v;
        v.kind = Kind::Bool;
        v.boolean = b;
        return v;
    }
    static Value of(int64_t i) {
        Value v;
        v.kind = Kind::Int;
        v.integer = i;
        return v;
    }
    static Value of(double d) {
        Value v;
        v.kind = Kind::Float;
        v.real = d;
        return v;
    }
    static Value of(std::string s) {
        Value v;
        v.kind = Kind::String;
        v.text = std::move(s);
        return v;
    }
    static Value of(const char* s) { return of(std::string(s)); }  // not the bool overload
    static Value list() {
        Value v;
        v.kind = Kind::List;
        return v;
    }
    static Value dict() {
        Value v;
        v.kind = Kind::Dict;
        return v;
    }
    // Dict: appends key (no check for a repeat); returns the new value.
    Value& add(std::string key, Value value) {
        fields.emplace_back(std::move(key), std::move(value));
        return fields.back().second;
    }
    // Dict: the value of key, or null.
    const Value* find(std::string_view key) const {
        for (const auto& [k, v] : fields)
            if (k == key) return &v;
        return nullptr;
    }
    bool operator==(const Value&) const = default;
};

struct TraceEntry {
    Action action = Action::Other;
    int32_t device = 0;
    uint64_t addr = 0;    // device_free for Action::Oom
    uint64_t size = 0;    // its meaning depends on the action (reference notes 4.2)
    uint64_t stream = 0;  // PyTorch: the raw stream handle as an integer; 0 is the default stream
    double timeUs = 0;
    StackId stack = 0;
    uint64_t poolId[2] = {
        0, 0};  // pool_id: the private pool of the block or segment, (0, 0) the default
    uint32_t userMetadata = 0;    // index into Snapshot::strings (0: "")
    uint32_t compileContext = 0;  // index into Snapshot::strings (0: "")
};

struct Block {
    uint64_t address =
        0;  // 1.13 and 2.0 files have none: the segment's address plus the blocks before
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
enum class Shape : uint8_t {
    V2,
    SegmentList
};  // SegmentList: PyTorch 1.13's bare list of segments

struct Snapshot {
    Shape shape = Shape::V2;
    bool hasTraces =
        false;  // the file had device_traces (snapshots taken without history have none)
    std::vector<Segment> segments;
    std::vector<std::vector<TraceEntry>> deviceTraces;  // index = device ordinal
    StackTable stacks;
    // allocator_settings (a dict; None when the file had none) and external_annotations (dicts with
    // name, stage, device, time_us and whatever else the recorder added).
    Value allocatorSettings;
    std::vector<Value> externalAnnotations;
    // The texts trace entries refer to (user_metadata, compile_context); strings[0] is "".
    std::vector<std::string> strings{std::string()};
    uint32_t internString(std::string_view s);

private:
    std::unordered_map<std::string, uint32_t> stringIndex_;
};

// "alloc" -> Action::Alloc, ...; unknown names are Action::Other.
Action actionFromName(std::string_view name);
const char* actionName(Action a);
BlockState blockStateFromName(std::string_view name);
const char* blockStateName(BlockState s);

}  // namespace mtia::mem
