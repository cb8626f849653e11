// mtia-smi mem snapshot -p PID -o FILE: asks a live process, through its
// registry slot's request word, for its memory snapshot (see
// mtiamlProcessDumpSnapshot) and says where it went.
#include "smi_error.hpp"
#include "views.hpp"

#include <cmath>
#include <cstdio>

namespace mtia::smi {

std::string runSnapshot(int64_t pid, const std::string& file, double timeoutSeconds) {
  if (pid <= 0 || pid > INT32_MAX) throw SmiError(kExitBadArguments, "mem snapshot -p: not a process id: " + std::to_string(pid));
  if (file.empty()) throw SmiError(kExitBadArguments, "mem snapshot: give -o FILE");
  if (!(timeoutSeconds > 0) || timeoutSeconds > 3600)
    throw SmiError(kExitBadArguments, "mem snapshot --timeout: give 0 < SEC <= 3600");
  const auto timeoutMs = static_cast<uint32_t>(std::ceil(timeoutSeconds * 1000));
  const mtiaError_t err = mtiamlProcessDumpSnapshot(static_cast<uint32_t>(pid), file.c_str(), timeoutMs);
  // NotReady is a status and carries no message of the library's.
  if (err == mtiaErrorNotReady) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeoutSeconds);  // 0.3, not to_string's 0.300000
    throw SmiError(kExitInternal, "mem snapshot: process " + std::to_string(pid) + " did not answer within " +
                                      seconds + " s (stopped, or its runtime is stuck)");
  }
  check(err, "mem snapshot");
  return "Memory snapshot of process " + std::to_string(pid) + " written to " + file + "\n";
}

}  // namespace mtia::smi
