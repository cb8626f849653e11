// From a parsed snapshot file to the model of allocator/snapshot/model.hpp,
// once for every format: the JSON reader (simdjson) and the pickle reader each
// hand in a small Node adapter, and the schema (which keys, which shapes, what
// is required, reference notes 4.2-4.5) lives only here.
//
// A Node is cheap to copy and offers:
//   Value::Kind kind() const;                      // what it holds; a JSON array is a List
//   bool isDict() const; bool isList() const;      // a tuple counts as a list
//   bool member(std::string_view key, Node& out) const;   // false: not a dict, or no such key
//   template <class F> void forEach(F&& f) const;  // f(Node) for each item of a list
//   template <class F> void forEachMember(F&& f) const;  // f(std::string_view key, bool keyIsText,
//   Node)
//                                                  // for each member of a dict (integer keys as
//                                                  text)
//   size_t size() const;                           // items of a list, members of a dict
//   const void* identity() const;                  // the shared object behind the node, or null
//   bool u64(uint64_t&) const; bool i64(int64_t&) const; bool f64(double&) const;
//   bool str(std::string_view&) const; bool boolean(bool&) const;
//
// Untrusted input: a pickle can refer to one object many times (its memo), so a file of a few KB
// can describe billions of entries. Every item read is charged to a budget proportional to the
// file's size and the read fails when it is spent; frames lists, which real pickles share on
// purpose (one list per traceback), are read once per shared object. Free-form values nest at most
// kMaxDepth deep.
#pragma once

#include "allocator/snapshot/model.hpp"
#include "snapshot_reader.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <unordered_map>

namespace mtia::mem {

// Where in the file a value is, formatted only when something is wrong there: snapshots of millions
// of entries must not pay for a message per entry.
struct Where {
    const Where* parent = nullptr;
    const char* key = nullptr;  // null: index into a list
    size_t index = 0;

    std::string text() const {
        std::string s = parent != nullptr ? parent->text() : std::string();
        if (key != nullptr) return s.empty() ? s + key : s + "." + key;
        return s + fmt::format("[{}]", index);
    }
};

template <class Node>
class SnapshotBuilder {
public:
    static constexpr int kMaxDepth = 64;  // allocator_settings nests two levels deep
    static constexpr uint64_t kMaxDevice = 65535;

    // inputBytes: the size of the file, which bounds how much it may describe.
    SnapshotBuilder(const std::string& name, const ReadOptions& options, size_t inputBytes)
        : name_(name), options_(options),
          budget_(kModelBytesPerInputByte * uint64_t{inputBytes} + kModelBytesSlack) {}

    // The model may take kModelBytesPerInputByte bytes per byte of file plus kModelBytesSlack:
    // every item read is charged kItemBytes and every entry, block, segment and frame kept its size
    // in the model. A real snapshot needs well under half of that (a trace entry of some 60 bytes
    // in the file becomes 72 in the model and about ten items).
    static constexpr uint64_t kModelBytesPerInputByte = 4;
    static constexpr uint64_t kModelBytesSlack = uint64_t{16} << 20;
    static constexpr uint64_t kItemBytes = 8;

    Snapshot build(const Node& root) {
        if (root.isList()) {  // PyTorch 1.13: a bare list of segments, no trace
            snap_.shape = Shape::SegmentList;
            if (options_.segments) readSegments(root, Where{nullptr, "segments"});
            return std::move(snap_);
        }
        if (!root.isDict())
            throw SnapshotError(
                fmt::format("{}: not a memory snapshot: neither a dict (PyTorch 2.x) nor a list of "
                            "segments (PyTorch 1.13)",
                            name_));
        Node n;
        const bool hasSegments = root.member("segments", n);
        if (hasSegments) {
            const Where w{nullptr, "segments"};
            if (!n.isList()) fail(w, "is not a list");
            if (options_.segments) readSegments(n, w);
        }
        if (root.member("device_traces", n)) {
            const Where w{nullptr, "device_traces"};
            if (!n.isList()) fail(w, "is not a list");
            snap_.hasTraces = true;
            readTraces(n, w);
        } else if (!hasSegments) {
            throw SnapshotError(fmt::format(
                "{}: not a memory snapshot: a dict without 'segments' or 'device_traces'", name_));
        }
        if (root.member("allocator_settings", n)) {
            const Where w{nullptr, "allocator_settings"};
            if (!n.isDict() && n.kind() != Value::Kind::None) fail(w, "is not a dict");
            snap_.allocatorSettings = valueOf(n, w, 0);
        }
        if (root.member("external_annotations", n)) {
            const Where w{nullptr, "external_annotations"};
            if (!n.isList()) fail(w, "is not a list");
            size_t i = 0;
            n.forEach([&](const Node& a) {
                snap_.externalAnnotations.push_back(valueOf(a, Where{&w, nullptr, i++}, 1));
            });
        }
        return std::move(snap_);
    }

private:
    [[noreturn]] void fail(const Where& w, std::string_view what) const {
        throw SnapshotError(fmt::format("{}: {}: {}", name_, w.text(), what));
    }

