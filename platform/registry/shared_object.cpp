#include "shared_object.hpp"

#include "machine_name.hpp"
#include "test_hooks.hpp"
#include "user_directory.hpp"

#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace mtia::registry {
namespace bip = boost::interprocess;

namespace {

uint64_t realtimeNs() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

Code codeForErrno(int err) {
    switch (err) {
    case ENOSPC:
    case ENOMEM: return Code::NoSpace;
    case EACCES:
    case EPERM:
    case ELOOP: return Code::Permission;
    case ENOENT: return Code::NotFound;
    default:  // EFBIG (a file size limit) among them: no shortage of memory
        return Code::System;
    }
}

Status fromErrno(const std::string& what, const std::string& path, int err) {
    return Status::error(codeForErrno(err), what + " " + path + ": " + std::strerror(err));
}

Status fromException(const std::string& what, const std::string& path,
                     const bip::interprocess_exception& e) {
    const int err = e.get_native_error();
    return Status::error(err ? codeForErrno(err) : Code::System,
                         what + " " + path + ": " + (err ? std::strerror(err) : e.what()));
}

// Maps the first size bytes of the file at path, shared, writable or read-only, with
// Boost.Interprocess. fd is the descriptor the caller opened at path without following links and
// checked (owner, type, mode); file_mapping opens the path again, so the file it got must be that
// same inode. The directory is private to the user, so nobody else can swap it; a mismatch means a
// process of the user's own broke the locking protocol, and is refused rather than mapped.
Status mapCheckedFile(int fd, const std::string& path, size_t size, bool writable,
                      bip::mapped_region& out) {
    struct stat checked;
    if (::fstat(fd, &checked) != 0) return fromErrno("cannot stat registry", path, errno);
    const bip::mode_t mode = writable ? bip::read_write : bip::read_only;
    try {
        testing::runHook(testing::Point::BeforeMap);
        bip::file_mapping file(path.c_str(), mode);
        struct stat mapped;
        if (::fstat(file.get_mapping_handle().handle, &mapped) != 0)
            return fromErrno("cannot stat registry", path, errno);
        if (mapped.st_dev != checked.st_dev || mapped.st_ino != checked.st_ino)
            return Status::error(
                Code::Permission,
                "registry " + path +
                    " was replaced while it was being opened (another file at that "
                    "path); refusing it");
        // The checked size, not the file's size now: the caller validated exactly these bytes.
        out = bip::mapped_region(file, mode, 0, size);
        return Status::ok();
    } catch (const bip::interprocess_exception& e) {
        return fromException("cannot map registry", path, e);
    }
}

// Closes a descriptor when the scope ends.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Owner and mode say who may have written the bytes; a foreign or group-readable object is refused.
Status checkOwner(int fd, const std::string& name, struct stat& st) {
    if (fstat(fd, &st) != 0)
        return Status::error(Code::System,
                             "cannot stat registry " + name + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return Status::error(Code::Permission,
                             "registry " + name + " is not a regular file; refusing it");
    if (st.st_uid != geteuid()) {
        return Status::error(Code::Permission, "registry " + name + " belongs to uid " +
                                                   std::to_string(st.st_uid) + ", not to uid " +
                                                   std::to_string(geteuid()) + "; refusing it");
    }
    if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return Status::error(Code::Permission,
                             "registry " + name + " has mode " + mode + ", not 0600; refusing it");
    }
    return Status::ok();
}

// Why the mapped bytes are not a usable registry, or "" when they are.
std::string invalidReason(const Header& h, uint64_t size, const ObjectRequest& request) {
    if (h.magic != kMagic) return "wrong magic";
    if (h.layoutVersion != kLayoutVersion)
        return "layout version " + std::to_string(h.layoutVersion);
    if (h.headerBytes != kHeaderBytes || h.slotBytes != sizeof(Slot) || h.maxDevices != kMaxDevices)
        return "record sizes of another layout";
    if (h.maxSlots == 0 || h.maxSlots > kMaxSlots || h.deviceCount > kMaxDevices)
        return "counts out of range";
    if (h.totalBytes != size || objectBytes(h.maxSlots) != size)
        return "size " + std::to_string(size) + " does not match";
    const uint32_t state = h.state.load(std::memory_order_acquire);
    if (state != static_cast<uint32_t>(ObjectState::Ready))
        return state == static_cast<uint32_t>(ObjectState::Poisoned)
                   ? "poisoned"
                   : "never finished initialising";
    if (request.create) {
        if (h.deviceCount != request.capacity.size()) return "another device count";
        for (uint32_t d = 0; d < h.deviceCount; ++d)
            if (h.capacity[d] != request.capacity[d]) return "another device capacity";
    }
    return "";
}

Status initMutex(pthread_mutex_t* mutex) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    const int rc = pthread_mutex_init(mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    if (rc != 0)
        return Status::error(Code::System, std::string("cannot initialise the admission mutex: ") +
                                               std::strerror(rc));
    return Status::ok();
}

Status createObject(const ObjectRequest& request, const std::string& path, MappedObject& out) {
    if (request.slots == 0 || request.slots > kMaxSlots || request.capacity.size() > kMaxDevices)
        return Status::error(Code::InvalidArgument,
                             "registry " + request.name + ": slot or device count out of range");
    const uint64_t bytes = objectBytes(request.slots);
    Fd file{::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (file.fd < 0) return fromErrno("cannot create registry", path, errno);
    auto undo = [&](Status status) {
        ::unlink(path.c_str());
        return status;
    };
    // The umask may have taken bits away; the mode must be exactly what openers check for.
    if (::fchmod(file.fd, 0600) != 0)
        return undo(fromErrno("cannot set the mode of registry", path, errno));
    // A file size limit below the object's size would make ftruncate raise SIGXFSZ, which kills the
    // process unless it ignores the signal: say so instead, before trying.
    if (rlimit limit; ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
                      limit.rlim_cur < bytes) {
        return undo(Status::error(
            Code::System,
            "cannot size registry file " + path + " to " + std::to_string(bytes) +
                " bytes: the process's file size limit (RLIMIT_FSIZE, ulimit -f) is " +
                std::to_string(limit.rlim_cur) + " bytes"));
    }
    if (::ftruncate(file.fd, static_cast<off_t>(bytes)) != 0) {
        const int err = errno;
        return undo(
            Status::error(codeForErrno(err),
                          "cannot size registry file " + path + " to " + std::to_string(bytes) +
                              " bytes: ftruncate failed: " + std::strerror(err) +
                              (err == EFBIG ? " (the file size limit, RLIMIT_FSIZE)" : "")));
    }
    testing::runHook(testing::Point::AfterTruncate);
    // Reserve the pages now: on a full /dev/shm this fails cleanly instead of a SIGBUS on first
    // touch.
    if (const int rc = posix_fallocate(file.fd, 0, static_cast<off_t>(bytes)); rc != 0) {
        return undo(
            Status::error(codeForErrno(rc), "cannot reserve " + std::to_string(bytes) +
                                                " bytes for registry file " + path +
                                                ": posix_fallocate failed: " + std::strerror(rc)));
    }
    bip::mapped_region region;
    if (Status s = mapCheckedFile(file.fd, path, bytes, true, region); !s) return undo(s);
    auto* header = static_cast<Header*>(region.get_address());
    header->state.store(static_cast<uint32_t>(ObjectState::Initializing),
                        std::memory_order_release);
    testing::runHook(testing::Point::AfterInitializing);
    header->layoutVersion = kLayoutVersion;
    header->headerBytes = kHeaderBytes;
    header->slotBytes = sizeof(Slot);
    header->maxDevices = kMaxDevices;
    header->deviceCount = static_cast<uint32_t>(request.capacity.size());
    header->maxSlots = request.slots;
    header->totalBytes = bytes;
    header->createdNs = realtimeNs();
    header->creatorPid = static_cast<uint32_t>(getpid());
    std::snprintf(header->machine, sizeof header->machine, "%s", request.machine.c_str());
    for (size_t d = 0; d < request.capacity.size(); ++d) header->capacity[d] = request.capacity[d];
    if (Status s = initMutex(&header->admit); !s) return undo(s);
    header->magic = kMagic;
    testing::runHook(testing::Point::BeforeReady);
    header->state.store(static_cast<uint32_t>(ObjectState::Ready), std::memory_order_release);
    out.region = std::move(region);
    out.header = header;
    out.slots =
        reinterpret_cast<Slot*>(static_cast<char*>(out.region.get_address()) + kHeaderBytes);
    out.created = true;
    return Status::ok();
}

// Locks byte 0 of a lock file that is still the one at its path: a cleanup may have unlinked the
// file we opened, and two processes locking two different inodes would exclude nobody.
Status lockCurrentFile(const ObjectRequest& request, LockFile& lock) {
    const std::string path = lockPath(request.directory, request.name);
    for (int attempt = 0; attempt < 8; ++attempt) {
        if (Status s = lock.open(path, request.create, request.writable); !s) return s;
        if (Status s = lock.lockUntil(creationLockByte(), request.create, request.lockTimeout); !s)
            return s;
        struct stat opened, current;
        if (fstat(lock.fd(), &opened) == 0 && stat(path.c_str(), &current) == 0 &&
            opened.st_ino == current.st_ino && opened.st_dev == current.st_dev)
            return Status::ok();
    }
    return Status::error(Code::Timeout, "registry lock file " + path + " keeps being replaced");
}

}  // namespace

Status openObject(const ObjectRequest& given, LockFile& lock, MappedObject& out) {
    ObjectRequest request = given;
    if (request.directory.empty()) {
        UserDirectory dir;
        if (Status s = userDirectory(geteuid(), request.create, dir); !s) {
            if (s.code == Code::NotFound)
                return Status::error(Code::NotFound, "registry " + request.name +
                                                         " does not exist (" + s.message + ")");
            return s;
        }
        request.directory = dir.path;
        out.notice = dir.notice;
    }
    out.directory = request.directory;
    const std::string path = objectPath(request.directory, request.name);
    if (Status s = lockCurrentFile(request, lock); !s) return s;
    struct Unlock {
        LockFile& lock;
        ~Unlock() { lock.unlock(creationLockByte()); }
    } unlockAtEnd{lock};

    const bool writable = request.create || request.writable;
    // Taken while the creation lock keeps removeIfUnused out; dropped by the kernel with the
    // process.
    auto holdOpen = [&]() -> Status {
        if (!writable) return Status::ok();
        return lock.lockUntil(openerLockByte(), false, request.lockTimeout);
    };
    Fd file{::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC)};
    if (file.fd >= 0) {
        struct stat st;
        if (Status s = checkOwner(file.fd, request.name, st); !s) return s;
        std::string why = "size " + std::to_string(st.st_size) + " is too small";
        if (static_cast<uint64_t>(st.st_size) >= kHeaderBytes) {
            bip::mapped_region region;
            if (Status s = mapCheckedFile(file.fd, path, static_cast<size_t>(st.st_size), writable,
                                          region);
                !s)
                return s;
            auto* header = static_cast<Header*>(region.get_address());
            why = invalidReason(*header, static_cast<uint64_t>(st.st_size), request);
            if (why.empty()) {
                out.region = std::move(region);
                out.header = header;
                out.slots = reinterpret_cast<Slot*>(static_cast<char*>(out.region.get_address()) +
                                                    kHeaderBytes);
                return holdOpen();
            }
        }
        if (!request.create)
            return Status::error(Code::Unavailable,
                                 "registry " + request.name + " is not usable: " + why);
        // We hold the creation lock, so no creator is still working on it: it is garbage of ours.
        ::unlink(path.c_str());
        out.recreated = true;
    } else {
        const int err = errno;
        if (err != ENOENT) return fromErrno("cannot open registry", path, err);
        if (!request.create)
            return Status::error(Code::NotFound, "registry " + request.name + " does not exist");
    }
    if (Status s = createObject(request, path, out); !s) return s;
    return holdOpen();
}

