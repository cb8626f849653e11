// The request word of a slot (reference/smi-topology-ipc.md section 4.9): a
// tool (mtia-smi mem snapshot) asks a live process for something by placing
// op << 32 | token into the process's idle (0) word and waking it (FUTEX_WAKE
// on the word's low half); one request at a time, later tools wait their turn.
// The process's watcher thread (request_watcher.hpp) serves it, sets the word
// back to 0 and stores result << 32 | token into the slot's ack word, once the
// previous tool took its answer from there (set it to 0). A tool
// that gives up sets the word back to 0 itself (withdraws), and the watcher
// then deletes what it wrote. Files a request produces go to the request
// directory inside the user's private directory (user_directory.hpp), named
// by registry, slot and token, from which the tool moves them. The owner
// writes to "<file>.tmp" (mode 0600) and renames it when complete, so a
// killed owner leaves only a .tmp. While a tool waits for and takes its
// answer it holds a shared lock on requesterLockByte(token) in the registry's
// lock file, dropped by the kernel when the tool dies: a file whose tool
// holds no such lock is nobody's, and the owner (when it gives its slot up or
// exits) and mtia-smi cleanup remove it (removeRequestFiles).
//
// Thread safety: every function may be called from any thread. Blocking:
// requestDirectory creates a directory; the rest never block.
#pragma once

#include "status.hpp"

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace mtia::registry {

enum class RequestOp : uint32_t {
    Stop = 0,            // only the owner stores it, to end its watcher
    SnapshotPickle = 1,  // write the memory snapshot (pickle) to requestFile()
    SnapshotJson = 2,    // the same as JSON
};

enum class RequestResult : uint32_t {
    Done = 0,
    NotSupported = 1,  // no handler installed (a runtime without snapshots)
    Failed = 2,        // the handler failed (the file could not be written)
};

constexpr uint64_t makeRequest(RequestOp op, uint32_t token) {
    return (uint64_t{static_cast<uint32_t>(op)} << 32) | token;
}
constexpr uint32_t requestToken(uint64_t word) {
    return static_cast<uint32_t>(word);
}
constexpr uint32_t requestOp(uint64_t word) {
    return static_cast<uint32_t>(word >> 32);
}
constexpr uint64_t makeAck(RequestResult result, uint32_t token) {
    return (uint64_t{static_cast<uint32_t>(result)} << 32) | token;
}

// What serves a snapshot request: writes the snapshot (op SnapshotPickle or SnapshotJson) to path
// and returns a RequestResult. Called on the watcher thread with no registry lock held.
using RequestHandler = RequestResult (*)(RequestOp op, const char* path);
// Installs the process's handler (nullptr: none; requests then answer NotSupported).
void setRequestHandler(RequestHandler handler);
RequestHandler requestHandler();

// The private directory of uid's request files: <user directory>/requests, mode 0700. create: make
// it (and the user's directory) when missing. Errors: Permission (another owner, a link,
// group/other bits), NotFound (missing and not created), System.
Status requestDirectory(uid_t uid, bool create, std::string& out);
// The same inside userDirectory, the user's directory already found (Registry::directory()).
Status requestDirectory(const std::string& userDirectory, bool create, std::string& out);
// "<dir>/<registry>.slot<slot>.<token>.pickle" (or .json for SnapshotJson); registry: the object's
// name.
std::string requestFile(const std::string& dir, const std::string& registry, uint32_t slot,
                        uint32_t token, RequestOp op);
// Where the owner writes that file until it is complete: requestFile(...) + ".tmp".
std::string requestTempFile(const std::string& dir, const std::string& registry, uint32_t slot,
                            uint32_t token, RequestOp op);

// The byte of the registry's lock file a tool holds (shared) from before posting the request for
// token until it took the answer's file. Far above the slot and opener bytes (shared_object.hpp).
constexpr int64_t requesterLockByte(uint32_t token) {
    return (int64_t{1} << 32) + token;
}

// Removes the files (finished and .tmp) of registry's requests in dir, of slot only when slot >= 0,
// whose token requesterAlive says no tool waits for any more; returns how many. Never blocks.
uint32_t removeRequestFiles(const std::string& dir, const std::string& registry, int64_t slot,
                            const std::function<bool(uint32_t token)>& requesterAlive);

// FUTEX_WAKE (not private: the word is in shared memory) on the low half of a request word.
void wakeRequestWord(std::atomic<uint64_t>& word);

}  // namespace mtia::registry
