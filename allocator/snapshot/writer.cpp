#include "allocator/snapshot/writer.hpp"

#include "allocator/snapshot/json_text.hpp"
#include "allocator/snapshot/pickle_writer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <string>
#include <vector>

namespace mtia::mem {

namespace {

// PyTorch writes time_us as an integer; a whole number goes out as one, so JSON and pickle agree.
bool wholeMicros(double us) {
    return std::trunc(us) == us && std::fabs(us) < 0x1p53;
}

class JsonOut {
public:
    // Hands the text to sink in chunks of about 1 MiB.
    explicit JsonOut(const JsonSink& sink) : sink_(sink) {}

    template <typename... Args>
    void put(fmt::format_string<Args...> f, Args&&... args) {
        fmt::format_to(std::back_inserter(buf_), f, std::forward<Args>(args)...);
        if (buf_.size() > (1u << 20)) flush();
    }
    void string(std::string_view s) { appendJsonString(buf_, s); }
    void time(double us) {
        if (wholeMicros(us))
            put("{}", static_cast<int64_t>(us));
        else
            put("{}", us);
    }
    // A stack's frames, formatted once and copied at every later use: snapshots with C++ stacks
    // repeat the same few stacks in every trace entry.
    void frames(const Snapshot& snap, StackId id) {
        if (id >= framesText_.size()) framesText_.resize(snap.stacks.size());
        std::string& text = framesText_[id];
        if (text.empty()) {
            fmt::memory_buffer b;
            b.push_back('[');
            const auto& frames = snap.stacks.frames(id);
            for (size_t i = 0; i < frames.size(); ++i) {
                fmt::format_to(std::back_inserter(b), "{}{{\"filename\": ", i ? ", " : "");
                appendJsonString(b, frames[i].filename);
                fmt::format_to(std::back_inserter(b), ", \"line\": {}, \"name\": ", frames[i].line);
                appendJsonString(b, frames[i].name);
                b.push_back('}');
            }
            b.push_back(']');
            text.assign(b.data(), b.size());
        }
        buf_.append(text.data(), text.data() + text.size());
        if (buf_.size() > (1u << 20)) flush();
    }
    void value(const Value& v) {
        switch (v.kind) {
        case Value::Kind::None: return put("null");
        case Value::Kind::Bool: return put("{}", v.boolean);
        case Value::Kind::Int: return put("{}", v.integer);
        case Value::Kind::Float: {
            if (!std::isfinite(v.real)) return put("null");  // JSON has no NaN or infinity
            // A whole number keeps a fraction, so that it reads back as a float ("0.0", not "0").
            const std::string text = fmt::format("{}", v.real);
            if (text.find_first_of(".e") == std::string::npos) return put("{}.0", text);
            return put("{}", text);
        }
        case Value::Kind::String: return string(v.text);
        case Value::Kind::List:
        case Value::Kind::Tuple:
            put("[");
            for (size_t i = 0; i < v.items.size(); ++i) {
                if (i) put(", ");
                value(v.items[i]);
            }
            return put("]");
        case Value::Kind::Dict:
            put("{{");
            for (size_t i = 0; i < v.fields.size(); ++i) {
                if (i) put(", ");
                string(v.fields[i].first);
                put(": ");
                value(v.fields[i].second);
            }
            return put("}}");
        }
    }
    void flush() {
        if (buf_.size() > 0) sink_(std::string_view(buf_.data(), buf_.size()));
        buf_.clear();
    }

private:
    const JsonSink& sink_;
    fmt::memory_buffer buf_;
    std::vector<std::string> framesText_;  // by stack id; "" until first written
};

class PickleOut {
public:
    explicit PickleOut(const Snapshot& snap, std::string& bytes) : snap_(snap), w_(bytes) {}

