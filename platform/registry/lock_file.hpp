// The registry's side lock file and its open-file-description (OFD) byte
// locks: byte 0 guards creation, byte 1 + i says "slot i has a live owner".
// The kernel drops a lock when the last descriptor of its open file
// description goes away, so a killed process frees its bytes whatever killed
// it. OFD locks (unlike classic POSIX ones) are not dropped when some other
// descriptor of the file is closed in the process, and they conflict between
// two opens inside one process, so an in-process reader sees this process's
// slots as live. A forked child shares the description and would keep the
// parent's locks alive: the child handler (fork_guard.hpp) closes its copy.
#pragma once

#include "status.hpp"

#include <sys/types.h>

#include <chrono>
#include <string>

namespace mtia::registry {

class LockFile {
public:
    LockFile() = default;
    ~LockFile();
    LockFile(const LockFile&) = delete;
    LockFile& operator=(const LockFile&) = delete;

    // Opens (create: and creates, mode 0600) path without following links, read-write when create
    // or writable; refuses a file of another owner or with any group/other permission bit
    // (Code::Permission).
    Status open(const std::string& path, bool create, bool writable = false);
    bool isOpen() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    // Forgets the descriptor without closing it: the fork child handler already closed it.
    void abandon() { fd_ = -1; }

    // Non-blocking exclusive lock of one byte: true when taken.
    bool tryLock(off_t byte);
    // Shared (exclusive == false) or exclusive lock of one byte, retried until deadline
    // (Code::Timeout).
    Status lockUntil(off_t byte, bool exclusive, std::chrono::milliseconds timeout);
    void unlock(off_t byte);
    // Whether another open file description holds a lock on byte (a lock of this one does not
    // count).
    bool lockedByOther(off_t byte) const;

    // Classic (process-owned) POSIX lock of one byte, only for its pid translation: a close of any
    // descriptor of the file in this process drops it, so it is never trusted for liveness.
    bool tryLockClassic(off_t byte);
    // The pid of the process holding a classic lock on byte, as seen from this pid namespace: 0
    // when none, when the holder is not visible here, or when it is this process.
    pid_t classicHolder(off_t byte) const;

private:
    int fd_ = -1;
};

}  // namespace mtia::registry
