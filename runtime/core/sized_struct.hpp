// Output structs that may grow start with `uint32_t structSize`, set by the
// caller. The library writes at most structSize bytes, leaves structSize
// itself alone and zeroes what a newer caller expects but it does not know.
#pragma once

#include "runtime/core/error.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mtia {

// Throws InvalidValue naming argName when out is NULL or its structSize too small.
template <typename T>
void checkSized(const T* out, const char* argName) {
  requireNonNull(out, argName);
  if (out->structSize < sizeof(uint32_t))
    fail(mtiaErrorInvalidValue, "{}->structSize is {}; set it to sizeof the struct (use the _INIT macro)", argName,
         out->structSize);
}

template <typename T>
void writeSized(T* out, const T& value) {
  const size_t n = std::min<size_t>(out->structSize, sizeof(T));
  auto* dst = reinterpret_cast<char*>(out);
  std::memcpy(dst + sizeof(uint32_t), reinterpret_cast<const char*>(&value) + sizeof(uint32_t), n - sizeof(uint32_t));
  if (out->structSize > sizeof(T)) std::memset(dst + sizeof(T), 0, out->structSize - sizeof(T));
}

}  // namespace mtia
