// The state behind <mtia/mtia_ml.h>: the machine the environment configures,
// its devices' identity, a read-only view of its registry and the host
// topology. Machine and devices come from the driver MTIA_DRIVER names,
// through its driver ABI 1.6 entries (machineGetSpec, machineDescribeDevice:
// they equal what mtiaGetDeviceProperties reports) on a driver that is opened
// but never initialised, so nothing here starts a device or the runtime. A
// driver without them still lets mtiamlInit and the machine list work; every
// call about the machine's devices is NotSupported naming the missing entry.
//
// Thread safety: Management::with() serialises every call on one mutex;
// readers of the registry take no cross-process lock. Blocking: never waits
// for another process.
#pragma once

#include "platform/driver/driver.hpp"
#include "platform/registry/registry.hpp"
#include "platform/topology/host_topology.hpp"

#include <mtia/mtia_ml.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mtia::ml {

class Management {
public:
    // Errors (thrown as mtia::Error): InvalidValue (a bad configuration of the driver's),
    // NotPermitted, InitializationError (also: MTIA_DRIVER names no loadable driver).
    static void init();
    static void shutdown();
    // Runs fn(Management&) under the lock; InitializationError when not initialised.
    template <typename Fn>
    static auto with(Fn&& fn) {
        std::lock_guard lock(mutex());
        return fn(require());
    }

    // Every call about the machine's devices: NotSupported when the driver cannot describe its
    // machine.
    int32_t deviceCount() const;
    // InvalidDevice unless 0 <= dev < deviceCount().
    const mtiaDrvDeviceInfo& device(int32_t dev) const;
    // The machine's registry, opened read-only on first need; nullptr while no process has created
    // it.
    registry::Registry* registry();
    // Live processes with memory of dev (reserved or allocated), in slot order.
    std::vector<registry::ProcessRecord> processesOf(int32_t dev);
    // NotSupported when hwloc cannot load the host.
    const topology::HostTopology& host();
    topology::DeviceLocation location(int32_t dev) const;

    struct Utilization {
        uint32_t percent = 0;
        uint64_t busyNs = 0;
    };
    // Busy share of dev over each live process's recent window (the last one to two seconds while
    // it works; registry/busy_window.hpp), summed and capped at 100; any busy time in the window
    // shows as at least 1 %. InvalidDevice.
    Utilization utilization(int32_t dev);

    struct CleanupResult {
        std::string objectName;
        uint32_t reaped = 0;
        uint32_t live = 0;
        bool removed = false;
    };
    // Reaps dead slots of machine index (of the latest refreshMachines list; UINT32_MAX: the
    // machine read now) and removes its registry when no live process uses it. Errors: NotFound (no
    // such machine or registry), NotPermitted, InitializationError (the registry cannot be read or
    // its lock is held too long).
    CleanupResult cleanup(uint32_t index);

    // Asks the live process localPid (of the machine read now) for its memory snapshot (json: JSON,
    // else pickle) and waits up to timeoutMs for it; then calls take with the path of the private
    // file it wrote (take moves it away; the file is removed after take returns or throws, as is
    // whatever the process left for this request when anything fails). Errors: NotFound (no such
    // process on the machine), NotPermitted (a process of another user), Timeout (no answer),
    // NotSupported (the process cannot write snapshots), Unknown (it failed to write one), those of
    // take.
    void requestSnapshot(uint32_t localPid, bool json, uint32_t timeoutMs,
                         const std::function<void(const std::string& path)>& take);

    // This user's machines with a registry (registry object names), listed anew by
    // refreshMachines().
    uint32_t refreshMachines();
    // Machine index's recorded description; NotFound beyond the list, registry errors as
    // registry().
    std::string machineDescription(uint32_t index);
    // Reads machine index from now on. Errors as machineDescription, InitializationError when the
    // description cannot be parsed.
    void selectMachine(uint32_t index);

private:
    Management() = default;
    static std::mutex& mutex();
    static Management& require();
    void load();
    // Every device of spec, as the driver describes it. NotSupported without the 1.6 entries.
    std::vector<mtiaDrvDeviceInfo> describe(const mtiaDrvMachineSpec& spec) const;
    // NotSupported (naming the driver's missing entry) when the driver cannot describe machines.
    void requireMachine() const;

    std::unique_ptr<driver::Driver> driver_;  // opened, never initialised
    mtiaDrvMachineSpec spec_{};
    std::string objectName_;
    std::vector<mtiaDrvDeviceInfo> devices_;
    std::unique_ptr<registry::Registry> registry_;
    std::unique_ptr<topology::HostTopology> host_;
    std::vector<std::string> machines_;
};

}  // namespace mtia::ml
