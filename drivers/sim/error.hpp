// The thread-local "last error" of the driver: every failing entry stores a
// sentence for lastErrorMessage() next to the status code it returns.
#pragma once

#include <mtia/mtia_types.h>

#include <fmt/format.h>

#include <string>
#include <utility>

namespace mtia::sim {

// Records message for the calling thread and returns code, so entries can `return
// reportError(...)`. The sim's error idiom: a driver entry returns its status and never throws
// across the driver ABI. (Above the driver ABI the idiom is mtia::fail in core/error.hpp, which
// throws mtia::Error; the distinct names keep the two apart.)
mtiaError_t reportError(mtiaError_t code, std::string message);

template <class... Args>
mtiaError_t reportErrorf(mtiaError_t code, fmt::format_string<Args...> format, Args&&... args) {
    return reportError(code, fmt::format(format, std::forward<Args>(args)...));
}

// The calling thread's last message; "" before the first failure. Never NULL.
const char* lastErrorMessage() noexcept;

}  // namespace mtia::sim
