#include "shared_object.hpp"

#include "machine_name.hpp"
#include "test_hooks.hpp"

#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
    case EFBIG:
    case ENOMEM:
      return Code::NoSpace;
    case EACCES:
    case EPERM:
      return Code::Permission;
    case ENOENT:
      return Code::NotFound;
    default:
      return Code::System;
  }
}

Status fromException(const std::string& what, const std::string& name, const bip::interprocess_exception& e) {
  const int err = e.get_native_error();
  return Status::error(codeForErrno(err), what + " registry " + name + ": " + (err ? std::strerror(err) : e.what()));
}

// Owner and mode say who may have written the bytes; a foreign or group-readable object is refused.
Status checkOwner(int fd, const std::string& name, struct stat& st) {
  if (fstat(fd, &st) != 0) return Status::error(Code::System, "cannot stat registry " + name + ": " + std::strerror(errno));
  if (st.st_uid != geteuid()) {
    return Status::error(Code::Permission, "registry " + name + " belongs to uid " + std::to_string(st.st_uid) +
                                               ", not to uid " + std::to_string(geteuid()) + "; refusing it");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::error(Code::Permission, "registry " + name + " has mode " + mode + ", not 0600; refusing it");
  }
  return Status::ok();
}

// Why the mapped bytes are not a usable registry, or "" when they are.
std::string invalidReason(const Header& h, uint64_t size, const ObjectRequest& request) {
  if (h.magic != kMagic) return "wrong magic";
  if (h.layoutVersion != kLayoutVersion) return "layout version " + std::to_string(h.layoutVersion);
  if (h.headerBytes != kHeaderBytes || h.slotBytes != sizeof(Slot) || h.maxDevices != kMaxDevices)
    return "record sizes of another layout";
  if (h.maxSlots == 0 || h.maxSlots > kMaxSlots || h.deviceCount > kMaxDevices) return "counts out of range";
  if (h.totalBytes != size || objectBytes(h.maxSlots) != size) return "size " + std::to_string(size) + " does not match";
  const uint32_t state = h.state.load(std::memory_order_acquire);
  if (state != static_cast<uint32_t>(ObjectState::Ready))
    return state == static_cast<uint32_t>(ObjectState::Poisoned) ? "poisoned" : "never finished initialising";
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
  if (rc != 0) return Status::error(Code::System, std::string("cannot initialise the admission mutex: ") + std::strerror(rc));
  return Status::ok();
}

Status createObject(const ObjectRequest& request, MappedObject& out) {
  if (request.slots == 0 || request.slots > kMaxSlots || request.capacity.size() > kMaxDevices)
    return Status::error(Code::InvalidArgument, "registry " + request.name + ": slot or device count out of range");
  const uint64_t bytes = objectBytes(request.slots);
  try {
    bip::permissions perms;
    perms.set_permissions(0600);
    bip::shared_memory_object shm(bip::create_only, request.name.c_str(), bip::read_write, perms);
    const int fd = shm.get_mapping_handle().handle;
    auto undo = [&](Status status) {
      bip::shared_memory_object::remove(request.name.c_str());
      return status;
    };
    try {
      shm.truncate(static_cast<bip::offset_t>(bytes));
    } catch (const bip::interprocess_exception& e) {
      return undo(fromException("cannot size", request.name, e));
    }
    testing::runHook(testing::Point::AfterTruncate);
    // Reserve the pages now: on a full /dev/shm this fails cleanly instead of a SIGBUS on first touch.
    if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
      return undo(Status::error(codeForErrno(rc), "cannot reserve " + std::to_string(bytes) + " bytes for registry " +
                                                      request.name + " in " + shmDirectory() + ": " + std::strerror(rc)));
    }
    bip::mapped_region region(shm, bip::read_write);
    auto* header = static_cast<Header*>(region.get_address());
    header->state.store(static_cast<uint32_t>(ObjectState::Initializing), std::memory_order_release);
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
    out.slots = reinterpret_cast<Slot*>(static_cast<char*>(out.region.get_address()) + kHeaderBytes);
    out.created = true;
    return Status::ok();
  } catch (const bip::interprocess_exception& e) {
    return fromException("cannot create", request.name, e);
  }
}

