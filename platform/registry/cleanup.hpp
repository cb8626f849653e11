// mtia-smi cleanup for one registry object: reaps the slots of dead processes,
// removes the files of snapshot requests that no live tool waits for any more
// (requests.hpp), then removes the object and its lock file when no live process uses it
// (shared_object.hpp removeIfUnused: under the exclusive creation lock, never
// while a live process holds it open, so it cannot pull a registry from under
// a process that is registering right now).
//
// Thread safety: any thread. Blocking: waits up to the lock timeout for the
// creation lock held by a live process.
#pragma once

#include "status.hpp"

#include <cstdint>
#include <string>

namespace mtia::registry {

struct CleanupReport {
    uint32_t reaped = 0;        // slots of dead processes freed
    uint32_t live = 0;          // live processes registered when looked at
    bool removed = false;       // the object and its lock file are gone
    uint32_t requestFiles = 0;  // abandoned request files removed
};

// Errors: NotFound (no such registry), Unavailable (not a valid registry: removed too when nobody
// uses it, reported as removed), Permission, Timeout, System. A registry in use is no error:
// removed stays false.
Status cleanupMachine(const std::string& objectName, CleanupReport& out);

}  // namespace mtia::registry
