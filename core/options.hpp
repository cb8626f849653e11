// The runtime's own environment settings, read once at initialisation.
#pragma once

#include "core/env.hpp"
#include "core/log.hpp"

#include <optional>
#include <string>
#include <vector>

namespace mtia {

struct RuntimeOptions {
    LogLevel logLevel = LogLevel::Warn;  // MTIA_LOG_LEVEL
    std::string driver;                  // MTIA_DRIVER: "" = built-in sim, a name, or a path
    std::optional<std::vector<int>>
        visibleDevices;  // MTIA_VISIBLE_DEVICES: driver ordinals, in order
    // MTIA_OOM_SNAPSHOT: where an out-of-memory error writes a memory snapshot first, while history
    // is recorded ("" = nowhere); JSON when the name ends in .json, else a pickle.
    std::string oomSnapshot;
};

// Throws Error(InvalidValue) naming the variable on a bad value.
RuntimeOptions readRuntimeOptions(const EnvLookup& env);

}  // namespace mtia