// Locks byte 0 of a lock file that is still the one at its path: a cleanup may have unlinked the
// file we opened, and two processes locking two different inodes would exclude nobody.
Status lockCurrentFile(const ObjectRequest& request, LockFile& lock) {
  const std::string path = lockPath(request.name);
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (Status s = lock.open(path, request.create, request.writable); !s) return s;
    if (Status s = lock.lockUntil(creationLockByte(), request.create, request.lockTimeout); !s) return s;
    struct stat opened, current;
    if (fstat(lock.fd(), &opened) == 0 && stat(path.c_str(), &current) == 0 && opened.st_ino == current.st_ino &&
        opened.st_dev == current.st_dev)
      return Status::ok();
  }
  return Status::error(Code::Timeout, "registry lock file " + path + " keeps being replaced");
}

}  // namespace

Status openObject(const ObjectRequest& request, LockFile& lock, MappedObject& out) {
  if (Status s = lockCurrentFile(request, lock); !s) return s;
  struct Unlock {
    LockFile& lock;
    ~Unlock() { lock.unlock(creationLockByte()); }
  } unlockAtEnd{lock};

  const bool writable = request.create || request.writable;
  const bip::mode_t mode = writable ? bip::read_write : bip::read_only;
  // Taken while the creation lock keeps removeIfUnused out; dropped by the kernel with the process.
  auto holdOpen = [&]() -> Status {
    if (!writable) return Status::ok();
    return lock.lockUntil(openerLockByte(), false, request.lockTimeout);
  };
  try {
    bip::shared_memory_object shm(bip::open_only, request.name.c_str(), mode);
    struct stat st;
    if (Status s = checkOwner(shm.get_mapping_handle().handle, request.name, st); !s) return s;
    std::string why = "size " + std::to_string(st.st_size) + " is too small";
    if (static_cast<uint64_t>(st.st_size) >= kHeaderBytes) {
      bip::mapped_region region(shm, mode);
      auto* header = static_cast<Header*>(region.get_address());
      why = invalidReason(*header, static_cast<uint64_t>(st.st_size), request);
      if (why.empty()) {
        out.region = std::move(region);
        out.header = header;
        out.slots = reinterpret_cast<Slot*>(static_cast<char*>(out.region.get_address()) + kHeaderBytes);
        return holdOpen();
      }
    }
    if (!request.create) return Status::error(Code::Unavailable, "registry " + request.name + " is not usable: " + why);
    // We hold the creation lock, so no creator is still working on it: it is garbage of ours.
    bip::shared_memory_object::remove(request.name.c_str());
    out.recreated = true;
  } catch (const bip::interprocess_exception& e) {
    if (e.get_error_code() != bip::not_found_error) return fromException("cannot open", request.name, e);
    if (!request.create) return Status::error(Code::NotFound, "registry " + request.name + " does not exist");
  }
  if (Status s = createObject(request, out); !s) return s;
  return holdOpen();
}

Status removeIfUnused(const std::string& name) {
  ObjectRequest request;
  request.name = name;
  request.create = true;  // exclusive creation lock: nobody opens while we remove
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
  try {
    bip::shared_memory_object shm(bip::open_only, name.c_str(), bip::read_only);
    struct stat st;
    if (fstat(shm.get_mapping_handle().handle, &st) == 0 && st.st_uid != geteuid())
      return Status::error(Code::Permission, "registry " + name + " belongs to another user");
  } catch (const bip::interprocess_exception&) {
  }
  bip::shared_memory_object::remove(name.c_str());
  ::unlink(lockPath(name).c_str());
  return Status::ok();
}

}  // namespace mtia::registry
