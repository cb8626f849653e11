// Finds, loads and validates a driver (MTIA_DRIVER), then initialises it.
#pragma once

#include "platform/driver/driver.hpp"

#include <memory>
#include <span>
#include <string>

namespace mtia::driver {

// A driver linked into the library (the simulated device).
struct BuiltinDriver {
  const char* name;
  mtiaDriverGetOpsFn getOps;
};

// spec: "" picks builtins[0]; a built-in's name picks it; a string with a '/'
// is a path to a shared object; any other name N loads "mtia_driver_N.so"
// from the library's driver folder or the dynamic loader's search path.
// libraryDir is the folder holding libmtia.so ("" when unknown).
// Throws Error(InitializationError) naming MTIA_DRIVER and the reason.
std::unique_ptr<Driver> loadDriver(const std::string& spec, std::span<const BuiltinDriver> builtins,
                                   const std::string& libraryDir);

// Validates the table a driver filled and fills its missing optional entries
// with "not supported" (queueGetCounts and the command list pair excepted:
// they stay NULL; a table with only one of the pair is refused). Exposed for
// tests. Throws Error(InitializationError).
void validateOps(mtiaDriverOps& ops, const std::string& source);

}  // namespace mtia::driver
