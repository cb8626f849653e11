// Errors inside the runtime are exceptions carrying an mtiaError_t; the C ABI
// boundary (api_guard.hpp) turns them back into status codes and messages.
#pragma once

#include <mtia/mtia_types.h>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace mtia {

class Error : public std::runtime_error {
public:
    Error(mtiaError_t code, std::string message)
        : std::runtime_error(std::move(message)), code_(code) {}
    mtiaError_t code() const noexcept { return code_; }

private:
    mtiaError_t code_;
};

// Throws Error(code, formatted message). The message names the argument and
// what was expected; the ABI guard prefixes the name of the call.
template <typename... Args>
[[noreturn]] void fail(mtiaError_t code, fmt::format_string<Args...> format, Args&&... args) {
    throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

// Throws InvalidValue when ptr is NULL: "<name> is NULL".
template <typename T>
void requireNonNull(const T* ptr, const char* name) {
    if (ptr == nullptr) fail(mtiaErrorInvalidValue, "{} is NULL", name);
}

// The integer a C caller passed for an enum parameter. C allows any int in an
// enum; reading such a value as the C++ enum would be undefined, so ABI
// entry points inspect the bytes instead and validate the range themselves.
template <typename E>
int enumBits(const E& value) noexcept {
    static_assert(sizeof(E) == sizeof(int));
    int bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

const char* errorName(mtiaError_t code) noexcept;
const char* errorString(mtiaError_t code) noexcept;

}  // namespace mtia
