// Output structs that may grow start with `uint32_t structSize`, set by the
// caller. The library writes at most structSize bytes, leaves structSize
// itself alone and zeroes what a newer caller expects but it does not know.
#pragma once

#include "core/error.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mtia {

// Throws InvalidValue naming argName when out is NULL or its structSize too small.
template <typename T>
void checkSized(const T* out, const char* argName) {
    requireNonNull(out, argName);
    if (out->structSize < sizeof(uint32_t))
        fail(mtiaErrorInvalidValue,
             "{}->structSize is {}; set it to sizeof the struct (use the _INIT macro)", argName,
             out->structSize);
}

template <typename T>
void writeSized(T* out, const T& value) {
    const size_t n = std::min<size_t>(out->structSize, sizeof(T));
    auto* dst = reinterpret_cast<char*>(out);
    std::memcpy(dst + sizeof(uint32_t), reinterpret_cast<const char*>(&value) + sizeof(uint32_t),
                n - sizeof(uint32_t));
    if (out->structSize > sizeof(T)) std::memset(dst + sizeof(T), 0, out->structSize - sizeof(T));
}

// Arrays of sized structs: the caller built its array with its own sizeof, which may be an older,
// smaller struct than T, so entry i lies at i * (the caller's structSize) bytes, never at
// &array[i]. The entries are reached through bytes (memcpy) because a smaller stride need not keep
// T's alignment.
class SizedArray {
public:
    // Checks an array of count entries at base whose first field is structSize: base non-NULL when
    // count > 0, entry 0's structSize at least 4 bytes, and every entry's structSize equal to entry
    // 0's (one array, one struct version). Throws InvalidValue naming argName[i] otherwise.
    SizedArray(void* base, uint32_t count, const char* argName) : base_(static_cast<char*>(base)) {
        if (count == 0) return;
        requireNonNull(base, argName);
        stride_ = sizeAt(0);
        // Bounded before entry 1 is read at that stride: a garbage size must not send the reads off
        // the array.
        if (stride_ < sizeof(uint32_t) || stride_ > kMaxStructSize)
            fail(mtiaErrorInvalidValue,
                 "{}[0].structSize is {}; set it to sizeof the struct (use the _INIT macro; at "
                 "most {} bytes)",
                 argName, stride_, kMaxStructSize);
        for (uint32_t i = 1; i < count; ++i) {
            const uint32_t size = sizeAt(i);
            if (size != stride_)
                fail(mtiaErrorInvalidValue,
                     "{}[{}].structSize is {} but {}[0].structSize is {}; every entry is one "
                     "struct of one size",
                     argName, i, size, argName, stride_);
        }
    }

    // Writes value into entry i as writeSized does: at most the caller's structSize bytes,
    // structSize kept, the tail a newer caller has beyond sizeof(T) zeroed.
    template <typename T>
    void write(uint32_t i, const T& value) const {
        char* dst = base_ + static_cast<size_t>(i) * stride_;
        const size_t n = std::min<size_t>(stride_, sizeof(T));
        std::memcpy(dst + sizeof(uint32_t),
                    reinterpret_cast<const char*>(&value) + sizeof(uint32_t), n - sizeof(uint32_t));
        if (stride_ > sizeof(T)) std::memset(dst + sizeof(T), 0, stride_ - sizeof(T));
    }

private:
    static constexpr uint32_t kMaxStructSize = 4096;  // far above any struct of the ABI
    uint32_t sizeAt(uint32_t i) const {
        uint32_t size = 0;
        std::memcpy(&size, base_ + static_cast<size_t>(i) * stride_, sizeof size);
        return size;
    }
    char* base_;
    uint32_t stride_ = 0;
};

}  // namespace mtia
