// Writes pickles that Python's pickle.load and PyTorch's memory viewer
// (MemoryViz.js) both read: protocol 4 with only the opcodes of the
// reference notes 4.5 (no FRAME: framing is optional), containers filled in
// batches of 1000 as Python's pickler does, repeated strings memoized once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mtia::mem::pickle {

class Writer {
public:
    explicit Writer(std::string& out);

    void none();
    void boolean(bool b);
    void integer(int64_t v);
    void unsignedInteger(uint64_t v);
    void real(double v);
    void string(std::string_view s);  // UTF-8
    void tuple2();                    // the last two values written become a tuple
    // A tuple of any length: its values are written between the two (no item() calls).
    void beginTuple();
    void endTuple();

    // A list's items or a dict's keys and values follow begin*; item() comes before each list item
    // and each dict key.
    void beginList();
    void beginDict();
    void item();
    void end();

    // The last value written, stored for get(); returns its memo index.
    uint32_t memoize();
    void get(uint32_t index);

    void finish();  // STOP: the pickle is complete

private:
    void op(uint8_t code) { out_.push_back(static_cast<char>(code)); }
    void le(uint64_t v, int bytes);

    struct Open {
        bool dict;
        uint32_t pending;  // items since the last MARK
    };
    std::string& out_;
    std::vector<Open> open_;
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> strings_;
    uint32_t memoSize_ = 0;
};

}  // namespace mtia::mem::pickle
