#include "queue.hpp"

#include "asymmetric_fence.hpp"
#include "backoff.hpp"
#include "clock.hpp"
#include "device.hpp"
#include "scheduler.hpp"

#include <sched.h>

namespace mtia::sim {
namespace {

// A host waiting for a command polls this long before yielding, and yields this long before
// sleeping: short device work completes without a futex round trip, long work costs no CPU.
constexpr uint64_t kWaitPollNs = 20'000;
constexpr uint64_t kWaitYieldNs = 200'000;
// Its polls start this far apart and spread out to at most kWaitMaxGapNs (see waitFor).
constexpr uint64_t kWaitFirstGapNs = 25;
constexpr uint64_t kWaitMaxGapNs = 500;
// An engine that could not give a queue up (a failed barrier, see release()) waits this long to
// retry.
constexpr uint64_t kFailedBarrierPauseNs = 100'000;

}  // namespace

Queue::Queue(Device& device, int32_t priority, uint32_t number, uint64_t slowNs, uint64_t depth)
    : device_(device), priority_(priority), number_(number), slowNs_(slowNs), depth_(depth) {}

bool Queue::submit(Command& command, uint64_t& seq, std::shared_lock<std::shared_mutex>* held) {
    std::shared_ptr<Queue> self;  // keeps the queue alive once *held is unlocked
    for (;;) {
        uint64_t next = 0;
        {
            std::lock_guard lock(submitMu_);
            next = log_.published() + 1;
            // completed_ is read only when the last reading does not leave room: once per depth_ /
            // 2 submissions or so while the engine keeps up, so the line it writes stays with it.
            if (next > roomUntil_) roomUntil_ = completed() + depth_;
            if (next <= roomUntil_ || Scheduler::onEngineThread()) {
                seq = log_.append(command);
                break;
            }
        }
        // Full. Sleep until half of it drained rather than until one slot is free: one wake-up per
        // depth_ / 2 commands instead of one per command (the queue never holds more than depth_
        // anyway).
        if (held != nullptr && held->owns_lock()) {
            self = shared_from_this();
            held->unlock();
        }
        const uint64_t need = next - depth_ + depth_ / 2;
        sleepUntil(need, [&] {
            return completed_.load(std::memory_order_seq_cst) >= need || device_.faulted();
        });
        if (device_.faulted())
            return false;  // what is queued drains without running: no use queueing more
    }
    // Only the idle -> scheduled transition touches the device-wide scheduler. The plain load first
    // keeps the common case (an engine owns the queue already) free of a read-modify-write.
    // Publishing, then looking at the flag, pairs with release(): clearing the flag, then looking
    // at what was published.
    lightFence();
    if (!scheduled_.load(std::memory_order_relaxed) &&
        !scheduled_.exchange(true, std::memory_order_seq_cst))
        device_.scheduler().makeReady(shared_from_this());
    return true;
}

Queue::Next Queue::next(Command*& out) {
    Command* head = log_.front();
    if (head == nullptr) return Next::Empty;
    // A faulted device drains its queues without waiting, so nothing waits on work that will never
    // run.
    if (head->cmd.type == mtiaDrvCmdWait && !device_.faulted()) {
        const uint64_t value = head->cmd.u.wait.value;
        Queue& target = head->waitTarget();
        if (target.completed() < value && target.addWaiter(shared_from_this(), value))
            return Next::Blocked;
    }
    out = head;
    return Next::Run;
}

bool Queue::release() {
    // The engine's own position is read while it still owns the queue: once the flag is clear, a
    // submitter may hand the queue to another engine, which moves it on.
    const uint64_t retired = log_.retired();
    scheduled_.store(false, std::memory_order_seq_cst);
    if (!heavyFence()) {
        // Without the barrier a submitter may have missed the cleared flag: take the queue back
        // (unless a submitter did see it and scheduled the queue already) and try again later,
        // after a short sleep so that a barrier that keeps failing does not keep this engine
        // spinning.
        if (scheduled_.exchange(true, std::memory_order_seq_cst)) return true;
        sleepNs(kFailedBarrierPauseNs);
        return false;
    }
    if (log_.published() == retired) return true;
    // Work arrived after all. Whoever sets the flag first owns the queue: this engine, or a
    // submitter that saw it clear and has queued it with the scheduler already.
    return scheduled_.exchange(true, std::memory_order_seq_cst);
}

bool Queue::addWaiter(std::shared_ptr<Queue> waiter, uint64_t value) {
    std::lock_guard lock(watchMu_);
    waiters_.emplace_back(std::move(waiter), value);
    // Announce first, then look: complete() stores first, then looks at watchers_, so one of the
    // two sees the other (both sequentially consistent).
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
    // Both loads follow the store (sequentially consistent), as a sleeper's announcement precedes
    // its look at completed_ (addWaiter, sleepUntil): one of the two sides sees the other.
    if (watchers_.load(std::memory_order_seq_cst) != 0) wakeWatchers(seq);
    if (hostWakeAt_.load(std::memory_order_seq_cst) <= seq) wakeHosts();
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
    for (std::shared_ptr<Queue>& q : ready) {
        Device& device = q->device();
        device.scheduler().makeReady(std::move(q));
    }
}

void Queue::wakeHosts() {
    {
        // Sleepers that still wait announce themselves again once awake.
        std::lock_guard lock(watchMu_);
        hostWakeAt_.store(UINT64_MAX, std::memory_order_seq_cst);
    }
    watchCv_.notify_all();
}

template <class Done>
void Queue::sleepUntil(uint64_t need, Done&& done) {
    std::unique_lock lock(watchMu_);
    while (!done()) {
        // Announce first, then look (done() reads completed_): complete() stores first, then looks
        // at hostWakeAt_. Every write of hostWakeAt_ happens under watchMu_, so a plain minimum is
        // safe.
        if (need < hostWakeAt_.load(std::memory_order_relaxed))
            hostWakeAt_.store(need, std::memory_order_seq_cst);
        if (done()) break;
        watchCv_.wait(lock);
    }
}

void Queue::waitFor(uint64_t seq, bool spin) {
    if (completed() >= seq) return;
    if (spin) {
        // The engine writes the completion counter after every command: polling it at growing gaps
        // keeps the waiter from slowing down an engine that runs a long stretch of short commands.
        Backoff backoff(kWaitFirstGapNs, kWaitMaxGapNs);
        for (;;) {
            if (completed() >= seq) return;
            const uint64_t waited = backoff.pause() - backoff.start();
            if (waited >= kWaitPollNs + kWaitYieldNs) break;
            if (waited >= kWaitPollNs) sched_yield();
        }
    }
    sleepUntil(seq, [&] { return completed_.load(std::memory_order_seq_cst) >= seq; });
}

}  // namespace mtia::sim
