// Snapshots pickled by torch.cuda.memory._dump_snapshot (or by hand, as
// PyTorch 1.13 users did with its list of segments).
#include "pickle_reader.hpp"
#include "snapshot_builder.hpp"
#include "snapshot_reader.hpp"

#include <cmath>

namespace mtia::mem {

namespace {

class PickleNode {
 public:
  PickleNode() = default;
  explicit PickleNode(const pickle::Value* v) : v_(v) {}

  bool isDict() const { return v_->asDict() != nullptr; }
  bool isList() const { return v_->asList() != nullptr; }
  bool member(std::string_view key, PickleNode& out) const {
    const pickle::Value* v = v_->get(key);
    if (v == nullptr) return false;
    out = PickleNode(v);
    return true;
  }
  template <class F>
  void forEach(F&& f) const {
    if (const auto* items = v_->asList())
      for (const pickle::Value& item : *items) f(PickleNode(&item));
  }
  size_t size() const { return isList() ? v_->asList()->size() : 0; }
  bool u64(uint64_t& out) const {
    if (const int64_t* i = v_->asInt(); i != nullptr && *i >= 0) {
      out = static_cast<uint64_t>(*i);
      return true;
    }
    const double* d = v_->asFloat();
    if (d == nullptr || !(*d >= 0) || *d >= 0x1p64 || std::trunc(*d) != *d) return false;
    out = static_cast<uint64_t>(*d);
    return true;
  }
  bool i64(int64_t& out) const {
    if (const int64_t* i = v_->asInt()) out = *i;
    return v_->asInt() != nullptr;
  }
  bool f64(double& out) const {
    if (const double* d = v_->asFloat()) out = *d;
    else if (const int64_t* i = v_->asInt()) out = static_cast<double>(*i);
    else return false;
    return true;
  }
  bool str(std::string_view& out) const {
    const auto s = v_->asString();
    if (s) out = *s;
    return s.has_value();
  }
  bool boolean(bool& out) const {
    if (const bool* b = v_->asBool()) out = *b;
    return v_->asBool() != nullptr;
  }

 private:
  static inline const pickle::Value kNone{};
  const pickle::Value* v_ = &kNone;
};

}  // namespace

Snapshot readPickleSnapshot(const std::string& path, std::string bytes, const ReadOptions& options) {
  std::unique_ptr<pickle::Document> doc;
  try {
    doc = pickle::parse(std::move(bytes));
  } catch (const pickle::Error& e) {
    throw SnapshotError(fmt::format("{}: malformed pickle: {}", path, e.what()));
  }
  return SnapshotBuilder<PickleNode>(path, options).build(PickleNode(&doc->root()));
}

}  // namespace mtia::mem
