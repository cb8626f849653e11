// From a parsed snapshot file to the model of snapshot.hpp, once for every
// format: the JSON reader (simdjson) and the pickle reader each hand in a
// small Node adapter, and the schema (which keys, which shapes, what is
// required, reference notes 4.2-4.5) lives only here.
//
// A Node is cheap to copy and offers:
//   bool isDict() const; bool isList() const;     // a tuple counts as a list
//   bool member(std::string_view key, Node& out) const;   // false: not a dict, or no such key
//   template <class F> void forEach(F&& f) const; // f(Node) for each item of a list
//   size_t size() const;                          // items of a list
//   bool u64(uint64_t&) const; bool i64(int64_t&) const; bool f64(double&) const;
//   bool str(std::string_view&) const; bool boolean(bool&) const;
#pragma once

#include "allocator/snapshot/model.hpp"
#include "snapshot_reader.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>

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
  SnapshotBuilder(const std::string& path, const ReadOptions& options) : path_(path), options_(options) {}

  Snapshot build(const Node& root) {
    const Where top{};
    if (root.isList()) {  // PyTorch 1.13: a bare list of segments, no trace
      snap_.shape = Shape::SegmentList;
      if (options_.segments) readSegments(root, Where{&top, "segments"});
      return std::move(snap_);
    }
    if (!root.isDict())
      throw SnapshotError(fmt::format("{}: not a memory snapshot: neither a dict (PyTorch 2.x) nor a list of "
                                      "segments (PyTorch 1.13)",
                                      path_));
    Node n;
    if (root.member("segments", n)) {
      const Where w{&top, "segments"};
      if (!n.isList()) fail(w, "is not a list");
      if (options_.segments) readSegments(n, w);
    }
    if (root.member("device_traces", n)) {
      const Where w{&top, "device_traces"};
      if (!n.isList()) fail(w, "is not a list");
      snap_.hasTraces = true;
      readTraces(n, w);
    } else if (!root.member("segments", n)) {
      throw SnapshotError(fmt::format("{}: not a memory snapshot: a dict without 'segments' or 'device_traces'", path_));
    }
    return std::move(snap_);
  }

 private:
  [[noreturn]] void fail(const Where& w, std::string_view what) const {
    throw SnapshotError(fmt::format("{}: {}: {}", path_, w.text(), what));
  }

  uint64_t unsignedAt(const Node& n, const char* key, const Where& w, bool required, uint64_t fallback = 0) {
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

  // frames: [{filename, line, name}, ...]; missing fields stay empty (writers differ in what they fill).
  StackId stackAt(const Node& n, const char* key, const Where& w) {
    Node list;
    if (!options_.frames || !n.member(key, list)) return 0;
    const Where at{&w, key};
    if (!list.isList()) fail(at, "is not a list");
    frames_.clear();
    size_t i = 0;
    list.forEach([&](const Node& f) {
      if (!f.isDict()) fail(Where{&at, nullptr, i}, "is not a frame (a dict)");
      Frame& frame = frames_.emplace_back();
      Node v;
      std::string_view s;
      if (f.member("filename", v) && v.str(s)) frame.filename = s;
      if (f.member("name", v) && v.str(s)) frame.name = s;
      if (f.member("line", v)) v.i64(frame.line);
      ++i;
    });
    return snap_.stacks.intern(frames_);
  }

  void readTraces(const Node& traces, const Where& w) {
    snap_.deviceTraces.reserve(traces.size());
    size_t dev = 0;
    traces.forEach([&](const Node& device) {
      const Where dw{&w, nullptr, dev};
      if (!device.isList()) fail(dw, "is not a list");
      auto& out = snap_.deviceTraces.emplace_back();
      out.reserve(device.size());
      size_t i = 0;
      device.forEach([&](const Node& e) {
        const Where ew{&dw, nullptr, i++};
        if (!e.isDict()) fail(ew, "is not a trace entry (a dict)");
        TraceEntry t;
        t.device = static_cast<int32_t>(dev);
        t.action = actionFromName(stringAt(e, "action", ew, true));
        // Entries about a block or a segment must say which and how big; snapshot, oom and newer
        // actions are read as far as they go.
        const bool located = t.action <= Action::SegmentUnmap;
        t.addr = unsignedAt(e, t.action == Action::Oom ? "device_free" : "addr", ew, located);
        t.size = unsignedAt(e, "size", ew, located);
        t.stream = unsignedAt(e, "stream", ew, false);
        Node v;
        if (e.member("time_us", v) && !v.f64(t.timeUs)) fail(ew, "'time_us' is not a number");
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
      const Where sw{&w, nullptr, i++};
      if (!s.isDict()) fail(sw, "is not a segment (a dict)");
      Segment seg;
      seg.device = static_cast<int32_t>(unsignedAt(s, "device", sw, false));
      seg.address = unsignedAt(s, "address", sw, true);
      seg.totalSize = unsignedAt(s, "total_size", sw, true);
      seg.allocatedSize = unsignedAt(s, "allocated_size", sw, false);
      seg.activeSize = unsignedAt(s, "active_size", sw, false);
      seg.requestedSize = unsignedAt(s, "requested_size", sw, false);
      seg.stream = unsignedAt(s, "stream", sw, false);
      seg.large = stringAt(s, "segment_type", sw, false) != "small";
      Node v;
      if (s.member("is_expandable", v) && !v.boolean(seg.expandable)) fail(sw, "'is_expandable' is not a boolean");
      if (s.member("segment_pool_id", v)) {
        const Where pw{&sw, "segment_pool_id"};
        if (!v.isList() || v.size() != 2) fail(pw, "is not a pair of integers");
        size_t k = 0;
        v.forEach([&](const Node& id) {
          if (!id.u64(seg.poolId[k++])) fail(pw, "is not a pair of integers");
        });
      }
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
    uint64_t next = seg.address;  // blocks are contiguous: 1.13 and 2.0 files leave addresses implicit
    size_t i = 0;
    blocks.forEach([&](const Node& b) {
      const Where bw{&w, nullptr, i++};
      if (!b.isDict()) fail(bw, "is not a block (a dict)");
      Block blk;
      blk.size = unsignedAt(b, "size", bw, true);
      blk.address = unsignedAt(b, "address", bw, false, next);
      blk.state = blockStateFromName(stringAt(b, "state", bw, true));
      next = blk.address + blk.size;
      // 1.13 and 2.0 keep the request and the stack in history[0] (reference notes 4.4).
      Node history, first;
      bool legacy = false;
      if (b.member("history", history) && history.isList() && history.size() > 0) {
        history.forEach([&](const Node& h) {
          if (!legacy) first = h;
          legacy = true;
        });
        legacy = first.isDict();
      }
      const Where hw{&bw, "history[0]"};
      blk.requestedSize = unsignedAt(b, "requested_size", bw, false,
                                     legacy ? unsignedAt(first, "real_size", hw, false, blk.size) : blk.size);
      blk.stack = stackAt(b, "frames", bw);
      if (blk.stack == 0 && legacy) blk.stack = stackAt(first, "frames", hw);
      seg.blocks.push_back(blk);
    });
  }

  const std::string& path_;
  const ReadOptions& options_;
  Snapshot snap_;
  std::vector<Frame> frames_;
};

}  // namespace mtia::mem
