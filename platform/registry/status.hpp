// What a registry operation reports: a code callers branch on and a sentence
// for the user that names the object and the cause.
#pragma once

#include <string>
#include <utility>

namespace mtia::registry {

enum class Code {
    Ok = 0,
    InvalidArgument,  // a device index or size the machine does not have
    Permission,       // object or lock file owned by another user, or mode not 0600
    NotFound,         // read-only open of a registry nobody created
    Unavailable,      // read-only open of an object that is not (yet) a valid registry
    NoSpace,          // /dev/shm cannot hold the object (reserved up front, never SIGBUS)
    SlotsExhausted,   // every process slot is owned by a live process
    OutOfCapacity,    // the reservation does not fit next to what live processes hold
    Timeout,          // a lock stayed held by a live process past the deadline
    Busy,             // removal refused: a live process uses the object; a request posted while
                      // another is pending
    System,           // any other failed system call
    Stale,            // an IPC reference whose export was freed or whose exporter died
    SelfImport,       // an IPC reference exported by this very process
    TableFull,        // the slot's IPC table has no free record
};

struct Status {
    Code code = Code::Ok;
    std::string message;

    static Status ok() { return {}; }
    static Status error(Code c, std::string text) { return {c, std::move(text)}; }
    explicit operator bool() const { return code == Code::Ok; }
};

const char* codeName(Code code);

}  // namespace mtia::registry