    // Every dict, list item and value read costs; a file may not describe much more than its size.
    void charge(uint64_t items, const Where& w, uint64_t kept = 0) {
        spent_ += items * kItemBytes + kept;
        if (spent_ > budget_)
            fail(w, fmt::format("the file describes more than {} MiB of snapshot, more than its "
                                "size can hold: it "
                                "refers to the same objects over and over (damaged or hostile)",
                                budget_ >> 20));
    }
    void chargeDict(const Node& n, const Where& w) { charge(1 + n.size(), w); }

    // Sizes are summed by every report (reserved, allocated, live bytes over time, some as int64):
    // a file whose sizes add up to 2^62 bytes (4 EiB) or more would wrap those sums (a summary with
    // less reserved than allocated), so it is refused here, once. Every sum a report makes of what
    // was read (a device's trace sizes plus its segments' blocks) then fits in an int64. No real
    // device holds 4 EiB.
    static constexpr uint64_t kMaxTotalBytes = uint64_t{1} << 62;
    uint64_t addSize(uint64_t sum, uint64_t size, const Where& w, std::string_view what) const {
        uint64_t out = 0;
        if (__builtin_add_overflow(sum, size, &out) || out >= kMaxTotalBytes)
            fail(w, fmt::format(
                        "{} add up to 2^62 bytes or more (sizes this large are damage, not memory)",
                        what));
        return out;
    }

    void reportProgress(const char* stage, size_t done, size_t total) const {
        if (options_.progress && total > 0 && done % 65536 == 0)
            options_.progress(stage, double(done) / double(total));
    }

    uint64_t unsignedAt(const Node& n, const char* key, const Where& w, bool required,
                        uint64_t fallback = 0) {
        Node v;
        if (!n.member(key, v)) {
            if (required) fail(w, fmt::format("no '{}'", key));
            return fallback;
        }
        uint64_t u = 0;
        if (!v.u64(u)) fail(w, fmt::format("'{}' is not a non-negative integer", key));
        return u;
    }
    std::string_view stringAt(const Node& n, const char* key, const Where& w, bool required) {
        Node v;
        std::string_view s;
        if (!n.member(key, v)) {
            if (required) fail(w, fmt::format("no '{}'", key));
            return s;
        }
        if (!v.str(s)) fail(w, fmt::format("'{}' is not a string", key));
        return s;
    }
    // segment_pool_id, pool_id: a pair (a tuple in a pickle, a list in JSON); absent: (0, 0).
    void poolIdAt(const Node& n, const char* key, const Where& w, uint64_t (&out)[2]) {
        Node v;
        if (!n.member(key, v)) return;
        const Where pw{&w, key};
        if (!v.isList() || v.size() != 2) fail(pw, "is not a pair of integers");
        size_t k = 0;
        v.forEach([&](const Node& id) {
            if (!id.u64(out[k++])) fail(pw, "is not a pair of integers");
        });
    }

