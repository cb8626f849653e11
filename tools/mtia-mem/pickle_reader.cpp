#include "pickle_reader.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

namespace mtia::mem::pickle {

const std::vector<Value>* Value::asList() const {
    return kind == Kind::List || kind == Kind::Tuple ? &list->items : nullptr;
}

const Value* Value::get(std::string_view key) const {
    if (kind != Kind::Dict) return nullptr;
    const Value* found = nullptr;
    for (const auto& [k, v] : dict->items)
        if (k.kind == Kind::String && k.length == key.size() &&
            std::memcmp(k.chars, key.data(), key.size()) == 0)
            found = &v;
    return found;
}

namespace {

// Python's pickler batches APPENDS and SETITEMS by 1000 and TorchScript's does
// not batch at all, so a snapshot's stack holds at most its longest list; these
// bounds only turn hostile input into a message instead of exhausting memory.
constexpr size_t kMaxMarks = size_t{1} << 16;
constexpr size_t kMaxStack = size_t{1} << 28;

// One opcode byte can make a 16-byte value (None, an empty list), so the values a pickle describes
// are bounded by what they cost, not by the opcodes: what the reader holds (stack, memo, containers
// and their items) may not pass kValueBytesPerInputByte x the file's size + kValueBytesSlack. A
// snapshot that PyTorch or the runtime wrote needs about a third of that (its dicts' keys and most
// values take several bytes each); a file of Nones or empty lists is refused instead of taking
// gigabytes.
constexpr size_t kContainerBytes =
    sizeof(ListObj) + 8;                 // the object in its deque, and its share of the map
constexpr size_t kSparseMemoBytes = 64;  // a node of the hash map, its bucket and the value

enum Op : uint8_t {
    kMark = '(',
    kStop = '.',
    kNone = 'N',
    kBinInt = 'J',
    kBinInt1 = 'K',
    kBinInt2 = 'M',
    kBinUnicode = 'X',
    kAppend = 'a',
    kAppends = 'e',
    kBinGet = 'h',
    kLongBinGet = 'j',
    kDict = 'd',
    kEmptyDict = '}',
    kList = 'l',
    kEmptyList = ']',
    kBinPut = 'q',
    kLongBinPut = 'r',
    kSetItem = 's',
    kSetItems = 'u',
    kTuple = 't',
    kEmptyTuple = ')',
    kBinFloat = 'G',
    kProto = 0x80,
    kTuple1 = 0x85,
    kTuple2 = 0x86,
    kTuple3 = 0x87,
    kNewTrue = 0x88,
    kNewFalse = 0x89,
    kLong1 = 0x8a,
    kShortBinUnicode = 0x8c,
    kBinUnicode8 = 0x8d,
    kMemoize = 0x94,
    kFrame = 0x95,
};

}  // namespace

// Not in the anonymous namespace: Document names it as a friend.
class Reader {
public:
    explicit Reader(Document& doc)
        : doc_(doc), p_(reinterpret_cast<const uint8_t*>(doc.bytes_.data())),
          size_(doc.bytes_.size()), limit_(valueBudget(size_)) {}

