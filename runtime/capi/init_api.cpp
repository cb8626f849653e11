#include "core/api_guard.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

using mtia::apiCall;
using mtia::fail;
using mtia::Runtime;

extern "C" {

MTIA_API mtiaError_t mtiaRuntimeGetVersion(int* major, int* minor, int* patch) {
    if (major) *major = MTIA_VERSION_MAJOR;
    if (minor) *minor = MTIA_VERSION_MINOR;
    if (patch) *patch = MTIA_VERSION_PATCH;
    return mtiaSuccess;
}

MTIA_API mtiaError_t mtiaInit(unsigned int flags) {
    return apiCall("mtiaInit", [&] {
        if (flags != mtiaInitDefault)
            fail(mtiaErrorInvalidValue, "flags 0x{:x} has unknown bits (expected 0)", flags);
        Runtime::instance();
    });
}

MTIA_API mtiaError_t mtiaDriverGetName(const char** name) {
    return apiCall("mtiaDriverGetName", [&] {
        mtia::requireNonNull(name, "name");
        *name = Runtime::instance().driver().name();
    });
}

}  // extern "C"