    // frames: [{filename, line, name}, ...]; missing fields stay empty (writers differ in what they
    // fill).
    StackId stackAt(const Node& n, const char* key, const Where& w) {
        Node list;
        if (!options_.frames || !n.member(key, list)) return 0;
        const Where at{&w, key};
        if (!list.isList()) fail(at, "is not a list");
        const void* shared = list.identity();
        if (shared != nullptr)
            if (auto it = stackOf_.find(shared); it != stackOf_.end()) return it->second;
        charge(1 + list.size(), at);
        frames_.clear();
        size_t i = 0;
        list.forEach([&](const Node& f) {
            const Where fw{&at, nullptr, i++};
            if (!f.isDict()) fail(fw, "is not a frame (a dict)");
            chargeDict(f, fw);
            Frame& frame = frames_.emplace_back();
            Node v;
            std::string_view s;
            if (f.member("filename", v) && v.str(s)) frame.filename = s;
            if (f.member("name", v) && v.str(s)) frame.name = s;
            if (f.member("line", v)) v.i64(frame.line);
            charge(0, fw,
                   sizeof(Frame) + frame.filename.size() +
                       frame.name.size());  // a shared name is copied
        });
        const StackId id = snap_.stacks.intern(frames_);
        if (shared != nullptr) stackOf_.emplace(shared, id);
        return id;
    }

    // allocator_settings and external_annotations: kept as they are, for export.
    Value valueOf(const Node& n, const Where& w, int depth) {
        charge(1, w);
        if (depth > kMaxDepth) fail(w, fmt::format("nested more than {} levels deep", kMaxDepth));
        Value v;
        v.kind = n.kind();
        switch (v.kind) {
        case Value::Kind::None: break;
        case Value::Kind::Bool: n.boolean(v.boolean); break;
        case Value::Kind::Int: n.i64(v.integer); break;
        case Value::Kind::Float: n.f64(v.real); break;
        case Value::Kind::String: {
            std::string_view s;
            n.str(s);
            v.text = s;
            break;
        }
        case Value::Kind::List:
        case Value::Kind::Tuple: {
            size_t i = 0;
            n.forEach([&](const Node& item) {
                v.items.push_back(valueOf(item, Where{&w, nullptr, i++}, depth + 1));
            });
            break;
        }
        case Value::Kind::Dict:
            n.forEachMember([&](std::string_view key, bool keyIsText, const Node& item) {
                if (!keyIsText) fail(w, "has a key that is neither a string nor an integer");
                std::string k(key);
                Value value = valueOf(item, Where{&w, k.c_str()}, depth + 1);
                v.add(std::move(k), std::move(value));
            });
            break;
        }
        return v;
    }

    void readTraces(const Node& traces, const Where& w) {
        snap_.deviceTraces.reserve(traces.size());
        size_t dev = 0;
        traces.forEach([&](const Node& device) {
            const Where dw{&w, nullptr, dev};
            if (!device.isList()) fail(dw, "is not a list");
            charge(1, dw);
            auto& out = snap_.deviceTraces.emplace_back();
            out.reserve(device.size());
            uint64_t traceBytes = 0;
            size_t i = 0;
            device.forEach([&](const Node& e) {
                reportProgress("reading traces", i, device.size());
                const Where ew{&dw, nullptr, i++};
                if (!e.isDict()) fail(ew, "is not a trace entry (a dict)");
                chargeDict(e, ew);
                charge(0, ew, sizeof(TraceEntry));
                TraceEntry t;
                t.device = static_cast<int32_t>(dev);
                t.action = actionFromName(stringAt(e, "action", ew, true));
                // Entries about a block or a segment must say which and how big; snapshot, oom and
                // newer actions are read as far as they go.
                const bool located = t.action <= Action::SegmentUnmap;
                t.addr =
                    unsignedAt(e, t.action == Action::Oom ? "device_free" : "addr", ew, located);
                t.size = unsignedAt(e, "size", ew, located);
                t.stream = unsignedAt(e, "stream", ew, false);
                traceBytes =
                    addSize(traceBytes, t.size, ew, "the sizes of this device's trace entries");
                Node v;
                if (e.member("time_us", v) && !v.f64(t.timeUs))
                    fail(ew, "'time_us' is not a number");
                poolIdAt(e, "pool_id", ew, t.poolId);
                t.userMetadata = snap_.internString(stringAt(e, "user_metadata", ew, false));
                t.compileContext = snap_.internString(stringAt(e, "compile_context", ew, false));
                t.stack = stackAt(e, "frames", ew);
                out.push_back(t);
            });
            ++dev;
        });
    }

