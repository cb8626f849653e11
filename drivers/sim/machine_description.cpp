// The simulated machine described without starting it, for the management library (mtia_ml.h):
// it must name the devices exactly as deviceGetInfo does, so both read identity.cpp.
#include "config.hpp"
#include "identity.hpp"
#include "sim_driver.h"

#include <cstdio>
#include <cstring>
#include <exception>

namespace {

void writeError(char* error, size_t errorSize, const char* text) {
  if (error != nullptr && errorSize > 0) std::snprintf(error, errorSize, "%s", text);
}

mtia::sim::Config configOf(const mtiaSimMachineSpec& spec) {
  mtia::sim::Config config;
  config.devices = spec.devices;
  config.engines = spec.engines;
  config.memoryBytes = spec.memoryBytes;
  config.machine.assign(spec.machine, strnlen(spec.machine, sizeof spec.machine));
  return config;
}

}  // namespace

extern "C" mtiaError_t mtiaSimMachineFromEnvironment(mtiaSimMachineSpec* spec, char* error, size_t errorSize) {
  if (spec == nullptr) {
    writeError(error, errorSize, "spec is NULL");
    return mtiaErrorInvalidValue;
  }
  try {
    const mtia::sim::ConfigResult result = mtia::sim::configFromEnvironment();
    if (!result.config) {
      writeError(error, errorSize, result.error.c_str());
      return mtiaErrorInvalidValue;
    }
    const mtia::sim::Config& config = *result.config;
    // parseConfig bounds the name (kMaxMachineNameBytes) for the runtime and for mtia-smi alike.
    static_assert(mtia::sim::kMaxMachineNameBytes < sizeof spec->machine);
    *spec = mtiaSimMachineSpec{};
    spec->devices = config.devices;
    spec->engines = config.engines;
    spec->memoryBytes = config.memoryBytes;
    std::memcpy(spec->machine, config.machine.data(), config.machine.size());
    return mtiaSuccess;
  } catch (const std::exception& e) {
    writeError(error, errorSize, e.what());
    return mtiaErrorUnknown;
  }
}

extern "C" mtiaError_t mtiaSimDescribeDevice(const mtiaSimMachineSpec* spec, int32_t index, mtiaDrvDeviceInfo* info) {
  if (spec == nullptr || info == nullptr) return mtiaErrorInvalidValue;
  if (index < 0 || index >= spec->devices) return mtiaErrorInvalidDevice;
  try {
    mtia::sim::describeIdentity(configOf(*spec), index, *info);
    return mtiaSuccess;
  } catch (const std::exception&) {
    return mtiaErrorUnknown;
  }
}
