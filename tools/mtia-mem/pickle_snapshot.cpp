// Snapshots pickled by torch.cuda.memory._dump_snapshot (or by hand, as
// PyTorch 1.13 users did with its list of segments).
#include "pickle_reader.hpp"
#include "snapshot_builder.hpp"
#include "snapshot_reader.hpp"

#include <cmath>
#include <string>

namespace mtia::mem {

namespace {

class PickleNode {
public:
    PickleNode() = default;
    explicit PickleNode(const pickle::Value* v) : v_(v) {}

    Value::Kind kind() const {
        switch (v_->kind) {
        case pickle::Value::Kind::None: return Value::Kind::None;
        case pickle::Value::Kind::Bool: return Value::Kind::Bool;
        case pickle::Value::Kind::Int: return Value::Kind::Int;
        case pickle::Value::Kind::Float:
        case pickle::Value::Kind::UInt:
            return Value::Kind::Float;  // beyond int64, as the JSON reader keeps it
        case pickle::Value::Kind::String: return Value::Kind::String;
        case pickle::Value::Kind::List: return Value::Kind::List;
        case pickle::Value::Kind::Tuple: return Value::Kind::Tuple;
        case pickle::Value::Kind::Dict: return Value::Kind::Dict;
        }
        return Value::Kind::None;
    }
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
    // Members in file order; a key that repeats is given each time (Python would keep the last
    // value).
    template <class F>
    void forEachMember(F&& f) const {
        const pickle::DictObj* d = v_->asDict();
        if (d == nullptr) return;
        std::string number;
        for (const auto& [k, v] : d->items) {
            if (const auto text = k.asString()) {
                f(*text, true, PickleNode(&v));
            } else if (const int64_t* i = k.asInt()) {
                number = std::to_string(*i);  // as json.dumps writes integer keys
                f(std::string_view(number), true, PickleNode(&v));
            } else {
                f(std::string_view(), false, PickleNode(&v));
            }
        }
    }
    size_t size() const {
        if (const auto* items = v_->asList()) return items->size();
        if (const auto* d = v_->asDict()) return d->items.size();
        return 0;
    }
    // Lists and dicts live once in the Document, however often the memo hands them out.
    const void* identity() const {
        if (v_->kind == pickle::Value::Kind::List || v_->kind == pickle::Value::Kind::Tuple)
            return v_->list;
        if (v_->kind == pickle::Value::Kind::Dict) return v_->dict;
        return nullptr;
    }
    bool u64(uint64_t& out) const {
        if (const uint64_t* u = v_->asUInt()) {
            out = *u;
            return true;
        }
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
        if (const double* d = v_->asFloat())
            out = *d;
        else if (const int64_t* i = v_->asInt())
            out = static_cast<double>(*i);
        else if (const uint64_t* u = v_->asUInt())
            out = static_cast<double>(*u);
        else
            return false;
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

Snapshot readPickleSnapshot(const std::string& name, std::string bytes,
                            const ReadOptions& options) {
    const size_t length = bytes.size();
    if (options.progress) options.progress("parsing pickle", 0);
    std::unique_ptr<pickle::Document> doc;
    try {
        doc = pickle::parse(std::move(bytes));
    } catch (const pickle::Error& e) {
        throw SnapshotError(fmt::format("{}: malformed pickle: {}", name, e.what()));
    }
    return SnapshotBuilder<PickleNode>(name, options, length).build(PickleNode(&doc->root()));
}

}  // namespace mtia::mem
