// The simulated machine of this process: the configuration init read and the
// devices it describes. Created once by init and never destroyed, because
// engine threads live until the process exits and must never see it go.
#pragma once

#include "config.hpp"
#include "device.hpp"
#include "faults.hpp"
#include "handles.hpp"
#include "ipc.hpp"
#include "registry_link.hpp"

#include <mtia/mtia_types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace mtia::sim {

class Machine {
public:
    // Reads the configuration from the environment and creates the machine; later calls return the
    // first successful result. Errors: mtiaErrorInvalidValue (bad configuration; the message names
    // the variable, its value and what is accepted).
    static mtiaError_t initialize();
    // nullptr until initialize() succeeded.
    static Machine* instance() noexcept { return instance_.load(std::memory_order_acquire); }

    const Config& config() const { return config_; }
    int32_t deviceCount() const { return static_cast<int32_t>(devices_.size()); }
    // nullptr when index is out of range.
    Device* device(int32_t index) const {
        return index >= 0 && index < deviceCount() ? devices_[static_cast<size_t>(index)].get()
                                                   : nullptr;
    }
    // The device whose reserved address range holds p, or nullptr.
    Device* deviceForAddress(const void* p) const;
    FaultInjector& faults() { return faults_; }
    RegistryLink& registry() { return registry_; }
    Handles& handles() { return handles_; }
    IpcState& ipc() { return ipc_; }

private:
    explicit Machine(Config config);

    static std::atomic<Machine*> instance_;

    const Config config_;
    FaultInjector faults_;
    RegistryLink registry_;  // before the devices, whose memory charges it
    std::vector<std::unique_ptr<Device>> devices_;
    Handles handles_;
    IpcState ipc_;
};

}  // namespace mtia::sim
