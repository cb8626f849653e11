// One reading of the machine through <mtia/mtia_ml.h>: every device and every
// process holding device memory. Views format samples; they never call the
// library themselves, except topo (hwloc) in topology_view.cpp.
#pragma once

#include <mtia/mtia_ml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mtia::smi {

struct DeviceSample {
    mtiamlDeviceInfo info = MTIAML_DEVICE_INFO_INIT;
    std::optional<uint32_t> utilization;  // percent; empty when the device does not report it
};

struct ProcessSample {
    int32_t device = 0;
    mtiamlProcessInfo info = MTIAML_PROCESS_INFO_INIT;
};

struct MachineSample {
    std::vector<DeviceSample> devices;
    std::vector<ProcessSample> processes;  // by device, then registry slot
    uint64_t timeMs = 0;                   // wall clock, ms since the epoch
};

// Throws SmiError. The library must be initialised (ManagementSession).
MachineSample takeSample();

// "MTIA-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
std::string uuidText(const uint8_t (&uuid)[16]);
uint64_t toMiB(uint64_t bytes);

// mtiamlInit for the life of the object.
class ManagementSession {
public:
    ManagementSession();
    ~ManagementSession();
    ManagementSession(const ManagementSession&) = delete;
    ManagementSession& operator=(const ManagementSession&) = delete;
};

}  // namespace mtia::smi
