#include "process_identity.hpp"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mtia::registry {

uint64_t currentPidNamespace() {
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

namespace {

// Field 22 of /proc/self/stat; the name (field 2) may hold spaces and parentheses, so count after
// the last ')'.
uint64_t startTimeTicks() {
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 1));
    std::string field;
    for (int index = 3; fields >> field; ++index) {
        if (index == 22) return std::strtoull(field.c_str(), nullptr, 10);
    }
    return 0;
}

}  // namespace

ProcessIdentity currentProcess() {
    ProcessIdentity id;
    id.pid = static_cast<uint32_t>(getpid());
    id.pidnsInode = currentPidNamespace();
    id.startTime = startTimeTicks();
    char name[17] = {};
    if (prctl(PR_GET_NAME, name) == 0) id.comm = name;
    return id;
}

}  // namespace mtia::registry
