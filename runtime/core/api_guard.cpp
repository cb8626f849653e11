#include "runtime/core/api_guard.hpp"

#include <fmt/format.h>

#include <atomic>

namespace mtia {
namespace {
// One thread-local block, so the check every ABI call makes costs one TLS lookup. Whether a thread is
// one of the driver's own never changes during its life, so the driver is asked once per thread
// (once the probe is known).
struct ThreadState {
  bool inCallback = false;
  int8_t driverThread = -1;  // -1: not asked yet
};
thread_local ThreadState tlsState;
std::atomic<int32_t (*)()> gDeviceThreadProbe{nullptr};
}  // namespace

bool inDeviceCallback() noexcept {
  ThreadState& t = tlsState;
  if (t.inCallback) return true;
  if (t.driverThread < 0) {
    int32_t (*probe)() = gDeviceThreadProbe.load(std::memory_order_acquire);
    if (probe == nullptr) return false;
    t.driverThread = probe() != 0 ? 1 : 0;
  }
  return t.driverThread != 0;
}

void setDeviceThreadProbe(int32_t (*probe)()) noexcept { gDeviceThreadProbe.store(probe, std::memory_order_release); }

DeviceCallbackScope::DeviceCallbackScope() noexcept : previous_(tlsState.inCallback) { tlsState.inCallback = true; }

DeviceCallbackScope::~DeviceCallbackScope() { tlsState.inCallback = previous_; }

void recordFailure(const char* call, mtiaError_t code, const char* detail) noexcept {
  try {
    setLastErrorMessage(fmt::format("{}: {} ({})", call, detail, errorName(code)));
  } catch (...) {
    setLastErrorMessage({});
  }
}

}  // namespace mtia
