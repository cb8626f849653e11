// Finds, loads and validates a driver (MTIA_DRIVER), and initialises it when asked to.
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
// Finds the driver, asks it for its table and validates it (validateOps), but
// does not initialise it: no device starts. What a driver offers before init
// is the 1.6 machine entries (Driver::describesMachines) and getName.
// Throws Error(InitializationError) naming MTIA_DRIVER and the reason.
std::unique_ptr<Driver> openDriver(const std::string& spec, std::span<const BuiltinDriver> builtins,
                                   const std::string& libraryDir);
// openDriver, then the driver's init. Throws Error(InitializationError).
std::unique_ptr<Driver> loadDriver(const std::string& spec, std::span<const BuiltinDriver> builtins,
                                   const std::string& libraryDir);

// The folder of the shared object this loader is linked into (libmtia.so), "" when unknown.
std::string thisLibraryDir();

// Validates the table a driver filled: refuses another major version, a size
// out of range and a missing mandatory entry; then settles each block of
// optional entries by one rule (Note [optional entries] in loader.cpp, stated
// for driver authors in mtia_driver.h): present, absent (cleared; the 1.0
// entries get "not supported" stand-ins) or, when only partly set, refused
// naming the first missing entry. Exposed for tests. Throws
// Error(InitializationError).
void validateOps(mtiaDriverOps& ops, const std::string& source);

}  // namespace mtia::driver
