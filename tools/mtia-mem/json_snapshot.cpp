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

  bool isDict() const { return e_.is_object(); }
  bool isList() const { return e_.is_array(); }
  bool member(std::string_view key, JsonNode& out) const {
    simdjson::dom::object o;
    simdjson::dom::element v;
    if (e_.get_object().get(o) != simdjson::SUCCESS || o.at_key(key).get(v) != simdjson::SUCCESS) return false;
    out = JsonNode(v);
    return true;
  }
  template <class F>
  void forEach(F&& f) const {
    simdjson::dom::array a;
    if (e_.get_array().get(a) != simdjson::SUCCESS) return;
    for (simdjson::dom::element item : a) f(JsonNode(item));
  }
  size_t size() const {
    simdjson::dom::array a;
    return e_.get_array().get(a) == simdjson::SUCCESS ? a.size() : 0;
  }
  bool u64(uint64_t& out) const {
    if (e_.get_uint64().get(out) == simdjson::SUCCESS) return true;
    double d = 0;  // some writers put integers as 1.0e9; take them if they are whole
    if (e_.get_double().get(d) != simdjson::SUCCESS || !(d >= 0) || d >= 0x1p64 || std::trunc(d) != d) return false;
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

Snapshot readJsonSnapshot(const std::string& path, const ReadOptions& options) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(path).get(doc); err != simdjson::SUCCESS)
    throw SnapshotError(fmt::format("{}: not a JSON snapshot: {}", path, simdjson::error_message(err)));
  return SnapshotBuilder<JsonNode>(path, options).build(JsonNode(doc));
}

}  // namespace mtia::mem
