// Driver ABI 1.6: the simulated machine described without starting it, for the management library
// (mtia_ml.h). Devices are named exactly as deviceGetInfo names them, because both read
// identity.cpp. Both entries work before init and without it: they read the environment or the
// given spec only.
#include "config.hpp"
#include "identity.hpp"
#include "ops_common.hpp"

#include <algorithm>
#include <cstring>

namespace mtia::sim::ops {
namespace {

// Whether spec is one machineGetSpec could have written (another process's, read back from its
// registry, included): the bounds parseConfig enforces.
mtiaError_t configOf(const mtiaDrvMachineSpec& spec, Config& config) {
    if (spec.structSize < sizeof(mtiaDrvMachineSpec))
        return reportErrorf(mtiaErrorInvalidValue,
                            "machineDescribeDevice: spec->structSize {} is smaller than {}",
                            spec.structSize, sizeof(mtiaDrvMachineSpec));
    const size_t nameBytes = strnlen(spec.machine, sizeof spec.machine);
    if (spec.devices < 0 || spec.devices > kMaxDevices || spec.engines < 1 ||
        spec.engines > kMaxEngines || spec.memoryBytes < kMinMemory ||
        spec.memoryBytes > kMaxMemory || nameBytes > kMaxMachineNameBytes)
        return reportErrorf(mtiaErrorInvalidValue,
                            "machineDescribeDevice: no simulated machine has devices={} engines={} "
                            "memory={} and a {}-byte name",
                            spec.devices, spec.engines, spec.memoryBytes, nameBytes);
    config.devices = spec.devices;
    config.engines = spec.engines;
    config.memoryBytes = spec.memoryBytes;
    config.machine.assign(spec.machine, nameBytes);
    return mtiaSuccess;
}

}  // namespace

// Thread-safe, never blocks, starts nothing; reads MTIA_SIM_* anew. Errors: mtiaErrorInvalidValue
// (spec NULL, structSize too small, a bad MTIA_SIM_* variable: the message names it).
mtiaError_t machineGetSpec(mtiaDrvMachineSpec* spec) {
    return guarded("machineGetSpec", [&] {
        if (spec == nullptr) return nullArgument("machineGetSpec", "spec");
        if (spec->structSize < sizeof(mtiaDrvMachineSpec))
            return reportErrorf(mtiaErrorInvalidValue,
                                "machineGetSpec: spec->structSize {} is smaller than {}",
                                spec->structSize, sizeof(mtiaDrvMachineSpec));
        const ConfigResult result = configFromEnvironment();
        if (!result.config) return reportError(mtiaErrorInvalidValue, result.error);
        const Config& config = *result.config;
        // parseConfig bounds the name (kMaxMachineNameBytes) for the runtime and for mtia-smi
        // alike.
        static_assert(kMaxMachineNameBytes < sizeof spec->machine);
        mtiaDrvMachineSpec out{};
        out.structSize = sizeof(out);
        out.devices = config.devices;
        out.engines = config.engines;
        out.memoryBytes = config.memoryBytes;
        std::memcpy(out.machine, config.machine.data(), config.machine.size());
        std::memcpy(spec, &out, sizeof(out));
        return mtiaSuccess;
    });
}

// Thread-safe, starts nothing; the first call of the process loads the host topology (the devices'
// NUMA nodes). Errors: mtiaErrorInvalidValue (spec or info NULL, a spec no simulated machine has,
// info structSize below 4), mtiaErrorInvalidDevice.
mtiaError_t machineDescribeDevice(const mtiaDrvMachineSpec* spec, int32_t dev,
                                  mtiaDrvDeviceInfo* info) {
    return guarded("machineDescribeDevice", [&] {
        if (spec == nullptr) return nullArgument("machineDescribeDevice", "spec");
        if (info == nullptr) return nullArgument("machineDescribeDevice", "info");
        if (info->structSize < sizeof(uint32_t))
            return reportErrorf(mtiaErrorInvalidValue,
                                "machineDescribeDevice: info->structSize {} is too small",
                                info->structSize);
        Config config;
        if (mtiaError_t err = configOf(*spec, config); err != mtiaSuccess) return err;
        if (dev < 0 || dev >= config.devices)
            return reportErrorf(
                mtiaErrorInvalidDevice,
                "machineDescribeDevice: device {} does not exist (the machine has {} device(s))",
                dev, config.devices);
        mtiaDrvDeviceInfo full{};
        describeIdentity(config, dev, full);
        const uint32_t bytes = std::min<uint32_t>(info->structSize, sizeof(full));
        full.structSize = bytes;
        std::memcpy(info, &full, bytes);
        return mtiaSuccess;
    });
}

}  // namespace mtia::sim::ops
