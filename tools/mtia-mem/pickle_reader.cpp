#include "pickle_reader.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <string_view>

namespace mtia::mem::pickle {

const List* Value::asList() const {
  auto* box = std::get_if<std::shared_ptr<ListBox>>(&v);
  return box != nullptr ? &(*box)->items : nullptr;
}

const Dict* Value::asDict() const {
  auto* box = std::get_if<std::shared_ptr<DictBox>>(&v);
  return box != nullptr ? &(*box)->items : nullptr;
}

const Value* Value::get(std::string_view key) const {
  const Dict* d = asDict();
  if (d == nullptr) return nullptr;
  for (const auto& [k, val] : *d)
    if (const std::string* s = k.asString(); s != nullptr && *s == key) return &val;
  return nullptr;
}

namespace {

// Bounds for hostile input: nesting of MARKs and the memo's size.
constexpr size_t kMaxMarks = 100000;
constexpr size_t kMaxMemo = size_t{1} << 26;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), size_(size) {}

  Value run() {
    while (pos_ < size_) {
      const size_t at = pos_;
      const uint8_t op = p_[pos_++];
      if (op == '.') {  // STOP
        if (stack_.size() != 1 || !marks_.empty()) fail(at, "STOP with {} values on the stack", stack_.size());
        return std::move(stack_.back());
      }
      step(at, op);
    }
    fail(pos_, "input ends without STOP");
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(size_t at, fmt::format_string<Args...> f, Args&&... args) const {
    throw Error(fmt::format("offset {}: {}", at, fmt::format(f, std::forward<Args>(args)...)));
  }

  const uint8_t* take(size_t n, size_t at) {
    if (n > size_ - pos_) fail(at, "needs {} more bytes, {} left", n, size_ - pos_);
    const uint8_t* q = p_ + pos_;
    pos_ += n;
    return q;
  }
  uint64_t le(size_t n, size_t at) {
    const uint8_t* q = take(n, at);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{q[i]} << (8 * i);
    return v;
  }
  std::string text(size_t n, size_t at) {
    const uint8_t* q = take(n, at);
    return std::string(reinterpret_cast<const char*>(q), n);
  }
  Value pop(size_t at) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) fail(at, "stack underflow");
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Value& top(size_t at) {
    if (stack_.empty()) fail(at, "stack underflow");
    return stack_.back();
  }
  size_t popMark(size_t at) {
    if (marks_.empty()) fail(at, "no MARK to pop");
    const size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }
  void push(Value v) { stack_.push_back(std::move(v)); }
  static Value makeList(bool tuple) {
    auto box = std::make_shared<Value::ListBox>();
    box->tuple = tuple;
    return Value{box};
  }
  Value::ListBox& listAt(Value& v, size_t at) {
    auto* box = std::get_if<std::shared_ptr<Value::ListBox>>(&v.v);
    if (box == nullptr || (*box)->tuple) fail(at, "APPEND to something that is not a list");
    return **box;
  }
  Value::DictBox& dictAt(Value& v, size_t at) {
    auto* box = std::get_if<std::shared_ptr<Value::DictBox>>(&v.v);
    if (box == nullptr) fail(at, "SETITEM on something that is not a dict");
    return **box;
  }
  void memoPut(size_t index, size_t at) {
    if (index > kMaxMemo) fail(at, "memo index {} too large", index);
    if (memo_.size() <= index) {
      memo_.resize(index + 1);
      memoSet_.resize(index + 1, false);
    }
    memo_[index] = top(at);
    memoSet_[index] = true;
  }
  void memoGet(size_t index, size_t at) {
    if (index >= memo_.size() || !memoSet_[index]) fail(at, "memo index {} was never set", index);
    push(memo_[index]);
  }

  void tuple(size_t from, size_t at) {
    Value t = makeList(true);
    auto& items = std::get<std::shared_ptr<Value::ListBox>>(t.v)->items;
    if (from > stack_.size()) fail(at, "stack underflow");
    for (size_t i = from; i < stack_.size(); ++i) items.push_back(std::move(stack_[i]));
    stack_.resize(from);
    push(std::move(t));
  }

