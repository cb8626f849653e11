// Snapshots pickled by torch.cuda.memory._dump_snapshot.
#include "pickle_reader.hpp"
#include "snapshot_reader.hpp"

#include <fmt/format.h>

namespace mtia::mem {

namespace {

uint64_t unsignedField(const pickle::Value& e, const char* key, const std::string& where, bool required) {
  const pickle::Value* v = e.get(key);
  if (v == nullptr) {
    if (required) throw SnapshotError(fmt::format("{}: no '{}'", where, key));
    return 0;
  }
  if (const int64_t* i = v->asInt()) return static_cast<uint64_t>(*i);
  if (const double* d = v->asFloat(); d != nullptr && *d >= 0) return static_cast<uint64_t>(*d);
  throw SnapshotError(fmt::format("{}: '{}' is not an integer", where, key));
}

}  // namespace

Snapshot readPickleSnapshot(const std::string& path, const std::string& bytes) {
  pickle::Value root;
  try {
    root = pickle::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const pickle::Error& e) {
    throw SnapshotError(fmt::format("{}: malformed pickle: {}", path, e.what()));
  }
  if (root.asDict() == nullptr) throw SnapshotError(fmt::format("{}: the pickle is not a dict", path));
  const pickle::Value* traces = root.get("device_traces");
  if (traces == nullptr || traces->asList() == nullptr)
    throw SnapshotError(fmt::format(
        "{}: no 'device_traces' list (PyTorch 1.13 snapshots and snapshots taken without history have no trace)",
        path));
  Snapshot snap;
  size_t dev = 0;
  for (const pickle::Value& device : *traces->asList()) {
    const pickle::List* entries = device.asList();
    if (entries == nullptr) throw SnapshotError(fmt::format("{}: device_traces[{}] is not a list", path, dev));
    auto& out = snap.deviceTraces.emplace_back();
    out.reserve(entries->size());
    for (size_t i = 0; i < entries->size(); ++i) {
      const pickle::Value& e = (*entries)[i];
      const std::string where = fmt::format("{}: device_traces[{}][{}]", path, dev, i);
      const pickle::Value* action = e.get("action");
      if (action == nullptr || action->asString() == nullptr)
        throw SnapshotError(fmt::format("{}: no 'action' string", where));
      TraceEntry t;
      t.action = actionFromName(*action->asString());
      const bool block = t.action == Action::Alloc || t.action == Action::FreeRequested ||
                         t.action == Action::FreeCompleted;
      t.addr = unsignedField(e, t.action == Action::Oom ? "device_free" : "addr", where, block);
      t.size = unsignedField(e, "size", where, block);
      t.stream = unsignedField(e, "stream", where, false);
      if (const pickle::Value* us = e.get("time_us")) {
        if (const double* d = us->asFloat()) t.timeUs = *d;
        if (const int64_t* n = us->asInt()) t.timeUs = static_cast<double>(*n);
      }
      out.push_back(t);
    }
    ++dev;
  }
  return snap;
}

}  // namespace mtia::mem
