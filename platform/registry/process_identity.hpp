// Who this process is, as the registry records it in its slot.
#pragma once

#include <cstdint>
#include <string>

namespace mtia::registry {

struct ProcessIdentity {
    uint32_t pid = 0;         // in the process's own pid namespace
    uint64_t pidnsInode = 0;  // 0 when /proc is not readable
    uint64_t startTime = 0;   // clock ticks after boot; 0 when unknown
    std::string comm;         // the kernel's process name (at most 15 characters)
};

ProcessIdentity currentProcess();
// The inode of this process's pid namespace, 0 when unknown.
uint64_t currentPidNamespace();

}  // namespace mtia::registry