  void step(size_t at, uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint64_t v = le(1, at);
        if (v < 2 || v > 5) fail(at, "pickle protocol {} (2 to 5 are read)", v);
        return;
      }
      case 0x95: take(8, at); return;  // FRAME: a hint only
      case '(':
        if (marks_.size() >= kMaxMarks) fail(at, "more than {} nested MARKs", kMaxMarks);
        marks_.push_back(stack_.size());
        return;
      case '}': push(Value{std::make_shared<Value::DictBox>()}); return;
      case ']': push(makeList(false)); return;
      case ')': push(makeList(true)); return;
      case 'N': push(Value{}); return;
      case 0x88: push(Value{true}); return;
      case 0x89: push(Value{false}); return;
      case 'K': push(Value{static_cast<int64_t>(le(1, at))}); return;
      case 'M': push(Value{static_cast<int64_t>(le(2, at))}); return;
      case 'J': push(Value{static_cast<int64_t>(static_cast<int32_t>(le(4, at)))}); return;
      case 0x8a: {  // LONG1: little-endian two's complement
        const size_t n = le(1, at);
        if (n > 8) fail(at, "integer of {} bytes (at most 8 are read)", n);
        uint64_t v = n == 0 ? 0 : le(n, at);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        push(Value{static_cast<int64_t>(v)});
        return;
      }
      case 'G': {  // BINFLOAT, big-endian
        const uint8_t* q = take(8, at);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | q[i];
        push(Value{std::bit_cast<double>(bits)});
        return;
      }
      case 0x8c: push(Value{text(le(1, at), at)}); return;  // SHORT_BINUNICODE
      case 'X': push(Value{text(le(4, at), at)}); return;   // BINUNICODE
      case 0x8d: push(Value{text(le(8, at), at)}); return;  // BINUNICODE8
      case 'C': push(Value{Bytes{text(le(1, at), at)}}); return;  // SHORT_BINBYTES
      case 'B': push(Value{Bytes{text(le(4, at), at)}}); return;  // BINBYTES
      case 0x94: memoPut(memo_.size(), at); return;                // MEMOIZE
      case 'q': memoPut(le(1, at), at); return;                    // BINPUT
      case 'r': memoPut(le(4, at), at); return;                    // LONG_BINPUT
      case 'h': memoGet(le(1, at), at); return;                    // BINGET
      case 'j': memoGet(le(4, at), at); return;                    // LONG_BINGET
      case 't': tuple(popMark(at), at); return;
      case 0x85: tuple(stackFrom(1, at), at); return;
      case 0x86: tuple(stackFrom(2, at), at); return;
      case 0x87: tuple(stackFrom(3, at), at); return;
      case 'a': {  // APPEND
        Value v = pop(at);
        listAt(top(at), at).items.push_back(std::move(v));
        return;
      }
      case 'e': {  // APPENDS
        const size_t m = popMark(at);
        if (m == 0) fail(at, "APPENDS without a list under its MARK");
        auto& list = listAt(stack_[m - 1], at);
        for (size_t i = m; i < stack_.size(); ++i) list.items.push_back(std::move(stack_[i]));
        stack_.resize(m);
        return;
      }
      case 's': {  // SETITEM
        Value v = pop(at);
        Value k = pop(at);
        dictAt(top(at), at).items.emplace_back(std::move(k), std::move(v));
        return;
      }
      case 'u': {  // SETITEMS
        const size_t m = popMark(at);
        if (m == 0) fail(at, "SETITEMS without a dict under its MARK");
        if ((stack_.size() - m) % 2 != 0) fail(at, "SETITEMS with an odd number of values");
        auto& dict = dictAt(stack_[m - 1], at);
        for (size_t i = m; i < stack_.size(); i += 2) dict.items.emplace_back(std::move(stack_[i]), std::move(stack_[i + 1]));
        stack_.resize(m);
        return;
      }
      default:
        fail(at, "opcode 0x{:02x} is not one a memory snapshot uses", op);
    }
  }
  size_t stackFrom(size_t n, size_t at) {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() < floor + n) fail(at, "stack underflow");
    return stack_.size() - n;
  }

  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::vector<Value> memo_;
  std::vector<bool> memoSet_;
};

}  // namespace

Value parse(const uint8_t* data, size_t size) {
  if (size < 2 || data[0] != 0x80) throw Error("offset 0: not a pickle of protocol 2 or later (no PROTO opcode)");
  return Reader(data, size).run();
}

}  // namespace mtia::mem::pickle
