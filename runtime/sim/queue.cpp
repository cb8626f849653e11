#include "queue.hpp"

#include "clock.hpp"
#include "cpu_relax.hpp"
#include "device.hpp"
#include "scheduler.hpp"

#include <sched.h>

namespace mtia::sim {
namespace {

// A host waiting for a command polls this long before yielding, and yields this long before sleeping:
// short device work completes without a futex round trip, long work costs no CPU.
constexpr uint64_t kWaitPollNs = 20'000;
constexpr uint64_t kWaitYieldNs = 200'000;

}  // namespace

Queue::Queue(Device& device, int32_t priority, uint32_t number, uint64_t slowNs)
    : device_(device), priority_(priority), number_(number), slowNs_(slowNs) {}

uint64_t Queue::submit(Command&& command) {
  uint64_t seq = 0;
  bool wasIdle = false;
  {
    std::lock_guard lock(mu_);
    seq = submitted_.load(std::memory_order_relaxed) + 1;
    command.seq = seq;
    ring_.push(std::move(command));
    submitted_.store(seq, std::memory_order_release);
    wasIdle = !scheduled_;
    scheduled_ = true;
  }
  // Only the idle -> scheduled transition touches the device-wide scheduler.
  if (wasIdle) device_.scheduler().makeReady(shared_from_this());
  return seq;
}

Queue::Next Queue::next(Command* out, size_t max, size_t& count) {
  count = 0;
  std::lock_guard lock(mu_);
  if (ring_.empty()) {
    scheduled_ = false;
    return Next::Idle;
  }
  Command& head = ring_.front();
  // A faulted device drains its queues without waiting, so nothing waits on work that will never run.
  if (head.cmd.type == mtiaDrvCmdWait && !device_.faulted()) {
    const uint64_t value = head.cmd.u.wait.value;
    Queue& target = *head.waitTarget;
    if (target.completed() < value && target.addWaiter(shared_from_this(), value)) return Next::Blocked;
  }
  ring_.pop(out[count++]);
  // Later waits are decided when they reach the head.
  while (count < max && !ring_.empty() && ring_.front().cmd.type != mtiaDrvCmdWait) ring_.pop(out[count++]);
  return Next::Run;
}

void Queue::giveBack(Command* commands, size_t count) {
  std::lock_guard lock(mu_);
  for (size_t i = count; i > 0; --i) ring_.pushFront(std::move(commands[i - 1]));
}

bool Queue::addWaiter(std::shared_ptr<Queue> waiter, uint64_t value) {
  std::lock_guard lock(watchMu_);
  waiters_.emplace_back(std::move(waiter), value);
  // Announce first, then look: complete() stores first, then looks at watchers_, so one of the two
  // sees the other (both sequentially consistent).
  watchers_.fetch_add(1, std::memory_order_seq_cst);
  if (completed_.load(std::memory_order_seq_cst) >= value) {
    waiters_.pop_back();
    watchers_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void Queue::complete(uint64_t seq) {
  completed_.store(seq, std::memory_order_seq_cst);
  if (watchers_.load(std::memory_order_seq_cst) != 0) wakeWatchers(seq);
}

void Queue::wakeWatchers(uint64_t seq) {
  std::vector<std::shared_ptr<Queue>> ready;
  {
    std::lock_guard lock(watchMu_);
    for (size_t i = 0; i < waiters_.size();) {
      if (waiters_[i].second <= seq) {
        ready.push_back(std::move(waiters_[i].first));
        waiters_[i] = std::move(waiters_.back());
        waiters_.pop_back();
        watchers_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        ++i;
      }
    }
  }
  watchCv_.notify_all();
  for (std::shared_ptr<Queue>& q : ready) {
    Device& device = q->device();
    device.scheduler().makeReady(std::move(q));
  }
}

void Queue::waitFor(uint64_t seq, bool spin) {
  if (completed() >= seq) return;
  if (spin) {
    const uint64_t start = monotonicNs();
    uint64_t now = start;
    while (now - start < kWaitPollNs + kWaitYieldNs) {
      for (int i = 0; i < 64; ++i) {
        if (completed() >= seq) return;
        cpuRelax();
      }
      now = monotonicNs();
      if (now - start >= kWaitPollNs) sched_yield();
    }
  }
  watchers_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock lock(watchMu_);
    watchCv_.wait(lock, [&] { return completed_.load(std::memory_order_seq_cst) >= seq; });
  }
  watchers_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace mtia::sim
