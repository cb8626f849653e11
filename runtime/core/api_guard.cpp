#include "runtime/core/api_guard.hpp"

#include <fmt/format.h>

#include <atomic>

namespace mtia {
namespace {
thread_local bool tlsInDeviceCallback = false;
std::atomic<int32_t (*)()> gDeviceThreadProbe{nullptr};
}  // namespace

bool inDeviceCallback() noexcept {
  if (tlsInDeviceCallback) return true;
  int32_t (*probe)() = gDeviceThreadProbe.load(std::memory_order_acquire);
  return probe != nullptr && probe() != 0;
}

void setDeviceThreadProbe(int32_t (*probe)()) noexcept { gDeviceThreadProbe.store(probe, std::memory_order_release); }

DeviceCallbackScope::DeviceCallbackScope() noexcept : previous_(tlsInDeviceCallback) { tlsInDeviceCallback = true; }

DeviceCallbackScope::~DeviceCallbackScope() { tlsInDeviceCallback = previous_; }

void recordFailure(const char* call, mtiaError_t code, const char* detail) noexcept {
  try {
    setLastErrorMessage(fmt::format("{}: {} ({})", call, detail, errorName(code)));
  } catch (...) {
    setLastErrorMessage({});
  }
}

}  // namespace mtia
