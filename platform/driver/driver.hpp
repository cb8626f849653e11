// The C++ view of a loaded driver: the one choke point through which the
// runtime touches a device. Every call checks the driver's status and turns
// failures into Error with the driver's own message attached.
#pragma once

#include <mtia/mtia_driver.h>

#include <string>

namespace mtia::driver {

// Fills the launch limits a driver did not state (its filled structSize does not reach them, or
// they are 0 or out of range) with what any launch can carry (MTIA_DRIVER_MAX_KERNEL_ARGS,
// MTIA_DRIVER_MAX_KERNEL_ARG_BYTES), and l2CacheSize with 0 (unknown).
void normalizeLimits(mtiaDrvDeviceInfo& info) noexcept;

class Driver {
public:
    // ops must be validated and complete (loader.hpp). source says where the
    // driver came from ("built-in sim", a path) for messages.
    Driver(const mtiaDriverOps& ops, std::string source);

    const mtiaDriverOps& ops() const noexcept { return ops_; }
    const char* name() const noexcept { return name_; }
    const std::string& source() const noexcept { return source_; }
    // Whether the driver reports its queues' submission counts (ops().queueGetCounts is set).
    bool countsQueues() const noexcept { return ops_.queueGetCounts != nullptr; }
    // Whether the driver validates kernel launches itself (driver ABI 1.1 and later; see
    // queueSubmit).
    bool validatesLaunches() const noexcept { return MTIA_DRIVER_API_MINOR(ops_.version) >= 1; }
    // Whether the driver runs command lists (driver ABI 1.2: ops().commandListCreate and
    // commandListDestroy are set, and queueSubmit takes mtiaDrvCmdList commands).
    bool supportsCommandLists() const noexcept { return ops_.commandListCreate != nullptr; }
    // Whether the driver shares memory and events between processes (driver ABI 1.4: the ipc*
    // entries are set; the loader makes sure it is all or none).
    bool supportsIpc() const noexcept { return ops_.ipcMemExport != nullptr; }
    // Whether the driver describes its machine without being initialised (driver ABI 1.6:
    // machineGetSpec and machineDescribeDevice are set), as the management library needs.
    bool describesMachines() const noexcept { return ops_.machineGetSpec != nullptr; }

    // Throws Error(status, "<what>: <driver message>") unless status is success.
    // Codes the ABI does not know become mtiaErrorDriver with the native code.
    void check(mtiaError_t status, const char* what) const;
    // Like check(), with a message captured earlier (before cleanup calls that
    // may have replaced the driver's thread-local message).
    [[noreturn]] void raise(mtiaError_t status, const char* what, const std::string& detail) const;
    // The driver's message for this thread's last failed call; never NULL.
    const char* message() const noexcept;

    int32_t deviceCount() const;
    // The device's info; its launch limits always set (normalizeLimits).
    mtiaDrvDeviceInfo deviceInfo(int32_t dev) const;
    // The device's sticky fault as a status (mtiaSuccess when healthy), with
    // the driver's explanation in *message when it is not.
    mtiaError_t deviceStatus(int32_t dev, std::string* message) const;
    uint64_t now() const;

    // The driver ABI 1.6 entries; both work before init. Without them: Error(NotSupported) naming
    // the missing entry and the driver. Otherwise as check(): InvalidValue for a bad configuration
    // (the driver's message names it), InvalidDevice.
    mtiaDrvMachineSpec machineSpec() const;
    mtiaDrvDeviceInfo describeDevice(const mtiaDrvMachineSpec& spec, int32_t dev) const;

private:
    mtiaDriverOps ops_;
    std::string source_;
    const char* name_;

    [[noreturn]] void lacks(const char* entry, const char* what) const;
};

}  // namespace mtia::driver
