// Snapshots in JSON, through simdjson's DOM parser.
#include "snapshot_reader.hpp"

#include <fmt/format.h>
#include <simdjson.h>

namespace mtia::mem {

namespace {

uint64_t unsignedField(simdjson::dom::element e, const char* key, const std::string& where, bool required) {
  simdjson::dom::element v;
  if (e[key].get(v) != simdjson::SUCCESS) {
    if (required) throw SnapshotError(fmt::format("{}: no '{}'", where, key));
    return 0;
  }
  uint64_t u = 0;
  if (v.get_uint64().get(u) == simdjson::SUCCESS) return u;
  int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return static_cast<uint64_t>(i);
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && d >= 0) return static_cast<uint64_t>(d);
  throw SnapshotError(fmt::format("{}: '{}' is not a non-negative number", where, key));
}

}  // namespace

Snapshot readJsonSnapshot(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(path).get(doc); err != simdjson::SUCCESS)
    throw SnapshotError(fmt::format("{}: not a JSON snapshot: {}", path, simdjson::error_message(err)));
  simdjson::dom::array traces;
  if (doc["device_traces"].get_array().get(traces) != simdjson::SUCCESS)
    throw SnapshotError(fmt::format(
        "{}: no 'device_traces' list (PyTorch 1.13 snapshots and snapshots taken without history have no trace)",
        path));
  Snapshot snap;
  size_t dev = 0;
  for (simdjson::dom::element device : traces) {
    simdjson::dom::array entries;
    if (device.get_array().get(entries) != simdjson::SUCCESS)
      throw SnapshotError(fmt::format("{}: device_traces[{}] is not a list", path, dev));
    auto& out = snap.deviceTraces.emplace_back();
    out.reserve(entries.size());
    size_t i = 0;
    for (simdjson::dom::element e : entries) {
      const std::string where = fmt::format("{}: device_traces[{}][{}]", path, dev, i++);
      std::string_view action;
      if (e["action"].get_string().get(action) != simdjson::SUCCESS)
        throw SnapshotError(fmt::format("{}: no 'action' string", where));
      TraceEntry t;
      t.action = actionFromName(action);
      const bool block = t.action == Action::Alloc || t.action == Action::FreeRequested ||
                         t.action == Action::FreeCompleted;
      t.addr = unsignedField(e, t.action == Action::Oom ? "device_free" : "addr", where, block);
      t.size = unsignedField(e, "size", where, block);
      t.stream = unsignedField(e, "stream", where, false);
      double us = 0;
      if (e["time_us"].get_double().get(us) == simdjson::SUCCESS) t.timeUs = us;
      out.push_back(t);
    }
    ++dev;
  }
  return snap;
}

}  // namespace mtia::mem
