// The thread-local "last error" of the driver: every failing entry stores a
// sentence for lastErrorMessage() next to the status code it returns.
#pragma once

#include <mtia/mtia_types.h>

#include <fmt/format.h>

#include <string>
#include <utility>

namespace mtia::sim {

// Records message for the calling thread and returns code, so entries can `return fail(...)`.
mtiaError_t fail(mtiaError_t code, std::string message);

template <class... Args>
mtiaError_t failf(mtiaError_t code, fmt::format_string<Args...> format, Args&&... args) {
  return fail(code, fmt::format(format, std::forward<Args>(args)...));
}

// The calling thread's last message; "" before the first failure. Never NULL.
const char* lastErrorMessage() noexcept;

}  // namespace mtia::sim
