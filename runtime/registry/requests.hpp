// The request word of a slot (reference/smi-topology-ipc.md section 4.9): a
// tool (mtia-smi mem snapshot) asks a live process for something by placing
// op << 32 | token into the process's idle (0) word and waking it (FUTEX_WAKE
// on the word's low half); one request at a time, later tools wait their turn.
// The process's watcher thread (request_watcher.hpp) serves it, sets the word
// back to 0 and stores result << 32 | token into the slot's ack word, once the
// previous tool took its answer from there (set it to 0). A tool
// that gives up sets the word back to 0 itself (withdraws), and the watcher
// then deletes what it wrote. Files a request produces go to a private
// directory of the user, named by slot and token, from which the tool moves
// them.
//
// Thread safety: every function may be called from any thread. Blocking:
// requestDirectory creates a directory; the rest never block.
#pragma once

#include "status.hpp"

#include <sys/types.h>

#include <atomic>
#include <cstdint>
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
constexpr uint32_t requestToken(uint64_t word) { return static_cast<uint32_t>(word); }
constexpr uint32_t requestOp(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
constexpr uint64_t makeAck(RequestResult result, uint32_t token) {
  return (uint64_t{static_cast<uint32_t>(result)} << 32) | token;
}

// What serves a snapshot request: writes the snapshot (op SnapshotPickle or SnapshotJson) to path and
// returns a RequestResult. Called on the watcher thread with no registry lock held.
using RequestHandler = RequestResult (*)(RequestOp op, const char* path);
// Installs the process's handler (nullptr: none; requests then answer NotSupported).
void setRequestHandler(RequestHandler handler);
RequestHandler requestHandler();

// The private directory of uid's request files: <shmDirectory>/mtia_requests.u<uid>, mode 0700. create:
// make it when missing. Errors: Permission (another owner, a link, group/other bits), NotFound (missing and
// not created), System.
Status requestDirectory(uid_t uid, bool create, std::string& out);
// "<dir>/slot<slot>.<token>.pickle" (or .json for SnapshotJson).
std::string requestFile(const std::string& dir, uint32_t slot, uint32_t token, RequestOp op);

// FUTEX_WAKE (not private: the word is in shared memory) on the low half of a request word.
void wakeRequestWord(std::atomic<uint64_t>& word);

}  // namespace mtia::registry
