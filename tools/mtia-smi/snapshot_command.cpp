// mtia-smi mem snapshot -p PID -o FILE: asks a live process, through its
// registry slot's request word, for its memory snapshot (see
// mtiamlProcessDumpSnapshot) and says where it went.
#include "argument_checks.hpp"
#include "smi_error.hpp"
#include "views.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace mtia::smi {

std::string runSnapshot(int64_t pid, const std::string& file, double timeoutSeconds) {
    checkWhole("mem snapshot -p/--pid", pid, 1, INT32_MAX, "a process id");
    if (file.empty()) throw SmiError(kExitBadArguments, "mem snapshot: give -o FILE");
    checkSeconds("mem snapshot --timeout", timeoutSeconds, 3600);
    const auto timeoutMs = static_cast<uint32_t>(std::ceil(timeoutSeconds * 1000));
    const mtiaError_t err =
        mtiamlProcessDumpSnapshot(static_cast<uint32_t>(pid), file.c_str(), timeoutMs);
    // NotReady is a status and carries no message of the library's.
    if (err == mtiaErrorNotReady) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g",
                      timeoutSeconds);  // 0.3, not to_string's 0.300000
        throw SmiError(kExitInternal, "mem snapshot: process " + std::to_string(pid) +
                                          " did not answer within " + seconds +
                                          " s (stopped, or its runtime is stuck)");
    }
    check(err, "mem snapshot");
    return "Memory snapshot of process " + std::to_string(pid) + " written to " + file + "\n";
}

}  // namespace mtia::smi
