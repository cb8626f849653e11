#include "user_directory.hpp"

#include "machine_name.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace mtia::registry {
namespace {

enum class Verdict { Usable, Missing, Foreign, OwnBadMode, Error };

std::string modeText(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

// lstat, not stat: a link (even one to a directory of ours) is somebody else's pointer, never used.
Verdict inspect(const std::string& path, uid_t uid, struct stat& st, int& err) {
    if (::lstat(path.c_str(), &st) != 0) {
        err = errno;
        return err == ENOENT ? Verdict::Missing : Verdict::Error;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid) return Verdict::Foreign;
    if ((st.st_mode & 0777) != 0700) return Verdict::OwnBadMode;
    return Verdict::Usable;
}

std::string describeForeign(const std::string& path, const struct stat& st) {
    const char* kind = S_ISLNK(st.st_mode)   ? "a symbolic link"
                       : S_ISDIR(st.st_mode) ? "a directory"
                                             : "a file";
    return path + " is " + kind + " of uid " + std::to_string(st.st_uid);
}

// The fall-back directories of uid that pass the check, sorted by name.
std::vector<std::string> fallbacks(uid_t uid) {
    std::vector<std::string> found;
    const std::string prefix = "mtia.u" + std::to_string(uid) + ".";
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(shmDirectory()), ::closedir);
    if (!dir) return found;
    while (const dirent* entry = ::readdir(dir.get())) {
        const std::string name = entry->d_name;
        if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0)
            continue;
        const std::string path = std::string(shmDirectory()) + "/" + name;
        struct stat st;
        int err = 0;
        if (inspect(path, uid, st, err) == Verdict::Usable) found.push_back(path);
    }
    std::sort(found.begin(), found.end());
    return found;
}

}  // namespace

std::string usualUserDirectory(uid_t uid) {
    return std::string(shmDirectory()) + "/mtia.u" + std::to_string(uid);
}

Status userDirectory(uid_t uid, bool create, UserDirectory& out) {
    const std::string usual = usualUserDirectory(uid);
    struct stat st;
    int err = 0;
    Verdict verdict = inspect(usual, uid, st, err);
    if (verdict == Verdict::Missing && create) {
        // mode 0700 less the umask: a umask that removes owner bits leaves a directory the check
        // refuses below, with a message; one of ours (no other user could have made it meanwhile)
        // gets its mode fixed.
        if (::mkdir(usual.c_str(), 0700) == 0 || errno == EEXIST) {
            verdict = inspect(usual, uid, st, err);
            if (verdict == Verdict::OwnBadMode && (st.st_mode & 077) == 0 &&
                ::chmod(usual.c_str(), 0700) == 0)
                verdict = inspect(usual, uid, st, err);
        } else {
            err = errno;
            return Status::error(Code::System, "cannot create the registry directory " + usual +
                                                   ": " + std::strerror(err));
        }
    }
    switch (verdict) {
    case Verdict::Usable:
        out.path = usual;
        out.notice.clear();
        return Status::ok();
    case Verdict::Missing:
        return Status::error(Code::NotFound, "the registry directory " + usual + " does not exist");
    case Verdict::Error:
        return Status::error(Code::System, "cannot inspect the registry directory " + usual + ": " +
                                               std::strerror(err));
    case Verdict::OwnBadMode:
        return Status::error(Code::Permission,
                             "the registry directory " + usual + " has mode " +
                                 modeText(st.st_mode) +
                                 ", not 0700, so other users may change what is in it; refusing it "
                                 "(run: chmod 0700 " +
                                 usual + ")");
    case Verdict::Foreign: break;
    }
    // Another user took the usual name first (only they or root can remove it): use a fall-back.
    const std::string taken = describeForeign(usual, st);
    auto chosen = [&](const std::string& path) {
        out.path = path;
        const bool ours = st.st_uid == uid;
        out.notice = taken + ", not a directory of this user (uid " + std::to_string(uid) +
                     ") with mode 0700" + (ours ? "" : ": another user created it first") +
                     "; using " + path + " instead. To use the usual place again, " +
                     (ours ? "" : "have its owner or root ") + "remove " + usual +
                     " while no process of uid " + std::to_string(uid) + " uses the device";
        return Status::ok();
    };
    std::vector<std::string> found = fallbacks(uid);
    if (!found.empty()) return chosen(found.front());
    if (!create)
        return Status::error(Code::NotFound, taken +
                                                 " and no fall-back registry directory of uid " +
                                                 std::to_string(uid) + " exists");
    std::string pattern = usual + ".XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        err = errno;
        return Status::error(Code::System, taken +
                                               "; cannot create a fall-back registry directory " +
                                               usual + ".XXXXXX: " + std::strerror(err));
    }
    // Another process of ours may have made one at the same time: settle on the first by name, and
    // give ours back when it is not that one (rmdir: it is still empty unless somebody already uses
    // it).
    found = fallbacks(uid);
    if (found.empty())
        return Status::error(Code::System,
                             taken + "; the fall-back directory " + pattern + " vanished");
    if (found.front() != pattern) (void)::rmdir(pattern.c_str());
    return chosen(found.front());
}

}  // namespace mtia::registry
