// The registry object itself: the create/open protocol of
// reference/smi-topology-ipc.md section 4.6. The object is a file of the
// user's private directory (user_directory.hpp) in /dev/shm, opened without
// following links and checked (owner, type, mode) on that descriptor; Boost.Interprocess
// then maps that same file (the inode is compared) shared. Registry-internal: this header
// includes Boost, so only platform/registry's own sources may include it (registry.hpp does not).
// Every open runs under the lock file's creation byte, so
// a creator that died half-way leaves a lock the kernel already dropped and an
// object whose state is not Ready: the next opener removes and recreates it
// (read-write) or reports it unavailable (read-only); nobody ever spins on it.
#pragma once

#include "layout.hpp"
#include "lock_file.hpp"
#include "status.hpp"

#include <boost/interprocess/mapped_region.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mtia::registry {

struct ObjectRequest {
    std::string name;       // the object's file name in the user's directory (machine_name.hpp)
    std::string directory;  // that directory; "" makes openObject find (create: or make) it
    bool create = true;     // false: never create (read-only unless writable)
    bool writable = false;  // with create false: map read-write (a tool posting a request)
    uint32_t slots = kDefaultSlots;  // for a new object
    std::string machine;             // description stored in a new object
    std::vector<uint64_t> capacity;  // per device; must match an existing object when create is set
    std::chrono::milliseconds lockTimeout{5000};
};

struct MappedObject {
    boost::interprocess::mapped_region region;  // the whole object, shared
    std::string directory;                      // the user's directory the object lies in
    std::string notice;  // why a fall-back directory is used ("" when the usual one is)
    Header* header = nullptr;
    Slot* slots = nullptr;
    bool created = false;    // this call created it
    bool recreated = false;  // and removed an invalid one first
};

// Every read-write opener holds a shared lock on this byte of the lock file for as long as it keeps
// the object open (the kernel drops it when the process dies): removeIfUnused never unlinks an
// object that a live process has mapped, even one that has not claimed a slot yet. Far above the
// slot bytes.
constexpr off_t openerLockByte() {
    return off_t{1} << 24;
}

// Opens lock on lockPath(directory, request.name) (creating it when request.create) and keeps it
// open: the caller's slot locks live on it. Errors: Permission (a file of another owner, a link,
// group or other permission bits, a file replaced between the checked open and the mapping),
// NotFound (create false and no object), NoSpace (/dev/shm is full), System (the message names the
// file and the failed call, e.g. a file size limit below the object's size or a failed mapping),
// Unavailable, Timeout, InvalidArgument. Blocking: up to request.lockTimeout on the lock file.
// Thread safety: any thread; lock and out belong to the caller. Never throws (Boost's exceptions
// become a Status).
Status openObject(const ObjectRequest& request, LockFile& lock, MappedObject& out);

// Removes the object and its lock file when no slot has a live owner and no live process holds it
// open read-write (openerLockByte). Runs under the exclusive creation lock, so nobody opens it
// meanwhile; an opener waiting for that lock finds the file replaced and creates a new object.
// Errors: Code::Busy (a live process uses it; nothing removed), Code::Timeout (the creation lock
// stayed busy), Code::Permission (a foreign object). directory: "" for the calling user's own
// (found, never made).
Status removeIfUnused(const std::string& name, const std::string& directory = "");

}  // namespace mtia::registry