    static std::unique_ptr<Document> load(std::string bytes) {
        auto doc = std::make_unique<Document>();
        doc->bytes_ = std::move(bytes);  // before reading: strings become views into it
        doc->root_ = Reader(*doc).run();
        return doc;
    }

private:
    Value run() {
        if (size_ < 2 || p_[0] != kProto)
            fail(0, "not a pickle of protocol 2 or later (no PROTO opcode)");
        while (pos_ < size_) {
            const size_t at = pos_;
            const uint8_t op = p_[pos_++];
            if (op == kStop) {
                if (stack_.size() != 1 || !marks_.empty())
                    fail(at, "STOP with {} values on the stack and {} open MARKs", stack_.size(),
                         marks_.size());
                return stack_.back();
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

    const uint8_t* take(uint64_t n, size_t at) {
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
    Value text(uint64_t n, size_t at) {
        const uint8_t* q = take(n, at);
        if (n > UINT32_MAX) fail(at, "a string of {} bytes (at most 4 GiB are read)", n);
        // Python decodes these opcodes as UTF-8 and refuses what is not; so do we, so that every
        // string read can be written to JSON as it is.
        if (!simdjson::validate_utf8(reinterpret_cast<const char*>(q), n))
            fail(at, "a string that is not UTF-8");
        Value v = scalar(Value::Kind::String);
        v.chars = reinterpret_cast<const char*>(q);
        v.length = static_cast<uint32_t>(n);
        return v;
    }

    // What the reader holds grows by bytes (values made, stacked, memoized, stored in a container).
    void charge(size_t bytes, size_t at) {
        used_ += bytes;
        if (used_ > limit_)
            fail(at,
                 "the pickle describes more values than a file of {} bytes can hold (more than {} "
                 "MiB of them; at "
                 "most {} bytes per byte of file and {} MiB): damaged or hostile",
                 size_, limit_ >> 20, kValueBytesPerInputByte, kValueBytesSlack >> 20);
    }
    void credit(size_t bytes) { used_ -= std::min(used_, bytes); }

    void push(const Value& v, size_t at) {
        if (stack_.size() >= kMaxStack) fail(at, "more than {} values on the stack", kMaxStack);
        charge(sizeof(Value), at);
        stack_.push_back(v);
    }
    // The stack above the innermost MARK is what an opcode may consume.
    size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
    Value pop(size_t at) {
        if (stack_.size() <= floor()) fail(at, "stack underflow");
        Value v = stack_.back();
        stack_.pop_back();
        credit(sizeof(Value));
        return v;
    }
    Value& top(size_t at) {
        if (stack_.size() <= floor()) fail(at, "stack underflow");
        return stack_.back();
    }
    size_t popMark(size_t at) {
        if (marks_.empty()) fail(at, "no MARK to pop");
        const size_t m = marks_.back();
        marks_.pop_back();
        return m;
    }

    Value scalar(Value::Kind kind) {
        Value v;
        v.kind = kind;
        return v;
    }
    Value newList(Value::Kind kind, size_t at) {
        charge(kContainerBytes, at);
        Value v;
        v.kind = kind;
        v.list = &doc_.lists_.emplace_back();
        return v;
    }
    Value newDict(size_t at) {
        charge(kContainerBytes, at);
        Value v;
        v.kind = Value::Kind::Dict;
        v.dict = &doc_.dicts_.emplace_back();
        return v;
    }
    // Containers are const to readers of the Document; the Reader alone fills them.
    ListObj& listOf(const Value& v, const char* op, size_t at) {
        if (v.kind != Value::Kind::List) fail(at, "{} to something that is not a list", op);
        return const_cast<ListObj&>(*v.list);
    }
    DictObj& dictOf(const Value& v, const char* op, size_t at) {
        if (v.kind != Value::Kind::Dict) fail(at, "{} on something that is not a dict", op);
        return const_cast<DictObj&>(*v.dict);
    }

    // Python's memo is a dict: MEMOIZE stores at len(memo). Picklers number densely, so the vector
    // holds everything but the odd explicit BINPUT index beyond its end.
    void memoPut(uint64_t index, size_t at) {
        const Value v = top(at);
        if (index < memo_.size()) {
            memo_[index] = v;
        } else if (index == memo_.size() && sparse_.empty()) {
            charge(sizeof(Value), at);
            memo_.push_back(v);
        } else {
            if (!sparse_.contains(index)) charge(kSparseMemoBytes, at);
            sparse_[index] = v;
        }
    }
    void memoGet(uint64_t index, size_t at) {
        if (index < memo_.size()) return push(memo_[index], at);
        auto it = sparse_.find(index);
        if (it == sparse_.end()) fail(at, "memo index {} was never set", index);
        push(it->second, at);
    }

    // Moves stack[from..] into a new list or tuple.
    // The items move from the stack to the list: what they cost stays charged.
    Value collect(size_t from, Value::Kind kind, size_t at) {
        Value t = newList(kind, at);
        auto& items = const_cast<ListObj*>(t.list)->items;
        items.assign(stack_.begin() + static_cast<ptrdiff_t>(from), stack_.end());
        stack_.resize(from);
        return t;
    }
    size_t lastN(size_t n, size_t at) {
        if (stack_.size() < floor() + n) fail(at, "stack underflow");
        return stack_.size() - n;
    }
    void setItems(DictObj& dict, size_t from, size_t at) {
        if ((stack_.size() - from) % 2 != 0) fail(at, "a key without a value");
        // Two stacked values become one pair of the same size: what they cost stays charged.
        dict.items.reserve(dict.items.size() + (stack_.size() - from) / 2);
        for (size_t i = from; i < stack_.size(); i += 2)
            dict.items.emplace_back(stack_[i], stack_[i + 1]);
        stack_.resize(from);
    }

    void step(size_t at, uint8_t op) {
        switch (op) {
        case kProto: {
            const uint64_t v = le(1, at);
            if (v < 2 || v > 5) fail(at, "pickle protocol {} (2 to 5 are read)", v);
            return;
        }
        case kFrame: {  // only a read-ahead hint, but it must fit
            const uint64_t n = le(8, at);
            if (n > size_ - pos_) fail(at, "FRAME of {} bytes, {} left", n, size_ - pos_);
            return;
        }
        case kMark:
            if (marks_.size() >= kMaxMarks) fail(at, "more than {} nested MARKs", kMaxMarks);
            marks_.push_back(stack_.size());
            return;
        case kEmptyDict: return push(newDict(at), at);
        case kEmptyList: return push(newList(Value::Kind::List, at), at);
        case kEmptyTuple: return push(newList(Value::Kind::Tuple, at), at);
        case kNone: return push(scalar(Value::Kind::None), at);
        case kNewTrue:
        case kNewFalse: {
            Value v = scalar(Value::Kind::Bool);
            v.b = op == kNewTrue;
            return push(v, at);
        }
        case kBinInt1:
        case kBinInt2:
        case kBinInt: {
            Value v = scalar(Value::Kind::Int);
            if (op == kBinInt)
                v.i = static_cast<int32_t>(le(4, at));
            else
                v.i = static_cast<int64_t>(le(op == kBinInt1 ? 1 : 2, at));
            return push(v, at);
        }
        case kLong1: {  // little-endian two's complement
            const size_t n = le(1, at);
            if (n == 9 && pos_ + 9 <= size_ && p_[pos_ + 8] == 0 && (p_[pos_ + 7] & 0x80) != 0) {
                Value v = scalar(
                    Value::Kind::UInt);  // 2^63 to 2^64 - 1, as our writer puts such addresses
                v.u = le(8, at);
                pos_ += 1;
                return push(v, at);
            }
            if (n > 8)
                fail(at,
                     "LONG1 integer of {} bytes: at most a signed 64-bit or an unsigned 64-bit "
                     "value is read",
                     n);
            uint64_t u = n == 0 ? 0 : le(n, at);
            if (n > 0 && n < 8 && (u >> (8 * n - 1)) != 0)
                u |= ~uint64_t{0} << (8 * n);  // sign-extend
            Value v = scalar(Value::Kind::Int);
            v.i = static_cast<int64_t>(u);
            return push(v, at);
        }
        case kBinFloat: {  // big-endian IEEE double
            const uint8_t* q = take(8, at);
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i) bits = (bits << 8) | q[i];
            Value v = scalar(Value::Kind::Float);
            v.f = std::bit_cast<double>(bits);
            return push(v, at);
        }
        case kShortBinUnicode:
        case kBinUnicode:
        case kBinUnicode8: {
            const uint64_t n = le(op == kShortBinUnicode ? 1 : op == kBinUnicode ? 4 : 8, at);
            return push(text(n, at), at);
        }
        case kMemoize: return memoPut(memo_.size() + sparse_.size(), at);
        case kBinPut: return memoPut(le(1, at), at);
        case kLongBinPut: return memoPut(le(4, at), at);
        case kBinGet: return memoGet(le(1, at), at);
        case kLongBinGet: return memoGet(le(4, at), at);
        case kTuple: return push(collect(popMark(at), Value::Kind::Tuple, at), at);
        case kTuple1: return push(collect(lastN(1, at), Value::Kind::Tuple, at), at);
        case kTuple2: return push(collect(lastN(2, at), Value::Kind::Tuple, at), at);
        case kTuple3: return push(collect(lastN(3, at), Value::Kind::Tuple, at), at);
        case kList: return push(collect(popMark(at), Value::Kind::List, at), at);
        case kDict: {
            const size_t from = popMark(at);
            Value d = newDict(at);
            setItems(const_cast<DictObj&>(*d.dict), from, at);
            return push(d, at);
        }
        case kAppend: {
            const Value v = pop(at);
            ListObj& list = listOf(top(at), "APPEND", at);
            charge(sizeof(Value), at);  // the stacked copy was credited by pop
            list.items.push_back(v);
            return;
        }
        case kAppends: {
            const size_t from = popMark(at);
            if (stack_.size() < from || from <= floor())
                fail(at, "APPENDS without a list under its MARK");
            auto& items = listOf(stack_[from - 1], "APPENDS", at).items;
            items.insert(items.end(), stack_.begin() + static_cast<ptrdiff_t>(from), stack_.end());
            stack_.resize(from);  // the items moved into the list: what they cost stays charged
            return;
        }
        case kSetItem: {
            const Value v = pop(at);
            const Value k = pop(at);
            DictObj& dict = dictOf(top(at), "SETITEM", at);
            charge(2 * sizeof(Value), at);  // the stacked copies were credited by pop
            dict.items.emplace_back(k, v);
            return;
        }
        case kSetItems: {
            const size_t from = popMark(at);
            if (from <= floor()) fail(at, "SETITEMS without a dict under its MARK");
            setItems(dictOf(stack_[from - 1], "SETITEMS", at), from, at);
            return;
        }
        default:
            fail(at,
                 "opcode 0x{:02x} is not one a memory snapshot uses (only dicts, lists, tuples, "
                 "strings, numbers, "
                 "booleans and None are read)",
                 op);
        }
    }

    Document& doc_;
    const uint8_t* p_;
    size_t size_;
    size_t pos_ = 0;
    const size_t limit_;  // bytes of values the reader may hold
    size_t used_ = 0;
    std::deque<Value>
        stack_;  // a deque: growing it never copies what it holds (no transient double)
    std::vector<size_t> marks_;
    std::vector<Value> memo_;
    std::unordered_map<uint64_t, Value> sparse_;
};

size_t valueBudget(size_t inputBytes) {
    if (inputBytes > (SIZE_MAX - kValueBytesSlack) / kValueBytesPerInputByte) return SIZE_MAX;
    return inputBytes * kValueBytesPerInputByte + kValueBytesSlack;
}

std::unique_ptr<Document> parse(std::string bytes) {
    return Reader::load(std::move(bytes));
}

}  // namespace mtia::mem::pickle
