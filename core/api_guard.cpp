#include "core/api_guard.hpp"

#include <fmt/format.h>

#include <atomic>

namespace mtia {
namespace {
std::atomic<int32_t (*)()> gDeviceThreadProbe{nullptr};
}  // namespace

bool detail::askDriverThread(ThreadState& t) noexcept {
    int32_t (*probe)() = gDeviceThreadProbe.load(std::memory_order_acquire);
    if (probe == nullptr) return false;
    t.driverThread = probe() != 0 ? 1 : 0;
    return t.driverThread != 0;
}

void setDeviceThreadProbe(int32_t (*probe)()) noexcept {
    gDeviceThreadProbe.store(probe, std::memory_order_release);
}

DeviceCallbackScope::DeviceCallbackScope() noexcept : previous_(detail::tlsState.inCallback) {
    detail::tlsState.inCallback = true;
}

DeviceCallbackScope::~DeviceCallbackScope() {
    detail::tlsState.inCallback = previous_;
}

void recordFailure(const char* call, mtiaError_t code, const char* detail) noexcept {
    try {
        setLastErrorMessage(fmt::format("{}: {} ({})", call, detail, errorName(code)));
    } catch (...) {
        setLastErrorMessage({});
    }
}

}  // namespace mtia
