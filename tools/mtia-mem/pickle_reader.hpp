// A small reader for the pickles that memory snapshots come in
// (torch.cuda.memory._dump_snapshot is pickle.dump of a dict of lists, dicts,
// tuples, strings, integers, floats, booleans and None, protocol 2 to 5).
// It accepts the opcodes those need, the subset that PyTorch's own viewer
// (MemoryViz.js) reads too (reference notes 4.5), checks every length against
// the input, and rejects anything else with the opcode and its offset: a
// snapshot is data, never code, so nothing that would import or call is read.
//
// Every list, tuple and dict lives in the Document's arena and values refer to
// them by pointer, so the memo hands out the same object as Python does (no
// copies, however often it is fetched), nesting of any depth or a list that
// contains itself costs no recursion, and strings are views into the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mtia::mem::pickle {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ListObj;
struct DictObj;

// 16 bytes: a snapshot of hundreds of MB holds tens of millions of them.
struct Value {
    // UInt: an integer above INT64_MAX and below 2^64 (a LONG1 of 9 bytes, the last one zero).
    enum class Kind : uint8_t { None, Bool, Int, Float, String, List, Tuple, Dict, UInt };
    union {
        bool b;
        int64_t i;
        uint64_t u;  // UInt
        double f;
        const char* chars;    // String: a view into the Document's input
        const ListObj* list;  // List and Tuple
        const DictObj* dict;
    };
    uint32_t length = 0;  // String
    Kind kind = Kind::None;

    Value() : i(0) {}
    bool isNone() const { return kind == Kind::None; }
    const bool* asBool() const { return kind == Kind::Bool ? &b : nullptr; }
    const int64_t* asInt() const { return kind == Kind::Int ? &i : nullptr; }
    const uint64_t* asUInt() const { return kind == Kind::UInt ? &u : nullptr; }
    const double* asFloat() const { return kind == Kind::Float ? &f : nullptr; }
    std::optional<std::string_view> asString() const {
        if (kind != Kind::String) return std::nullopt;
        return std::string_view(chars, length);
    }
    const std::vector<Value>* asList() const;  // a list or a tuple
    const DictObj* asDict() const { return kind == Kind::Dict ? dict : nullptr; }
    // The value of key in a dict (the last one, if the key repeats), or null.
    const Value* get(std::string_view key) const;
};

struct ListObj {
    std::vector<Value> items;
};

struct DictObj {
    std::vector<std::pair<Value, Value>>
        items;  // in insertion order; a later equal key wins in get()
};

// The result of parse(): the root value and everything it refers to.
class Document {
public:
    const Value& root() const { return root_; }

private:
    friend class Reader;
    std::string bytes_;  // strings are views into it
    std::deque<ListObj> lists_;
    std::deque<DictObj> dicts_;
    Value root_;
};

// What the values of a pickle of inputBytes bytes may cost the reader (stack, memo, containers,
// items): kValueBytesPerInputByte per byte plus kValueBytesSlack; parse refuses a pickle that
// describes more. With the input itself (kept: strings are views into it), a Document holds at most
// about (1 + kValueBytesPerInputByte) x the file's size + kValueBytesSlack. Thread-safe (pure).
inline constexpr size_t kValueBytesPerInputByte = 6;
inline constexpr size_t kValueBytesSlack = size_t{32} << 20;
size_t valueBudget(size_t inputBytes);

// Parses one pickle. Throws Error ("offset N: ...") on malformed or unsupported input, and when the
// values it describes would cost more than valueBudget(bytes.size()).
std::unique_ptr<Document> parse(std::string bytes);

}  // namespace mtia::mem::pickle
