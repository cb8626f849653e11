// Error functions: never fail, never initialise the runtime.
#include "runtime/core/error.hpp"
#include "runtime/core/last_error.hpp"

#include <mtia/mtia.h>

extern "C" {

MTIA_API const char* mtiaGetErrorName(mtiaError_t error) { return mtia::errorName(error); }

MTIA_API const char* mtiaGetErrorString(mtiaError_t error) { return mtia::errorString(error); }

MTIA_API const char* mtiaGetLastErrorMessage(void) { return mtia::lastErrorMessage(); }

}  // extern "C"
