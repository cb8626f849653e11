#include "requests.hpp"

#include "machine_name.hpp"
#include "user_directory.hpp"

#include <dirent.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace mtia::registry {
namespace {

std::atomic<RequestHandler> gHandler{nullptr};

}  // namespace

void setRequestHandler(RequestHandler handler) {
    gHandler.store(handler, std::memory_order_release);
}
RequestHandler requestHandler() {
    return gHandler.load(std::memory_order_acquire);
}

Status requestDirectory(uid_t uid, bool create, std::string& out) {
    UserDirectory user;
    if (Status s = userDirectory(uid, create, user); !s) return s;
    return requestDirectory(user.path, create, out);
}

Status requestDirectory(const std::string& userDirectory, bool create, std::string& out) {
    const uid_t uid = geteuid();
    const std::string dir = userDirectory + "/requests";
    if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return Status::error(Code::System, "cannot create " + dir + ": " + std::strerror(errno));
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) {
        const int err = errno;
        return Status::error(err == ENOENT ? Code::NotFound : Code::System,
                             dir + ": " + std::strerror(err));
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0)
        return Status::error(Code::Permission, dir + " is not a directory of uid " +
                                                   std::to_string(uid) +
                                                   " with mode 0700; refusing it");
    out = dir;
    return Status::ok();
}

std::string requestFile(const std::string& dir, const std::string& registry, uint32_t slot,
                        uint32_t token, RequestOp op) {
    return dir + "/" + registry + ".slot" + std::to_string(slot) + "." + std::to_string(token) +
           (op == RequestOp::SnapshotJson ? ".json" : ".pickle");
}

std::string requestTempFile(const std::string& dir, const std::string& registry, uint32_t slot,
                            uint32_t token, RequestOp op) {
    return requestFile(dir, registry, slot, token, op) + ".tmp";
}

uint32_t removeRequestFiles(const std::string& dir, const std::string& registry, int64_t slot,
                            const std::function<bool(uint32_t token)>& requesterAlive) {
    // "<registry>.slot<S>.<token>.<pickle|json>[.tmp]"
    const std::string prefix = registry + ".slot";
    std::vector<std::string> doomed;
    {
        std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
        if (!listing) return 0;
        while (const dirent* entry = ::readdir(listing.get())) {
            const std::string name = entry->d_name;
            if (name.compare(0, prefix.size(), prefix) != 0) continue;
            const char* rest = name.c_str() + prefix.size();
            char* end = nullptr;
            const unsigned long fileSlot = std::strtoul(rest, &end, 10);
            if (end == rest || *end != '.') continue;
            rest = end + 1;
            const unsigned long token = std::strtoul(rest, &end, 10);
            if (end == rest || *end != '.' || token == 0 || token > UINT32_MAX) continue;
            if (slot >= 0 && fileSlot != static_cast<unsigned long>(slot)) continue;
            if (!requesterAlive(static_cast<uint32_t>(token))) doomed.push_back(dir + "/" + name);
        }
    }
    uint32_t removed = 0;
    for (const std::string& path : doomed) removed += ::unlink(path.c_str()) == 0 ? 1 : 0;
    return removed;
}

void wakeRequestWord(std::atomic<uint64_t>& word) {
    // The low half of the little-endian word holds the token, which is never 0 in a request.
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
              0);
}

}  // namespace mtia::registry
