#include "runtime/driver/driver.hpp"

#include "runtime/core/error.hpp"

#include <chrono>

namespace mtia::driver {
namespace {

bool knownStatus(mtiaError_t s) {
  switch (s) {
    case mtiaSuccess:
    case mtiaErrorInvalidValue:
    case mtiaErrorMemoryAllocation:
    case mtiaErrorInitializationError:
    case mtiaErrorNoDevice:
    case mtiaErrorInvalidDevice:
    case mtiaErrorInvalidHandle:
    case mtiaErrorIllegalState:
    case mtiaErrorNotFound:
    case mtiaErrorNotReady:
    case mtiaErrorIllegalAddress:
    case mtiaErrorLaunchFailure:
    case mtiaErrorNotPermitted:
    case mtiaErrorNotSupported:
    case mtiaErrorDriver:
    case mtiaErrorUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace

Driver::Driver(const mtiaDriverOps& ops, std::string source)
    : ops_(ops), source_(std::move(source)), name_(ops.getName ? ops.getName() : nullptr) {
  if (name_ == nullptr) name_ = "unnamed";
}

void Driver::check(mtiaError_t status, const char* what) const {
  if (status == mtiaSuccess) return;
  const char* detail = ops_.lastErrorMessage();
  if (detail == nullptr || *detail == '\0')
    detail = status == mtiaErrorNotSupported ? "not supported by this driver" : "no detail from the driver";
  if (!knownStatus(status))
    fail(mtiaErrorDriver, "{}: driver '{}' failed with native code {}: {}", what, name_, static_cast<int>(status), detail);
  fail(status, "{}: {}", what, detail);
}

int32_t Driver::deviceCount() const {
  int32_t n = 0;
  check(ops_.deviceGetCount(&n), "counting devices");
  return n;
}

mtiaDrvDeviceInfo Driver::deviceInfo(int32_t dev) const {
  mtiaDrvDeviceInfo info{};
  info.structSize = sizeof(info);
  check(ops_.deviceGetInfo(dev, &info), "reading device properties");
  return info;
}

mtiaError_t Driver::deviceStatus(int32_t dev, std::string* message) const {
  mtiaError_t s = ops_.deviceGetStatus(dev);
  if (s != mtiaSuccess && message != nullptr) {
    const char* detail = ops_.lastErrorMessage();
    *message = detail ? detail : "";
  }
  return s;
}

uint64_t Driver::now() const {
  uint64_t ns = 0;
  if (ops_.clockNow(&ns) == mtiaSuccess) return ns;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace mtia::driver
