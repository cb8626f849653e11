// The drivers linked into libmtia.so, for openDriver and loadDriver. The entry
// is declared here, with the ABI's own getter type, so that nothing above the
// driver ABI includes a driver's headers (tools/check_layering.py);
// drivers/sim/ops.cpp defines it and checks its type against the same one.
#pragma once

#include "platform/driver/loader.hpp"

#include <mtia/mtia_driver.h>

#include <type_traits>

extern "C" __attribute__((visibility("hidden"))) std::remove_pointer_t<mtiaDriverGetOpsFn>
    mtiaSimDriverGetOps;

namespace mtia::driver {

inline constexpr BuiltinDriver kBuiltinDrivers[] = {{"sim", mtiaSimDriverGetOps}};

}  // namespace mtia::driver
