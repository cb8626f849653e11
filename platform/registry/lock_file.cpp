#include "lock_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace mtia::registry {
namespace {

struct flock byteLock(short type, off_t byte) {
    struct flock lock;
    std::memset(&lock, 0, sizeof lock);
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = byte;
    lock.l_len = 1;
    return lock;  // l_pid stays 0, as OFD locks require
}

}  // namespace

LockFile::~LockFile() {
    if (fd_ >= 0) ::close(fd_);
}

Status LockFile::open(const std::string& path, bool create, bool writable) {
    const int flags = (create     ? O_RDWR | O_CREAT
                       : writable ? O_RDWR
                                  : O_RDONLY) |
                      O_CLOEXEC | O_NOFOLLOW;
    const int fd = ::open(path.c_str(), flags, 0600);
    if (fd < 0) {
        const int err = errno;
        const Code code = err == ENOENT                     ? Code::NotFound
                          : (err == EACCES || err == ELOOP) ? Code::Permission
                                                            : Code::System;
        return Status::error(code, "cannot open the registry lock file " + path + ": " +
                                       std::strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        ::close(fd);
        return Status::error(Code::Permission, "refusing the registry lock file " + path +
                                                   ": it must be a regular file of uid " +
                                                   std::to_string(geteuid()) + " with mode 0600");
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
    return Status::ok();
}

bool LockFile::tryLock(off_t byte) {
    struct flock lock = byteLock(F_WRLCK, byte);
    return fcntl(fd_, F_OFD_SETLK, &lock) == 0;
}

Status LockFile::lockUntil(off_t byte, bool exclusive, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // Polling rather than F_OFD_SETLKW: a live holder that hangs must not hang us past the
    // deadline.
    for (;;) {
        struct flock lock = byteLock(exclusive ? F_WRLCK : F_RDLCK, byte);
        if (fcntl(fd_, F_OFD_SETLK, &lock) == 0) return Status::ok();
        const int err = errno;
        if (err != EAGAIN && err != EACCES && err != EINTR)
            return Status::error(Code::System,
                                 std::string("registry lock: fcntl failed: ") + std::strerror(err));
        if (std::chrono::steady_clock::now() >= deadline)
            return Status::error(Code::Timeout, "registry lock byte " + std::to_string(byte) +
                                                    " held by a live process for " +
                                                    std::to_string(timeout.count()) + " ms");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void LockFile::unlock(off_t byte) {
    struct flock lock = byteLock(F_UNLCK, byte);
    (void)fcntl(fd_, F_OFD_SETLK, &lock);
}

bool LockFile::lockedByOther(off_t byte) const {
    struct flock lock = byteLock(F_WRLCK, byte);
    if (fcntl(fd_, F_OFD_GETLK, &lock) != 0)
        return true;  // cannot tell: count it, never over-admit
    return lock.l_type != F_UNLCK;
}

bool LockFile::tryLockClassic(off_t byte) {
    struct flock lock = byteLock(F_WRLCK, byte);
    return fcntl(fd_, F_SETLK, &lock) == 0;
}

pid_t LockFile::classicHolder(off_t byte) const {
    struct flock lock = byteLock(F_WRLCK, byte);
    if (fcntl(fd_, F_GETLK, &lock) != 0 || lock.l_type == F_UNLCK) return 0;
    return lock.l_pid > 0 ? lock.l_pid : 0;
}

}  // namespace mtia::registry
