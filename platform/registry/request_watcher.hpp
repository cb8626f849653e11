// The thread that serves a registered process's request word (requests.hpp).
// It sleeps in a shared FUTEX_WAIT on the word's low half, so it costs
// nothing until a tool stores a request and wakes it: no signal, no polling.
// It is started when the process claims its slot, stopped (and joined) when
// the slot is given up, and forgotten in a forked child, which has no such
// thread and starts its own when it registers anew. Blocks every signal, so
// it never runs a handler of the program's.
//
// Thread safety: start/stop/forget are called under the Registry's attach
// mutex or from its destructor, never concurrently. Blocking: stop joins the
// thread, which may be writing a snapshot.
#pragma once

#include "layout.hpp"

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace mtia::registry {

class RequestWatcher {
public:
    RequestWatcher() = default;
    ~RequestWatcher() { stop(); }
    RequestWatcher(const RequestWatcher&) = delete;
    RequestWatcher& operator=(const RequestWatcher&) = delete;

    // Serves slot (index slotIndex of the registry named registryName in the user's directory
    // userDirectory); false when no thread could be created (requests then
    // go unanswered and tools time out). Blocks until the new thread runs (microseconds), so that a
    // fork right after it copies no lock held by the thread's start-up.
    bool start(Slot& slot, uint32_t slotIndex, const std::string& registryName,
               const std::string& userDirectory);
    // Ends and joins the thread; the slot's request word is left holding the Stop request.
    void stop();
    // In a forked child: the parent's thread does not exist here; drop it without joining (its
    // stack, a copy of the parent's, stays mapped: unmapping it would not be wrong, but it is
    // small).
    void forget() {
        running_ = false;
        stack_ = nullptr;
    }

private:
    static void* main(void* self);
    void serve(uint64_t request);

    static constexpr size_t kStackBytes =
        size_t{2} << 20;  // reserved, touched only as used (snapshot writing)
    pthread_t thread_{};
    void* stack_ = nullptr;
    bool running_ = false;
    Slot* slot_ = nullptr;
    uint32_t index_ = 0;
    std::string registry_;
    std::string directory_;
    std::atomic<bool> stopping_{false};
    std::atomic<uint32_t> started_{0};  // 1 once the thread runs main(): start() waits for it
};

}  // namespace mtia::registry
