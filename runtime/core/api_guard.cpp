#include "runtime/core/api_guard.hpp"

#include <fmt/format.h>

namespace mtia {
namespace {
thread_local bool tlsInDeviceCallback = false;
}

bool inDeviceCallback() noexcept { return tlsInDeviceCallback; }

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
