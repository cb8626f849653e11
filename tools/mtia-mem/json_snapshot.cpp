// Snapshots in JSON, through simdjson's DOM parser (the whole file at a few
// GB/s; a snapshot's consumers jump between segments and traces anyway).
#include "snapshot_builder.hpp"
#include "snapshot_reader.hpp"

#include <simdjson.h>

#include <cmath>

namespace mtia::mem {

namespace {

class JsonNode {
public:
    JsonNode() = default;
    explicit JsonNode(simdjson::dom::element e) : e_(e) {}

    Value::Kind kind() const {
        switch (e_.type()) {
        case simdjson::dom::element_type::ARRAY: return Value::Kind::List;
        case simdjson::dom::element_type::OBJECT: return Value::Kind::Dict;
        case simdjson::dom::element_type::INT64: return Value::Kind::Int;
        case simdjson::dom::element_type::UINT64:  // beyond int64: kept as a float, as Python's
                                                   // json would not
        case simdjson::dom::element_type::DOUBLE: return Value::Kind::Float;
        case simdjson::dom::element_type::STRING: return Value::Kind::String;
        case simdjson::dom::element_type::BOOL: return Value::Kind::Bool;
        case simdjson::dom::element_type::NULL_VALUE: return Value::Kind::None;
        }
        return Value::Kind::None;
    }
    bool isDict() const { return e_.is_object(); }
    bool isList() const { return e_.is_array(); }
    bool member(std::string_view key, JsonNode& out) const {
        simdjson::dom::object o;
        simdjson::dom::element v;
        if (e_.get_object().get(o) != simdjson::SUCCESS ||
            o.at_key(key).get(v) != simdjson::SUCCESS)
            return false;
        out = JsonNode(v);
        return true;
    }
    template <class F>
    void forEach(F&& f) const {
        simdjson::dom::array a;
        if (e_.get_array().get(a) != simdjson::SUCCESS) return;
        for (simdjson::dom::element item : a) f(JsonNode(item));
    }
    template <class F>
    void forEachMember(F&& f) const {
        simdjson::dom::object o;
        if (e_.get_object().get(o) != simdjson::SUCCESS) return;
        for (simdjson::dom::key_value_pair kv : o) f(kv.key, true, JsonNode(kv.value));
    }
    size_t size() const {
        simdjson::dom::array a;
        if (e_.get_array().get(a) == simdjson::SUCCESS) return a.size();
        simdjson::dom::object o;
        return e_.get_object().get(o) == simdjson::SUCCESS ? o.size() : 0;
    }
    const void* identity() const { return nullptr; }  // JSON shares nothing
    bool u64(uint64_t& out) const {
        if (e_.get_uint64().get(out) == simdjson::SUCCESS) return true;
        double d = 0;  // some writers put integers as 1.0e9; take them if they are whole
        if (e_.get_double().get(d) != simdjson::SUCCESS || !(d >= 0) || d >= 0x1p64 ||
            std::trunc(d) != d)
            return false;
        out = static_cast<uint64_t>(d);
        return true;
    }
    bool i64(int64_t& out) const { return e_.get_int64().get(out) == simdjson::SUCCESS; }
    bool f64(double& out) const { return e_.get_double().get(out) == simdjson::SUCCESS; }
    bool str(std::string_view& out) const { return e_.get_string().get(out) == simdjson::SUCCESS; }
    bool boolean(bool& out) const { return e_.get_bool().get(out) == simdjson::SUCCESS; }

private:
    simdjson::dom::element e_;
};

}  // namespace

Snapshot readJsonSnapshot(const std::string& name, std::string bytes, const ReadOptions& options) {
    const size_t length = bytes.size();
    bytes.resize(length +
                 simdjson::SIMDJSON_PADDING);  // no copy when the caller reserved it (readSnapshot)
    if (options.progress) options.progress("parsing JSON", 0);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto err = parser.parse(bytes.data(), length, false).get(doc); err != simdjson::SUCCESS)
        throw SnapshotError(
            fmt::format("{}: not a JSON snapshot: {}", name, simdjson::error_message(err)));
    return SnapshotBuilder<JsonNode>(name, options, length).build(JsonNode(doc));
}

}  // namespace mtia::mem
