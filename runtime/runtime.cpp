#include "runtime/runtime.hpp"

#include "runtime/core/api_guard.hpp"
#include "runtime/core/error.hpp"
#include "runtime/core/log.hpp"
#include "runtime/driver/loader.hpp"
#include "runtime/sim/sim_driver.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace mtia {
namespace {

std::once_flag gInitOnce;
Runtime* gRuntime = nullptr;  // intentionally never destroyed: driver threads may outlive static destruction
std::string gInitFailure;

// The folder of libmtia.so, where installed drivers live under mtia/.
std::string libraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&libraryDir), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash);
}

template <typename H>
H toHandle(uint64_t v) {
  return reinterpret_cast<H>(static_cast<uintptr_t>(v));
}

}  // namespace

int& currentDeviceOrdinal() noexcept {
  thread_local int current = 0;
  return current;
}

Runtime::Runtime() {
  options_ = readRuntimeOptions(processEnv());
  setLogLevel(options_.logLevel);
  static constexpr driver::BuiltinDriver kBuiltins[] = {{"sim", mtiaSimDriverGetOps}};
  driver_ = driver::loadDriver(options_.driver, kBuiltins, libraryDir());
  const int32_t driverCount = driver_->deviceCount();
  std::vector<int> ordinals;
  if (options_.visibleDevices) {
    for (int d : *options_.visibleDevices)
      if (d >= driverCount)
        fail(mtiaErrorInitializationError, "MTIA_VISIBLE_DEVICES lists device {}, but driver '{}' has {} device(s)", d,
             driver_->name(), driverCount);
    ordinals = *options_.visibleDevices;
  } else {
    for (int d = 0; d < driverCount; ++d) ordinals.push_back(d);
  }
  for (size_t i = 0; i < ordinals.size(); ++i)
    devices_.push_back(std::make_unique<Device>(*driver_, static_cast<int>(i), ordinals[i]));
  defaultStreamHandles_.assign(devices_.size(), 0);
  kernels_.attach(driver_.get());
  setDeviceThreadProbe(driver_->ops().isDriverThread);
}

Runtime& Runtime::instance() {
  std::call_once(gInitOnce, [] {
    try {
      gRuntime = new Runtime();
    } catch (const std::exception& e) {
      gInitFailure = e.what();
      log(LogLevel::Error, "initialisation failed: {}", gInitFailure);
    }
  });
  if (gRuntime == nullptr) throw Error(mtiaErrorInitializationError, "the runtime failed to initialise: " + gInitFailure);
  return *gRuntime;
}

Runtime* Runtime::tryInstance() noexcept {
  try {
    return &instance();
  } catch (...) {
    return nullptr;
  }
}

Device& Runtime::device(int ordinal, const char* argName) {
  if (devices_.empty()) fail(mtiaErrorNoDevice, "no device is available (driver '{}')", driver_->name());
  if (ordinal < 0 || ordinal >= deviceCount())
    fail(mtiaErrorInvalidDevice, "{} is {}; valid devices are 0 to {}", argName, ordinal, deviceCount() - 1);
  return *devices_[static_cast<size_t>(ordinal)];
}

Device& Runtime::currentDevice() { return device(currentDeviceOrdinal(), "the current device"); }

std::shared_ptr<streams::Stream> Runtime::defaultStream(Device& dev) {
  std::shared_ptr<streams::Stream> s = dev.defaultStreamShared();
  std::lock_guard lock(defaultStreamsMu_);
  uint64_t& h = defaultStreamHandles_[static_cast<size_t>(dev.ordinal())];
  if (h == 0) h = streams_.insert(s);
  return s;
}

mtiaStream_t Runtime::defaultStreamHandle(Device& dev) {
  defaultStream(dev);
  std::lock_guard lock(defaultStreamsMu_);
  return toHandle<mtiaStream_t>(defaultStreamHandles_[static_cast<size_t>(dev.ordinal())]);
}

std::shared_ptr<streams::Stream> Runtime::stream(mtiaStream_t handle, const char* argName) {
  if (handle == nullptr) return defaultStream(currentDevice());
  std::shared_ptr<streams::Stream> s = streams_.lookup(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)));
  if (!s) fail(mtiaErrorInvalidHandle, "{} {} is not a live stream (stale, destroyed or foreign)", argName, fmt::ptr(handle));
  return s;
}

}  // namespace mtia
