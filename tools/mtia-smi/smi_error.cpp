#include "smi_error.hpp"

#include <mtia/mtia_runtime.h>

namespace mtia::smi {
namespace {

int exitCodeOf(mtiaError_t err) {
    switch (err) {
    case mtiaErrorInvalidValue: return kExitBadArguments;
    case mtiaErrorNotSupported: return kExitNotSupported;
    case mtiaErrorNotPermitted: return kExitPermission;
    case mtiaErrorInvalidDevice:
    case mtiaErrorNotFound:
    case mtiaErrorNoDevice: return kExitNotFound;
    case mtiaErrorInitializationError: return kExitRegistryUnavailable;
    default: return kExitInternal;
    }
}

}  // namespace

void check(mtiaError_t err, const char* what) {
    if (err == mtiaSuccess) return;
    // The library's message already names the failed call; what stands in only when it says
    // nothing.
    const std::string message = mtiaGetLastErrorMessage();
    throw SmiError(exitCodeOf(err),
                   message.empty() ? std::string(what) + ": " + mtiaGetErrorName(err) : message);
}

}  // namespace mtia::smi
