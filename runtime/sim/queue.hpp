// An in-order command queue. Submitters append to its command log under the
// queue's submit lock; at most one engine at a time owns a queue that has work
// ("scheduled") and reads the log without a lock, so commands run one after
// the other. Completion is a counter that anyone can read without a lock.
#pragma once

#include "command_log.hpp"
#include "spin_lock.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace mtia::sim {

class Device;

inline constexpr int32_t kPriorityLeast = 0;
inline constexpr int32_t kPriorityGreatest = -5;
inline constexpr int kPriorityLevels = kPriorityLeast - kPriorityGreatest + 1;

class Queue : public std::enable_shared_from_this<Queue> {
 public:
  // priority must already be clamped; number: creation index on the device; slowNs: injected delay.
  Queue(Device& device, int32_t priority, uint32_t number, uint64_t slowNs);

  Device& device() const { return device_; }
  int32_t priority() const { return priority_; }
  // 0 (least urgent) .. kPriorityLevels-1 (most urgent): the index of the scheduler's ready list.
  int level() const { return kPriorityLeast - priority_; }
  uint32_t number() const { return number_; }
  uint64_t slowNs() const { return slowNs_; }

  uint64_t submitted() const { return log_.published(); }
  uint64_t completed() const { return completed_.load(std::memory_order_acquire); }

  // Takes command over (Command::takeFrom) and returns its number. Hands the queue to the scheduler when
  // it was idle. Throws std::bad_alloc (command untouched).
  uint64_t submit(Command& command);

  enum class Next { Run, Empty, Blocked };
  // Engine side (the owner). Run: *out is the next command; it stays in the queue until retire().
  // Empty: nothing published beyond what ran (the queue is still scheduled: see release()).
  // Blocked: the head waits on another queue, which now holds this one as a waiter and schedules it
  // again when the wait is satisfied; the engine drops the queue.
  Next next(Command*& out);
  // Engine side: the command next() gave out has run; drop it.
  void retire() { log_.retire(); }
  // Engine side: whether commands were published beyond those retired.
  bool hasWork() const { return log_.hasWork(); }
  // Engine side, after Empty: unschedules the queue. True when the engine must drop it (idle now, or
  // a submitter already handed it to the scheduler again); false when the engine still owns it (work
  // arrived meanwhile, or the handshake's barrier failed and the queue could not be given up safely).
  bool release();
  // Engine side: command seq finished. Wakes waiting hosts and queues.
  void complete(uint64_t seq);

  // Blocks the calling host thread until command seq completed; spin first polls for a while.
  void waitFor(uint64_t seq, bool spin);

 private:
  // Registers waiter to be scheduled once command value of this queue completed; false when it
  // already has completed (nothing registered).
  bool addWaiter(std::shared_ptr<Queue> waiter, uint64_t value);
  void wakeWatchers(uint64_t seq);

  Device& device_;
  const int32_t priority_;
  const uint32_t number_;
  const uint64_t slowNs_;

  // Submitters' lock on a line of its own: the engine reads the fields above on every command.
  alignas(64) SpinLock submitMu_;  // serialises submitters (the engine never takes it)
  CommandLog log_;
  // Set by the submitter that finds the queue idle (it then hands it to the scheduler); cleared by the
  // engine that finds it empty. Together with the log's published count this is a Dekker handshake:
  // each side writes its own variable, then reads the other's, with a fence between (asymmetric_fence.hpp).
  alignas(64) std::atomic<bool> scheduled_{false};

  // Completion side, on its own cache line: engines write it, submitters mostly do not read it.
  alignas(64) std::atomic<uint64_t> completed_{0};
  // Host threads sleeping in waitFor plus queues registered as waiters. complete() takes watchMu_ only
  // when this is non-zero, which keeps completion lock-free in the common case.
  std::atomic<uint32_t> watchers_{0};
  std::mutex watchMu_;
  std::condition_variable watchCv_;
  std::vector<std::pair<std::shared_ptr<Queue>, uint64_t>> waiters_;
};

}  // namespace mtia::sim
