// mtia-smi's exit codes (nvidia-smi's, which mirror NVML) and the one error
// type every view throws: main() prints its message on stderr and exits with
// its code, so stdout only ever carries data.
#pragma once

#include <mtia/mtia_types.h>

#include <stdexcept>
#include <string>

namespace mtia::smi {

enum ExitCode : int {
    kExitOk = 0,
    kExitBadArguments = 2,
    kExitNotSupported = 3,
    kExitPermission = 4,
    kExitNotFound = 6,
    kExitRegistryUnavailable = 9,
    kExitInternal = 255,
};

class SmiError : public std::runtime_error {
public:
    SmiError(int exitCode, const std::string& message)
        : std::runtime_error(message), exitCode_(exitCode) {}
    int exitCode() const { return exitCode_; }

private:
    int exitCode_;
};

// Throws SmiError for a failed management-library call with the library's message (which names the
// call), or "what: <error name>" when the library left none.
void check(mtiaError_t err, const char* what);

}  // namespace mtia::smi
