// Which registry a process uses. A simulated machine is its configuration:
// processes whose MTIA_SIM_* settings agree share one registry, different
// settings get registries of their own, and MTIA_SIM_MACHINE names a machine
// explicitly. The object's name carries the layout version and the uid, so
// neither another layout nor another user can ever map the same bytes; it
// lives in the user's private directory (user_directory.hpp), never in
// /dev/shm itself, where another user could take the name first.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mtia::registry {

struct MachineSpec {
    std::string name;  // MTIA_SIM_MACHINE, "" when unset
    uint32_t devices = 0;
    uint64_t memoryBytes = 0;  // per device
    uint32_t engines = 0;

    // "devices=2 memory=17179869184 engines=4 machine=NAME": stored in the object for listings.
    std::string description() const;
    // mtia_registry.v<layout>.u<uid>.<name or "default">.<16 hex digits of the configuration>
    std::string objectName(uid_t uid) const;
};

// "mtia_registry.v<layout>.u<uid>.": every registry of that user and layout starts so.
std::string objectPrefix(uid_t uid);
// The memory file system (/dev/shm) that holds the users' private directories.
const char* shmDirectory();
// The object and its lock file (which sits next to it) in directory.
std::string objectPath(const std::string& directory, const std::string& objectName);
std::string lockPath(const std::string& directory, const std::string& objectName);
// The same in the calling user's directory as it is found now (the usual place when there is none
// yet).
std::string objectPath(const std::string& objectName);
std::string lockPath(const std::string& objectName);
// Names of every registry object in uid's directory, sorted (none when uid has no directory).
std::vector<std::string> listMachines(uid_t uid);

}  // namespace mtia::registry
