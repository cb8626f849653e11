// Names of a simulated device that must be stable across processes: every
// process configured like this one sees the same uuid and PCI bus id for the
// same index, which is what ties them to one simulated machine.
#pragma once

#include "config.hpp"

#include <mtia/mtia_driver.h>

#include <array>
#include <cstdint>
#include <string>

namespace mtia::sim {

std::array<uint8_t, 16> deviceUuid(const Config& config, int32_t index);

inline constexpr int32_t kFirstPciBus = 0x10;
inline int32_t devicePciBus(int32_t index) {
    return kFirstPciBus + index;
}
std::string devicePciBusId(int32_t index);

// Everything deviceGetInfo reports that needs no started device (all but vaBase and vaSize): the
// one place the driver and the management library take a device's identity from.
void describeIdentity(const Config& config, int32_t index, mtiaDrvDeviceInfo& info);

}  // namespace mtia::sim