Status removeIfUnused(const std::string& name, const std::string& directory) {
    ObjectRequest request;
    request.name = name;
    request.create = true;  // exclusive creation lock: nobody opens while we remove
    request.directory = directory;
    if (request.directory.empty()) {
        UserDirectory dir;
        if (Status s = userDirectory(geteuid(), false, dir); !s) return s;
        request.directory = dir.path;
    }
    LockFile lock;
    if (Status s = lockCurrentFile(request, lock); !s) return s;
    struct flock any;
    std::memset(&any, 0, sizeof any);
    any.l_type = F_WRLCK;
    any.l_whence = SEEK_SET;
    any.l_start = slotLockByte(0);
    any.l_len = kMaxSlots;
    if (fcntl(lock.fd(), F_OFD_GETLK, &any) != 0 || any.l_type != F_UNLCK)
        return Status::error(Code::Busy, "registry " + name + " still has live processes");
    if (lock.lockedByOther(openerLockByte()))
        return Status::error(Code::Busy, "registry " + name + " is open in a live process");
    const std::string path = objectPath(request.directory, name);
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && st.st_uid != geteuid())
        return Status::error(Code::Permission, "registry " + name + " belongs to another user");
    ::unlink(path.c_str());
    ::unlink(lockPath(request.directory, name).c_str());
    return Status::ok();
}

}  // namespace mtia::registry
