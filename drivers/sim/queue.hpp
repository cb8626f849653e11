// An in-order command queue. Submitters append to its command log under the
// queue's submit lock; at most one engine at a time owns a queue that has work
// ("scheduled") and reads the log without a lock, so commands run one after
// the other. Completion is a counter that anyone can read without a lock.
//
// A queue holds at most depth() commands that have not completed (CUDA blocks
// a launching thread the same way once about a thousand launches are pending):
// a host thread that submits to a full queue sleeps until half of it drained,
// or until the device faulted. Engine threads (host functions that submit) are
// never made to wait, since the work they would wait for may be theirs.
#pragma once

#include "command_log.hpp"
#include "spin_lock.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace mtia::sim {

class Device;

inline constexpr int32_t kPriorityLeast = 0;
inline constexpr int32_t kPriorityGreatest = -5;
inline constexpr int kPriorityLevels = kPriorityLeast - kPriorityGreatest + 1;

class Queue : public std::enable_shared_from_this<Queue> {
public:
    // priority must already be clamped; number: creation index on the device; slowNs: injected
    // delay; depth: the most commands not yet completed that submit lets a host thread queue (>=
    // 1).
    Queue(Device& device, int32_t priority, uint32_t number, uint64_t slowNs, uint64_t depth);

    Device& device() const { return device_; }
    int32_t priority() const { return priority_; }
    // 0 (least urgent) .. kPriorityLevels-1 (most urgent): the index of the scheduler's ready list.
    int level() const { return kPriorityLeast - priority_; }
    uint32_t number() const { return number_; }
    uint64_t slowNs() const { return slowNs_; }
    uint64_t depth() const { return depth_; }

    uint64_t submitted() const { return log_.published(); }
    uint64_t completed() const { return completed_.load(std::memory_order_acquire); }

    // Takes command over (Command::takeFrom) and stores its number in seq. Hands the queue to the
    // scheduler when it was idle. Blocking: while depth() commands have not completed, a host
    // thread sleeps until half of them did (unlocking *held first, if given: a lock the caller must
    // not keep while asleep); an engine thread appends at once, beyond the depth. False (command
    // untouched, nothing queued) when the device faulted while the caller waited. Throws
    // std::bad_alloc (command untouched).
    bool submit(Command& command, uint64_t& seq,
                std::shared_lock<std::shared_mutex>* held = nullptr);

    enum class Next { Run, Empty, Blocked };
    // Engine side (the owner). Run: *out is the next command; it stays in the queue until retire().
    // Empty: nothing published beyond what ran (the queue is still scheduled: see release()).
    // Blocked: the head waits on another queue, which now holds this one as a waiter and schedules
    // it again when the wait is satisfied; the engine drops the queue.
    Next next(Command*& out);
    // Engine side: the command next() gave out has run; drop it.
    void retire() { log_.retire(); }
    // Engine side: whether commands were published beyond those retired.
    bool hasWork() const { return log_.hasWork(); }
    // Engine side, after Empty: unschedules the queue. True when the engine must drop it (idle now,
    // or a submitter already handed it to the scheduler again); false when the engine still owns it
    // (work arrived meanwhile, or the handshake's barrier failed and the queue could not be given
    // up safely).
    bool release();
    // Engine side: command seq finished. Wakes waiting hosts and queues.
    void complete(uint64_t seq);

    // Blocks the calling host thread until command seq completed; spin first polls for a while.
    void waitFor(uint64_t seq, bool spin);
    // Wakes every host thread sleeping in submit or waitFor to look again (the device faulted).
    void wakeHosts();

private:
    // Sleeps until done() holds, which must become true once command need completed (or on
    // wakeHosts()). Called without locks; done() reads completed_ sequentially consistent.
    template <class Done>
    void sleepUntil(uint64_t need, Done&& done);
    // Registers waiter to be scheduled once command value of this queue completed; false when it
    // already has completed (nothing registered).
    bool addWaiter(std::shared_ptr<Queue> waiter, uint64_t value);
    void wakeWatchers(uint64_t seq);

    Device& device_;
    const int32_t priority_;
    const uint32_t number_;
    const uint64_t slowNs_;
    const uint64_t depth_;

    // Submitters' lock on a line of its own: the engine reads the fields above on every command.
    alignas(64) SpinLock submitMu_;  // serialises submitters (the engine never takes it)
    // Submitters may append up to this command number without reading completed_ (a line the engine
    // writes after every command): completed_ + depth_ as last read. Guarded by submitMu_.
    uint64_t roomUntil_ = 0;
    CommandLog log_;
    // Set by the submitter that finds the queue idle (it then hands it to the scheduler); cleared
    // by the engine that finds it empty. Together with the log's published count this is a Dekker
    // handshake: each side writes its own variable, then reads the other's, with a fence between
    // (asymmetric_fence.hpp).
    alignas(64) std::atomic<bool> scheduled_{false};

    // Completion side, on its own cache line: engines write it, submitters mostly do not read it.
    alignas(64) std::atomic<uint64_t> completed_{0};
    // Queues registered as waiters. complete() takes watchMu_ only when this is non-zero or a host
    // thread sleeps for the command it completed (hostWakeAt_), which keeps completion lock-free in
    // the common case.
    std::atomic<uint32_t> watchers_{0};
    // The smallest command number a host thread sleeping in submit or waitFor waits for; UINT64_MAX
    // when none sleeps. Written under watchMu_ only (lowered by sleepers, reset by whoever wakes
    // them).
    std::atomic<uint64_t> hostWakeAt_{UINT64_MAX};
    std::mutex watchMu_;
    std::condition_variable watchCv_;
    std::vector<std::pair<std::shared_ptr<Queue>, uint64_t>> waiters_;
};

}  // namespace mtia::sim
