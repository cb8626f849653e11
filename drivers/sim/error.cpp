#include "error.hpp"

#include <cstring>

namespace mtia::sim {
namespace {

// Trivially destructible: the driver is still called after the main thread's thread-locals were
// destroyed (the runtime drains devices from an atexit handler).
constexpr size_t kMessageBytes = 2048;
thread_local char tLastError[kMessageBytes];

}  // namespace

mtiaError_t reportError(mtiaError_t code, std::string message) {
    const size_t n = message.size() < kMessageBytes ? message.size() : kMessageBytes - 1;
    std::memcpy(tLastError, message.data(), n);
    tLastError[n] = '\0';
    return code;
}

const char* lastErrorMessage() noexcept {
    return tLastError;
}

}  // namespace mtia::sim