    void readSegments(const Node& segments, const Where& w) {
        snap_.segments.reserve(segments.size());
        size_t i = 0;
        segments.forEach([&](const Node& s) {
            reportProgress("reading segments", i, segments.size());
            const Where sw{&w, nullptr, i++};
            if (!s.isDict()) fail(sw, "is not a segment (a dict)");
            chargeDict(s, sw);
            charge(0, sw, sizeof(Segment));
            Segment seg;
            const uint64_t device = unsignedAt(s, "device", sw, false);
            if (device > kMaxDevice)
                fail(sw, fmt::format("'device' {} is not a device ordinal (0 to {})", device,
                                     kMaxDevice));
            seg.device = static_cast<int32_t>(device);
            seg.address = unsignedAt(s, "address", sw, true);
            seg.totalSize = unsignedAt(s, "total_size", sw, true);
            reserved_ = addSize(reserved_, seg.totalSize, sw, "the segments' total_size values");
            addSize(seg.address, seg.totalSize, sw, "'address' and 'total_size'");
            seg.allocatedSize = unsignedAt(s, "allocated_size", sw, false);
            seg.activeSize = unsignedAt(s, "active_size", sw, false);
            seg.requestedSize = unsignedAt(s, "requested_size", sw, false);
            seg.stream = unsignedAt(s, "stream", sw, false);
            seg.large = stringAt(s, "segment_type", sw, false) != "small";
            Node v;
            if (s.member("is_expandable", v) && !v.boolean(seg.expandable))
                fail(sw, "'is_expandable' is not a boolean");
            poolIdAt(s, "segment_pool_id", sw, seg.poolId);
            seg.stack = stackAt(s, "frames", sw);
            Node blocks;
            if (!s.member("blocks", blocks)) fail(sw, "no 'blocks'");
            const Where bw{&sw, "blocks"};
            if (!blocks.isList()) fail(bw, "is not a list");
            readBlocks(blocks, bw, seg);
            snap_.segments.push_back(std::move(seg));
        });
    }

    void readBlocks(const Node& blocks, const Where& w, Segment& seg) {
        seg.blocks.reserve(blocks.size());
        uint64_t next =
            seg.address;  // blocks are contiguous: 1.13 and 2.0 files leave addresses implicit
        uint64_t inSegment =
            0;  // a segment's blocks tile it (PyTorch's viewer asserts they add up)
        size_t i = 0;
        blocks.forEach([&](const Node& b) {
            const Where bw{&w, nullptr, i++};
            if (!b.isDict()) fail(bw, "is not a block (a dict)");
            chargeDict(b, bw);
            charge(0, bw, sizeof(Block));
            Block blk;
            blk.size = unsignedAt(b, "size", bw, true);
            blk.address = unsignedAt(b, "address", bw, false, next);
            blk.state = blockStateFromName(stringAt(b, "state", bw, true));
            next = addSize(blk.address, blk.size, bw, "'address' and 'size'");
            inSegment = addSize(inSegment, blk.size, bw, "the block sizes of the segment");
            if (inSegment > seg.totalSize)
                fail(bw, fmt::format("the segment's blocks add up to more than its total_size {}",
                                     seg.totalSize));
            // 1.13 and 2.0 keep the request and the stack in history[0] (reference notes 4.4).
            Node history, first;
            bool legacy = false;
            if (b.member("history", history) && history.isList() && history.size() > 0) {
                charge(history.size(), bw);
                history.forEach([&](const Node& h) {
                    if (!legacy) first = h;
                    legacy = true;
                });
                legacy = first.isDict();
            }
            const Where hw{&bw, "history[0]"};
            blk.requestedSize =
                unsignedAt(b, "requested_size", bw, false,
                           legacy ? unsignedAt(first, "real_size", hw, false, blk.size) : blk.size);
            if (blk.requestedSize > blk.size)
                fail(bw, fmt::format("requested_size {} exceeds the block's size {} (a request is "
                                     "rounded up, never down)",
                                     blk.requestedSize, blk.size));
            blk.stack = stackAt(b, "frames", bw);
            if (blk.stack == 0 && legacy) blk.stack = stackAt(first, "frames", hw);
            seg.blocks.push_back(blk);
        });
    }

    const std::string& name_;
    const ReadOptions& options_;
    const uint64_t budget_;
    uint64_t spent_ = 0;
    uint64_t reserved_ = 0;  // total_size over the segments read so far
    Snapshot snap_;
    std::vector<Frame> frames_;
    std::unordered_map<const void*, StackId>
        stackOf_;  // frames lists already read, by shared object
};

}  // namespace mtia::mem
