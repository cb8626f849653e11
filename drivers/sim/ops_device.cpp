// Entries about the driver and its devices.
#include "clock.hpp"
#include "ops_common.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace mtia::sim::ops {

// Not thread-safe with other entries (the runtime calls it once, first); repeated calls return
// mtiaSuccess once it succeeded. Does not block. Errors: mtiaErrorInvalidValue (flags not 0, or a
// bad MTIA_SIM_* variable).
mtiaError_t init(uint32_t flags) {
    return guarded("init", [&] {
        if (flags != 0)
            return reportErrorf(mtiaErrorInvalidValue, "init: flags must be 0, got {:#x}", flags);
        return Machine::initialize();
    });
}

// Thread-safe, static string, works before init.
const char* getName() {
    return "sim";
}

// Thread-safe, does not block, starts nothing. Errors: mtiaErrorInvalidValue (count NULL).
mtiaError_t deviceGetCount(int32_t* count) {
    return guarded("deviceGetCount", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("deviceGetCount", machine); err != mtiaSuccess) return err;
        if (count == nullptr) return nullArgument("deviceGetCount", "count");
        *count = machine->deviceCount();
        return mtiaSuccess;
    });
}

// Thread-safe; the first call per device reserves its address range and the first call of the
// process loads the host topology (milliseconds). Writes at most info->structSize bytes and sets
// structSize to the bytes written. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (info NULL
// or structSize < 4), mtiaErrorMemoryAllocation (no address space for the device's range).
mtiaError_t deviceGetInfo(int32_t dev, mtiaDrvDeviceInfo* info) {
    return guarded("deviceGetInfo", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("deviceGetInfo", dev, device); err != mtiaSuccess)
            return err;
        if (info == nullptr) return nullArgument("deviceGetInfo", "info");
        if (info->structSize < sizeof(uint32_t)) {
            return reportErrorf(mtiaErrorInvalidValue,
                                "deviceGetInfo: info->structSize {} is too small",
                                info->structSize);
        }
        mtiaDrvDeviceInfo full{};
        if (mtiaError_t err = device->describe(full); err != mtiaSuccess) return err;
        const uint32_t bytes = std::min<uint32_t>(info->structSize, sizeof(full));
        full.structSize = bytes;
        std::memcpy(info, &full, bytes);
        return mtiaSuccess;
    });
}

// Thread-safe, does not block. Errors: mtiaErrorInvalidDevice, the sticky fault's code
// (mtiaErrorIllegalAddress: a kernel's memory fault; mtiaErrorLaunchFailure: any other fault; the
// message names the kernel or command and what went wrong).
mtiaError_t deviceGetStatus(int32_t dev) {
    return guarded("deviceGetStatus", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("deviceGetStatus", dev, device); err != mtiaSuccess)
            return err;
        return device->status();
    });
}

// Thread-safe, does not block: the device's fault word (Device::faultWord), valid while the driver
// is loaded. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (word NULL).
mtiaError_t deviceGetFaultWord(int32_t dev, const uint32_t** word) {
    return guarded("deviceGetFaultWord", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("deviceGetFaultWord", dev, device); err != mtiaSuccess)
            return err;
        if (word == nullptr) return nullArgument("deviceGetFaultWord", "word");
        *word = device->faultWord();
        return mtiaSuccess;
    });
}

// Thread-safe; blocks until every command submitted to the device before the call completed (queues
// destroyed meanwhile included). Errors: mtiaErrorInvalidDevice, mtiaErrorNotPermitted (called by a
// host function of this device with work pending: it would wait for itself), the sticky fault's
// code (mtiaErrorLaunchFailure or mtiaErrorIllegalAddress).
mtiaError_t deviceSynchronize(int32_t dev) {
    return guarded("deviceSynchronize", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("deviceSynchronize", dev, device); err != mtiaSuccess)
            return err;
        const std::vector<std::shared_ptr<Queue>> queues = device->queues();
        for (const std::shared_ptr<Queue>& queue : queues) {
            const uint64_t target = queue->submitted();
            if (queue->completed() >= target) continue;
            if (waitWouldBlockEngine(*device)) {
                return reportErrorf(mtiaErrorNotPermitted,
                                    "deviceSynchronize: called from a host function of device {} "
                                    "while its work is pending",
                                    dev);
            }
            queue->waitFor(target, true);
        }
        return device->status();
    });
}

// Thread-safe; blocks until every command submitted to the device completed (a faulted device runs
// nothing, so its queues drain at once; kernels and host functions running now are waited for),
// then clears the sticky fault and the device's peer access. Errors: mtiaErrorInvalidDevice,
// mtiaErrorNotPermitted (called from an engine thread: it could wait for itself).
mtiaError_t deviceReset(int32_t dev) {
    return guarded("deviceReset", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("deviceReset", dev, device); err != mtiaSuccess) return err;
        if (Scheduler::onEngineThread())
            return reportErrorf(mtiaErrorNotPermitted,
                                "deviceReset: called from a kernel or host function (device {})",
                                dev);
        device->reset();
        return mtiaSuccess;
    });
}

// Thread-safe (per-thread message), works before init.
const char* lastError() {
    return lastErrorMessage();
}

// Thread-safe, works before init. Errors: mtiaErrorInvalidValue (ns NULL).
mtiaError_t clockNow(uint64_t* ns) {
    if (ns == nullptr) return nullArgument("clockNow", "ns");
    *ns = monotonicNs();
    return mtiaSuccess;
}

// Thread-safe; takes effect for kernels that start afterwards. Errors: mtiaErrorInvalidDevice
// (either device, or dev == peer), mtiaErrorInvalidValue (enable not 0 or 1).
mtiaError_t deviceSetPeerAccess(int32_t dev, int32_t peer, int32_t enable) {
    return guarded("deviceSetPeerAccess", [&] {
        Device* device = nullptr;
        Device* other = nullptr;
        if (mtiaError_t err = deviceFor("deviceSetPeerAccess", dev, device); err != mtiaSuccess)
            return err;
        if (mtiaError_t err = deviceFor("deviceSetPeerAccess", peer, other); err != mtiaSuccess)
            return err;
        if (dev == peer)
            return reportErrorf(mtiaErrorInvalidDevice,
                                "deviceSetPeerAccess: device {} cannot be its own peer", dev);
        if (enable != 0 && enable != 1) {
            return reportErrorf(mtiaErrorInvalidValue,
                                "deviceSetPeerAccess: enable must be 0 or 1, got {}", enable);
        }
        device->setPeerAccess(peer, enable == 1);
        return mtiaSuccess;
    });
}

// Thread-safe, lock-free: 1 on engine threads (which run kernels and host functions), else 0.
int32_t isDriverThread() {
    return Scheduler::onEngineThread() ? 1 : 0;
}

}  // namespace mtia::sim::ops
