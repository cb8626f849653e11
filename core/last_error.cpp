#include "core/last_error.hpp"

#include <cstring>

namespace mtia {
namespace {

// A plain buffer, not a std::string: the main thread's thread-locals are destroyed when exit()
// starts, before atexit handlers and static destructors, which may still call the runtime (a
// framework's allocator freeing memory at exit); trivially destructible storage stays usable then.
constexpr size_t kMessageBytes = 2048;
thread_local char tlsMessage[kMessageBytes];

}  // namespace

void setLastErrorMessage(std::string message) noexcept {
    size_t n = message.size();
    if (n >= kMessageBytes) {
        static constexpr char kCut[] = " [...]";
        n = kMessageBytes - sizeof(kCut);
        std::memcpy(tlsMessage, message.data(), n);
        std::memcpy(tlsMessage + n, kCut, sizeof(kCut));  // includes the NUL
        return;
    }
    std::memcpy(tlsMessage, message.data(), n);
    tlsMessage[n] = '\0';
}

const char* lastErrorMessage() noexcept {
    return tlsMessage;
}

}  // namespace mtia
