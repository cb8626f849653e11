// Error functions: never fail, never initialise the runtime.
#include "core/error.hpp"
#include "core/last_error.hpp"

#include <mtia/mtia.h>

extern "C" {

MTIA_API const char* mtiaGetErrorName(mtiaError_t error) {
    return mtia::errorName(error);
}

MTIA_API const char* mtiaGetErrorString(mtiaError_t error) {
    return mtia::errorString(error);
}

MTIA_API const char* mtiaGetLastErrorMessage(void) {
    return mtia::lastErrorMessage();
}

}  // extern "C"
