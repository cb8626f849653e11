#include "allocator/snapshot/pickle_writer.hpp"

#include <bit>

namespace mtia::mem::pickle {

namespace {
constexpr uint32_t kBatch = 1000;  // Python's pickler: APPENDS and SETITEMS of at most 1000
}

Writer::Writer(std::string& out) : out_(out) {
    op(0x80);  // PROTO 4
    op(4);
}

void Writer::le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void Writer::none() {
    op('N');
}
void Writer::boolean(bool b) {
    op(b ? 0x88 : 0x89);
}

void Writer::integer(int64_t v) {
    if (v >= 0 && v < 0x100) {
        op('K');
        le(static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 0x10000) {
        op('M');
        le(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op('J');
        le(static_cast<uint32_t>(v), 4);
    } else {  // LONG1: the fewest little-endian two's complement bytes that keep the sign
        int n = 8;
        while (n > 1) {
            const int64_t shifted = v >> (8 * (n - 1) - 1);
            if (shifted != 0 && shifted != -1) break;
            --n;
        }
        op(0x8a);
        le(static_cast<uint64_t>(n), 1);
        le(static_cast<uint64_t>(v), n);
    }
}

void Writer::unsignedInteger(uint64_t v) {
    if (v <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(v));
    op(0x8a);  // nine bytes: the eighth has its top bit set, so a zero byte keeps it positive
    le(9, 1);
    le(v, 8);
    le(0, 1);
}

void Writer::real(double v) {
    op('G');
    const uint64_t bits = std::bit_cast<uint64_t>(v);
    for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void Writer::string(std::string_view s) {
    if (auto it = strings_.find(s); it != strings_.end()) return get(it->second);
    if (s.size() < 0x100) {
        op(0x8c);  // SHORT_BINUNICODE
        le(s.size(), 1);
    } else if (s.size() <= UINT32_MAX) {
        op('X');  // BINUNICODE
        le(s.size(), 4);
    } else {
        op(0x8d);  // BINUNICODE8
        le(s.size(), 8);
    }
    out_.append(s);
    strings_.emplace(std::string(s), memoize());
}

void Writer::tuple2() {
    op(0x86);
}
void Writer::beginTuple() {
    op('(');
}  // MARK
void Writer::endTuple() {
    op('t');
}  // TUPLE

void Writer::beginList() {
    op(']');
    open_.push_back({false, 0});
}

void Writer::beginDict() {
    op('}');
    open_.push_back({true, 0});
}

void Writer::item() {
    Open& c = open_.back();
    if (c.pending == kBatch) {
        op(c.dict ? 'u' : 'e');  // SETITEMS / APPENDS
        c.pending = 0;
    }
    if (c.pending++ == 0) op('(');  // MARK
}

void Writer::end() {
    if (open_.back().pending > 0) op(open_.back().dict ? 'u' : 'e');
    open_.pop_back();
}

uint32_t Writer::memoize() {
    op(0x94);  // MEMOIZE
    return memoSize_++;
}

void Writer::get(uint32_t index) {
    if (index < 0x100) {
        op('h');  // BINGET
        le(index, 1);
    } else {
        op('j');  // LONG_BINGET
        le(index, 4);
    }
}

void Writer::finish() {
    op('.');
}

}  // namespace mtia::mem::pickle
