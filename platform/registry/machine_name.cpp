#include "machine_name.hpp"

#include "layout.hpp"
#include "user_directory.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

namespace mtia::registry {
namespace {

// FNV-1a: stable across builds and hosts, which a std::hash is not.
uint64_t fnv1a(const std::string& text) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

// Names stay readable in directory listings; the hash (over the raw name) keeps them distinct.
std::string sanitized(const std::string& name) {
    std::string out;
    for (char c : name.substr(0, 48)) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '_';
        out += plain ? c : '_';
    }
    return out.empty() ? "default" : out;
}

}  // namespace

std::string MachineSpec::description() const {
    return "devices=" + std::to_string(devices) + " memory=" + std::to_string(memoryBytes) +
           " engines=" + std::to_string(engines) + " machine=" + name;
}

std::string MachineSpec::objectName(uid_t uid) const {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  static_cast<unsigned long long>(fnv1a(description())));
    return objectPrefix(uid) + sanitized(name) + "." + hash;
}

std::string objectPrefix(uid_t uid) {
    return "mtia_registry.v" + std::to_string(kLayoutVersion) + ".u" + std::to_string(uid) + ".";
}

const char* shmDirectory() {
    return "/dev/shm";
}

std::string objectPath(const std::string& directory, const std::string& objectName) {
    return directory + "/" + objectName;
}

std::string lockPath(const std::string& directory, const std::string& objectName) {
    return directory + "/" + objectName + ".lock";
}

namespace {
std::string currentDirectory() {
    UserDirectory dir;
    return userDirectory(geteuid(), false, dir) ? dir.path : usualUserDirectory(geteuid());
}
}  // namespace

std::string objectPath(const std::string& objectName) {
    return objectPath(currentDirectory(), objectName);
}
std::string lockPath(const std::string& objectName) {
    return lockPath(currentDirectory(), objectName);
}

std::vector<std::string> listMachines(uid_t uid) {
    std::vector<std::string> names;
    UserDirectory where;
    if (!userDirectory(uid, false, where)) return names;
    std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(where.path.c_str()), closedir);
    if (!dir) return names;
    const std::string prefix = objectPrefix(uid);
    const std::string lockSuffix = ".lock";
    while (const dirent* entry = readdir(dir.get())) {
        const std::string name = entry->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        if (name.size() >= lockSuffix.size() &&
            name.compare(name.size() - lockSuffix.size(), lockSuffix.size(), lockSuffix) == 0)
            continue;
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace mtia::registry
