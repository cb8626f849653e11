#include "smi_error.hpp"

#include <mtia/mtia_runtime.h>

namespace mtia::smi {
namespace {

int exitCodeOf(mtiaError_t err) {
  switch (err) {
    case mtiaErrorInvalidValue:
      return kExitBadArguments;
    case mtiaErrorNotSupported:
      return kExitNotSupported;
    case mtiaErrorNotPermitted:
      return kExitPermission;
    case mtiaErrorInvalidDevice:
    case mtiaErrorNotFound:
    case mtiaErrorNoDevice:
      return kExitNotFound;
    case mtiaErrorInitializationError:
      return kExitRegistryUnavailable;
    default:
      return kExitInternal;
  }
}

}  // namespace

void check(mtiaError_t err, const char* what) {
  if (err == mtiaSuccess) return;
  throw SmiError(exitCodeOf(err), std::string(what) + ": " + mtiaGetLastErrorMessage());
}

}  // namespace mtia::smi