    void key(std::string_view k) {
        w_.item();
        w_.string(k);
    }
    void u64(std::string_view k, uint64_t v) {
        key(k);
        w_.unsignedInteger(v);
    }
    // One list per stack, fetched from the memo after its first use, as Python shares a traceback's
    // frames.
    void frames(StackId id) {
        key("frames");
        if (id < memo_.size() && memo_[id] != kUnset) return w_.get(memo_[id]);
        w_.beginList();
        for (const Frame& f : snap_.stacks.frames(id)) {
            w_.item();
            w_.beginDict();
            key("filename");
            w_.string(f.filename);
            key("line");
            w_.integer(f.line);
            key("name");
            w_.string(f.name);
            w_.end();
        }
        w_.end();
        if (memo_.size() <= id) memo_.resize(id + 1, kUnset);
        memo_[id] = w_.memoize();
    }
    void value(const Value& v) {
        switch (v.kind) {
        case Value::Kind::None: return w_.none();
        case Value::Kind::Bool: return w_.boolean(v.boolean);
        case Value::Kind::Int: return w_.integer(v.integer);
        case Value::Kind::Float: return w_.real(v.real);
        case Value::Kind::String: return w_.string(v.text);
        case Value::Kind::List:
            w_.beginList();
            for (const Value& item : v.items) {
                w_.item();
                value(item);
            }
            return w_.end();
        case Value::Kind::Tuple:
            w_.beginTuple();
            for (const Value& item : v.items) value(item);
            return w_.endTuple();
        case Value::Kind::Dict:
            w_.beginDict();
            for (const auto& [k, item] : v.fields) {
                key(k);
                value(item);
            }
            return w_.end();
        }
    }
    pickle::Writer& w() { return w_; }

private:
    static constexpr uint32_t kUnset = UINT32_MAX;
    const Snapshot& snap_;
    pickle::Writer w_;
    std::vector<uint32_t> memo_;
};

void writeJsonTo(const Snapshot& snap, JsonOut& j) {
    j.put("{{\"segments\": [");
    for (size_t i = 0; i < snap.segments.size(); ++i) {
        const Segment& s = snap.segments[i];
        j.put("{}\n{{\"device\": {}, \"address\": {}, \"total_size\": {}, \"allocated_size\": {}, "
              "\"active_size\": {}, "
              "\"requested_size\": {}, \"stream\": {}, \"segment_type\": \"{}\", "
              "\"segment_pool_id\": [{}, {}], "
              "\"is_expandable\": {}, \"frames\": ",
              i ? "," : "", s.device, s.address, s.totalSize, s.allocatedSize, s.activeSize,
              s.requestedSize, s.stream, s.large ? "large" : "small", s.poolId[0], s.poolId[1],
              s.expandable);
        j.frames(snap, s.stack);
        j.put(", \"blocks\": [");
        for (size_t k = 0; k < s.blocks.size(); ++k) {
            const Block& b = s.blocks[k];
            j.put("{}{{\"address\": {}, \"size\": {}, \"requested_size\": {}, \"state\": \"{}\", "
                  "\"frames\": ",
                  k ? ", " : "", b.address, b.size, b.requestedSize, blockStateName(b.state));
            j.frames(snap, b.stack);
            j.put("}}");
        }
        j.put("]}}");
    }
    j.put("],\n\"device_traces\": [");
    for (size_t d = 0; d < snap.deviceTraces.size(); ++d) {
        j.put("{}[", d ? ", " : "");
        const auto& entries = snap.deviceTraces[d];
        for (size_t i = 0; i < entries.size(); ++i) {
            const TraceEntry& e = entries[i];
            j.put(
                "{}\n{{\"action\": \"{}\", \"{}\": {}, \"size\": {}, \"stream\": {}, \"time_us\": ",
                i ? "," : "", actionName(e.action),
                e.action == Action::Oom ? "device_free" : "addr", e.addr, e.size, e.stream);
            j.time(e.timeUs);
            j.put(", \"pool_id\": [{}, {}], \"compile_context\": ", e.poolId[0], e.poolId[1]);
            j.string(snap.strings[e.compileContext]);
            j.put(", \"user_metadata\": ");
            j.string(snap.strings[e.userMetadata]);
            j.put(", \"frames\": ");
            j.frames(snap, e.stack);
            j.put("}}");
        }
        j.put("]");
    }
    j.put("],\n\"allocator_settings\": ");
    if (snap.allocatorSettings.kind == Value::Kind::Dict)
        j.value(snap.allocatorSettings);
    else
        j.put("{{}}");
    j.put(",\n\"external_annotations\": [");
    for (size_t i = 0; i < snap.externalAnnotations.size(); ++i) {
        if (i) j.put(",\n");
        j.value(snap.externalAnnotations[i]);
    }
    j.put("]}}\n");
}

}  // namespace

void writeJson(const Snapshot& snap, const JsonSink& sink) {
    JsonOut j(sink);
    writeJsonTo(snap, j);
    j.flush();
}

void writeJson(const Snapshot& snap, std::ostream& out) {
    writeJson(snap, [&](std::string_view chunk) {
        out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    });
}

std::string toPickle(const Snapshot& snap) {
    std::string bytes;
    PickleOut p(snap, bytes);
    pickle::Writer& w = p.w();
    w.beginDict();
    p.key("segments");
    w.beginList();
    for (const Segment& s : snap.segments) {
        w.item();
        w.beginDict();
        p.u64("device", static_cast<uint64_t>(s.device));
        p.u64("address", s.address);
        p.u64("total_size", s.totalSize);
        p.u64("allocated_size", s.allocatedSize);
        p.u64("active_size", s.activeSize);
        p.u64("requested_size", s.requestedSize);
        p.u64("stream", s.stream);
        p.key("segment_type");
        w.string(s.large ? "large" : "small");
        p.key("segment_pool_id");
        w.unsignedInteger(s.poolId[0]);
        w.unsignedInteger(s.poolId[1]);
        w.tuple2();
        p.key("is_expandable");
        w.boolean(s.expandable);
        p.frames(s.stack);
        p.key("blocks");
        w.beginList();
        for (const Block& b : s.blocks) {
            w.item();
            w.beginDict();
            p.u64("address", b.address);
            p.u64("size", b.size);
            p.u64("requested_size", b.requestedSize);
            p.key("state");
            w.string(blockStateName(b.state));
            p.frames(b.stack);
            w.end();
        }
        w.end();
        w.end();
    }
    w.end();
    p.key("device_traces");
    w.beginList();
    for (const auto& entries : snap.deviceTraces) {
        w.item();
        w.beginList();
        for (const TraceEntry& e : entries) {
            w.item();
            w.beginDict();
            p.key("action");
            w.string(actionName(e.action));
            p.u64(e.action == Action::Oom ? "device_free" : "addr", e.addr);
            p.u64("size", e.size);
            p.u64("stream", e.stream);
            p.key("time_us");
            if (wholeMicros(e.timeUs))
                w.integer(static_cast<int64_t>(e.timeUs));
            else
                w.real(e.timeUs);
            p.key("pool_id");
            w.unsignedInteger(e.poolId[0]);
            w.unsignedInteger(e.poolId[1]);
            w.tuple2();
            p.key("compile_context");
            w.string(snap.strings[e.compileContext]);
            p.key("user_metadata");
            w.string(snap.strings[e.userMetadata]);
            p.frames(e.stack);
            w.end();
        }
        w.end();
    }
    w.end();
    p.key("allocator_settings");
    if (snap.allocatorSettings.kind == Value::Kind::Dict) {
        p.value(snap.allocatorSettings);
    } else {
        w.beginDict();
        w.end();
    }
    p.key("external_annotations");
    w.beginList();
    for (const Value& a : snap.externalAnnotations) {
        w.item();
        p.value(a);
    }
    w.end();
    w.end();
    w.finish();
    return bytes;
}

}  // namespace mtia::mem
