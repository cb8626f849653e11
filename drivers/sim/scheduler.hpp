// The engines of one device and the ready lists that feed them. A queue with
// work sits in the ready list of its priority until an engine takes it; the
// engine runs its commands in order and gives it back when it is empty,
// blocked on a wait, has run a batch while others wait, or when more urgent
// work is waiting and no engine is free.
#pragma once

#include "queue.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace mtia::sim {

class Device;

class Scheduler {
public:
    Scheduler(Device& device, int32_t engines, bool bindEngines);
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Starts the engine threads unless they run already; they run until the process exits. Throws
    // std::system_error when a thread cannot be created.
    void start();
    // Puts a scheduled queue at the back of its priority's ready list. Thread-safe, never blocks
    // long.
    void makeReady(std::shared_ptr<Queue> queue);
    int32_t engines() const { return engines_; }

    // The queue the calling engine thread is running, nullptr on other threads (host functions use
    // it to refuse waits that would wait for themselves).
    static const Queue* currentQueue();
    // Whether the calling thread is an engine of any device. A thread-local read.
    static bool onEngineThread();

private:
    void engineMain(int32_t index);
    std::shared_ptr<Queue> take();
    std::shared_ptr<Queue> tryPop();
    // Polls for a ready queue for a while; null when none came.
    std::shared_ptr<Queue> spin();
    void wakeOne();
    std::shared_ptr<Queue> popLocked();
    void run(std::shared_ptr<Queue> queue);
    // Waits briefly for more work on queue; false when none came or other queues are ready.
    bool linger(const Queue& queue) const;
    bool shouldYield(int level, int batch) const;

    Device& device_;
    const int32_t engines_;
    const bool bindEngines_;
    std::mutex startMu_;
    std::atomic<int32_t> started_{0};  // engine threads running

    std::mutex mu_;
    std::condition_variable wake_;
    std::array<std::deque<std::shared_ptr<Queue>>, kPriorityLevels> ready_;  // by Queue::level()
    // Bit l set while ready_[l] is non-empty; read without the lock by spinning and busy engines.
    std::atomic<uint32_t> readyMask_{0};
    int32_t sleeping_ = 0;              // engines waiting on wake_; guarded by mu_
    std::atomic<bool> spinner_{false};  // an idle engine is polling the ready lists
    std::atomic<int32_t> idle_{0};      // engines not running a queue (spinning or sleeping)
};

}  // namespace mtia::sim
