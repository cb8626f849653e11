#include "platform/driver/driver.hpp"

#include "core/error.hpp"

#include <chrono>
#include <cstddef>

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
    case mtiaErrorUnknown: return true;
    default: return false;
    }
}

}  // namespace

Driver::Driver(const mtiaDriverOps& ops, std::string source)
    : ops_(ops), source_(std::move(source)), name_(ops.getName ? ops.getName() : nullptr) {
    if (name_ == nullptr) name_ = "unnamed";
}

const char* Driver::message() const noexcept {
    const char* m = ops_.lastErrorMessage();
    return m ? m : "";
}

void Driver::check(mtiaError_t status, const char* what) const {
    if (status != mtiaSuccess) raise(status, what, message());
}

void Driver::raise(mtiaError_t status, const char* what, const std::string& detail) const {
    std::string why = detail;
    if (why.empty())
        why = status == mtiaErrorNotSupported ? "not supported by this driver"
                                              : "no detail from the driver";
    // NotReady is a status, never a failure the driver may report through here.
    if (!knownStatus(status) || status == mtiaSuccess || status == mtiaErrorNotReady)
        fail(mtiaErrorDriver, "{}: driver '{}' failed with native code {}: {}", what, name_,
             static_cast<int>(status), why);
    fail(status, "{}: {}", what, why);
}

int32_t Driver::deviceCount() const {
    int32_t n = 0;
    check(ops_.deviceGetCount(&n), "counting devices");
    return n;
}

void normalizeLimits(mtiaDrvDeviceInfo& info) noexcept {
    // The launch limits were appended without a version of their own: a driver that did not fill
    // that far (or wrote 0) states none, and what a launch can carry at all stands in.
    constexpr size_t kLimitsEnd = offsetof(mtiaDrvDeviceInfo, l2CacheSize) + sizeof(uint64_t);
    const bool filled = info.structSize >= kLimitsEnd;
    if (!filled) info.l2CacheSize = 0;
    if (!filled || info.maxKernelArgs <= 0 ||
        info.maxKernelArgs > static_cast<int32_t>(MTIA_DRIVER_MAX_KERNEL_ARGS))
        info.maxKernelArgs = MTIA_DRIVER_MAX_KERNEL_ARGS;
    if (!filled || info.maxKernelBuffers <= 0 || info.maxKernelBuffers > info.maxKernelArgs)
        info.maxKernelBuffers = info.maxKernelArgs;
    if (!filled || info.maxKernelArgBytes == 0)
        info.maxKernelArgBytes = MTIA_DRIVER_MAX_KERNEL_ARG_BYTES;
}

mtiaDrvDeviceInfo Driver::deviceInfo(int32_t dev) const {
    mtiaDrvDeviceInfo info{};
    info.structSize = sizeof(info);
    check(ops_.deviceGetInfo(dev, &info), "reading device properties");
    normalizeLimits(info);
    return info;
}

mtiaError_t Driver::deviceStatus(int32_t dev, std::string* message) const {
    mtiaError_t s = ops_.deviceGetStatus(dev);
    if (s != mtiaSuccess && message != nullptr) *message = this->message();
    return s;
}

uint64_t Driver::now() const {
    uint64_t ns = 0;
    if (ops_.clockNow(&ns) == mtiaSuccess) return ns;
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

void Driver::lacks(const char* entry, const char* what) const {
    fail(mtiaErrorNotSupported,
         "{}: driver '{}' ({}) cannot describe its machine without starting it: it lacks '{}' (an "
         "optional entry "
         "of driver ABI 1.6)",
         what, name_, source_, entry);
}

mtiaDrvMachineSpec Driver::machineSpec() const {
    if (ops_.machineGetSpec == nullptr)
        lacks("machineGetSpec", "reading the machine's configuration");
    mtiaDrvMachineSpec spec{};
    spec.structSize = sizeof(spec);
    check(ops_.machineGetSpec(&spec), "reading the machine's configuration");
    return spec;
}

mtiaDrvDeviceInfo Driver::describeDevice(const mtiaDrvMachineSpec& spec, int32_t dev) const {
    if (ops_.machineDescribeDevice == nullptr)
        lacks("machineDescribeDevice", "describing a device");
    mtiaDrvDeviceInfo info{};
    info.structSize = sizeof(info);
    check(ops_.machineDescribeDevice(&spec, dev, &info), "describing a device");
    return info;
}

}  // namespace mtia::driver
