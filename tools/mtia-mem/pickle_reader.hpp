// A small reader for the pickles PyTorch writes for memory snapshots
// (torch.cuda.memory._dump_snapshot: protocol 2 to 4 of a dict of lists,
// dicts, tuples, strings, integers, floats, booleans and None). It accepts
// exactly the opcodes those need, checks every length against the input,
// and rejects anything else with the opcode and its offset: a snapshot
// file is data, never code, so nothing that would call or import is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mtia::mem::pickle {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<Value, Value>>;  // in insertion order

struct Bytes {
  std::string data;
};

// Lists, tuples and dicts are shared, as in Python: the memo hands out the same object again.
struct Value {
  struct ListBox {
    List items;
    bool tuple = false;
  };
  struct DictBox {
    Dict items;
  };
  std::variant<std::monostate, bool, int64_t, double, std::string, Bytes, std::shared_ptr<ListBox>,
               std::shared_ptr<DictBox>>
      v;

  bool isNone() const { return std::holds_alternative<std::monostate>(v); }
  const int64_t* asInt() const { return std::get_if<int64_t>(&v); }
  const double* asFloat() const { return std::get_if<double>(&v); }
  const std::string* asString() const { return std::get_if<std::string>(&v); }
  const List* asList() const;  // a list or a tuple
  const Dict* asDict() const;
  // The value of key in a dict, or null.
  const Value* get(std::string_view key) const;
};

// Parses one pickle. Throws Error ("offset N: ...") on malformed or unsupported input.
Value parse(const uint8_t* data, size_t size);

}  // namespace mtia::mem::pickle
