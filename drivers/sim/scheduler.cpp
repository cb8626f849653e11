#include "scheduler.hpp"

#include "backoff.hpp"
#include "clock.hpp"
#include "cpu_relax.hpp"
#include "device.hpp"
#include "engine.hpp"
#include "kernel_signals.hpp"
#include "machine.hpp"
#include "topology.hpp"

#include <pthread.h>
#include <sched.h>

#include <array>
#include <bit>
#include <cstdio>
#include <thread>

namespace mtia::sim {
namespace {

// The engine that ran out of work first polls the ready lists this long before sleeping (yielding
// between looks after kEngineBusySpinNs): back-to-back submissions then skip the futex wake-up, and
// an idle device costs no CPU once it passed.
constexpr uint64_t kEngineBusySpinNs = 20'000;
constexpr uint64_t kEngineSpinNs = 2'000'000;
// Commands an engine runs from one queue before letting same-priority queues have a turn.
constexpr int kBatch = 64;
// An engine whose queue ran empty watches it this long for more before giving it up (unless other
// queues are ready): a stream fed in a steady trickle then stays with its engine.
constexpr uint64_t kLingerNs = 3'000;
constexpr uint64_t kLingerFirstGapNs = 32;
constexpr uint64_t kLingerMaxGapNs = 256;

thread_local const Queue* tCurrentQueue = nullptr;
thread_local bool tEngineThread = false;

}  // namespace

Scheduler::Scheduler(Device& device, int32_t engines, bool bindEngines)
    : device_(device), engines_(engines), bindEngines_(bindEngines) {}

const Queue* Scheduler::currentQueue() {
    return tCurrentQueue;
}

bool Scheduler::onEngineThread() {
    return tEngineThread;
}

void Scheduler::start() {
    if (started_.load(std::memory_order_acquire) == engines_) return;
    std::lock_guard lock(startMu_);
    // Counted one by one, so that a failed thread creation (it throws) is retried by the next queue
    // without ever starting more than engines_ threads.
    for (int32_t i = started_.load(std::memory_order_relaxed); i < engines_; ++i) {
        // Detached on purpose: engines live as long as the process, and the device that owns them
        // is never destroyed, so exit never races with an engine touching freed state.
        idle_.fetch_add(
            1, std::memory_order_relaxed);  // before the engine can take work and count down
        try {
            std::thread(&Scheduler::engineMain, this, i).detach();
        } catch (...) {
            idle_.fetch_sub(1, std::memory_order_relaxed);
            throw;
        }
        started_.store(i + 1, std::memory_order_release);
    }
}

void Scheduler::makeReady(std::shared_ptr<Queue> queue) {
    const int level = queue->level();
    bool wake = false;
    {
        std::lock_guard lock(mu_);
        ready_[static_cast<size_t>(level)].push_back(std::move(queue));
        readyMask_.fetch_or(1u << level, std::memory_order_seq_cst);
        // A polling engine will find it; it wakes a sleeper itself if more work is waiting. An
        // engine that stops polling clears spinner_ before it takes mu_ to sleep, so it sees this
        // queue either way.
        wake = sleeping_ > 0 && !spinner_.load(std::memory_order_seq_cst);
    }
    if (wake) wake_.notify_one();
}

std::shared_ptr<Queue> Scheduler::popLocked() {
    const uint32_t mask = readyMask_.load(std::memory_order_relaxed);
    if (mask == 0) return nullptr;
    const int level = 31 - std::countl_zero(mask);  // the most urgent non-empty list
    auto& list = ready_[static_cast<size_t>(level)];
    std::shared_ptr<Queue> queue = std::move(list.front());
    list.pop_front();
    if (list.empty()) readyMask_.fetch_and(~(1u << level), std::memory_order_relaxed);
    return queue;
}

std::shared_ptr<Queue> Scheduler::tryPop() {
    if (readyMask_.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(mu_);
    return popLocked();
}

std::shared_ptr<Queue> Scheduler::spin() {
    const uint64_t start = monotonicNs();
    uint64_t now = start;
    do {
        for (int i = 0; i < 64; ++i) {
            if (std::shared_ptr<Queue> queue = tryPop()) return queue;
            cpuRelax();
        }
        now = monotonicNs();
        // Past the first stretch, give the CPU to anything else runnable between looks.
        if (now - start > kEngineBusySpinNs) sched_yield();
    } while (now - start < kEngineSpinNs);
    return nullptr;
}

std::shared_ptr<Queue> Scheduler::take() {
    // One idle engine per device polls for new work; the others sleep. Submissions in a steady
    // stream then never pay for a futex wake-up, and an idle device costs at most one polling
    // thread, for kEngineSpinNs.
    bool expected = false;
    if (spinner_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        std::shared_ptr<Queue> queue = spin();
        spinner_.store(false, std::memory_order_seq_cst);
        if (queue) {
            // More work is ready than this engine takes: hand it to a sleeping engine.
            if (readyMask_.load(std::memory_order_acquire) != 0) wakeOne();
            return queue;
        }
    }
    std::unique_lock lock(mu_);
    for (;;) {
        if (std::shared_ptr<Queue> queue = popLocked()) {
            // Queues that arrived while a poller was about did not wake anyone: pass the wake-up
            // along.
            const bool more = readyMask_.load(std::memory_order_relaxed) != 0 && sleeping_ > 0;
            lock.unlock();
            if (more) wake_.notify_one();
            return queue;
        }
        ++sleeping_;
        wake_.wait(lock);
        --sleeping_;
    }
}

void Scheduler::wakeOne() {
    bool wake = false;
    {
        std::lock_guard lock(mu_);
        wake = sleeping_ > 0;
    }
    if (wake) wake_.notify_one();
}

bool Scheduler::shouldYield(int level, int batch) const {
    const uint32_t mask = readyMask_.load(std::memory_order_relaxed);
    if (mask == 0) return false;
    if (batch >= kBatch && (mask >> level) != 0) return true;
    // More urgent work waits and nobody else is free to take it.
    return (mask >> (level + 1)) != 0 && idle_.load(std::memory_order_relaxed) == 0;
}

bool Scheduler::linger(const Queue& queue) const {
    // Each look at the queue's next slot pulls the line a submitter is about to write; growing gaps
    // let it write several commands undisturbed.
    Backoff backoff(kLingerFirstGapNs, kLingerMaxGapNs);
    for (;;) {
        if (queue.hasWork()) return true;
        if (readyMask_.load(std::memory_order_relaxed) != 0)
            return false;  // others need the engine
        if (backoff.pause() - backoff.start() >= kLingerNs) return false;
    }
}

namespace {

// Engine time spent on this process's commands, added to its registry slot once per run() (one
// relaxed add). Timed per stretch of back-to-back commands, not per command: two clock reads per
// stretch, none at all before the process registered (it holds no device memory then, and nothing
// could show the figure). The engine's linger for more work (kLingerNs) counts as busy, so that a
// stream fed at the engine's pace costs no clock read per command: measured +5 ns per empty-kernel
// launch in batches.
class BusyTime {
public:
    explicit BusyTime(Device& device)
        : device_(device), on_(device.machine().registry().isOpen()) {}
    ~BusyTime() {
        pause();
        if (ns_ != 0) device_.machine().registry().addBusy(device_.index(), ns_, end_);
    }
    void resume() {
        if (on_ && !running_) {
            start_ = monotonicNs();
            running_ = true;
        }
    }
    void pause() {
        if (running_) {
            end_ = monotonicNs();
            ns_ += end_ - start_;
            running_ = false;
        }
    }

private:
    Device& device_;
    const bool on_;
    bool running_ = false;
    uint64_t start_ = 0;
    uint64_t end_ = 0;  // of the latest stretch
    uint64_t ns_ = 0;
};

}  // namespace

void Scheduler::run(std::shared_ptr<Queue> queue) {
    tCurrentQueue = queue.get();
    int done = 0;
    BusyTime busy(device_);
    for (;;) {
        Command* command = nullptr;
        const Queue::Next next = queue->next(command);
        if (next == Queue::Next::Blocked) break;
        if (next == Queue::Next::Empty) {
            if (linger(*queue)) continue;  // the short linger counts as busy: no clock read per gap
            busy.pause();
            if (queue->release()) break;
            continue;
        }
        busy.resume();
        execute(device_, *queue, *command);
        const uint64_t seq = command->seq;
        queue->retire();  // drops its references (module, wait target) before anyone sees it
                          // complete
        queue->complete(seq);
        if (shouldYield(queue->level(), ++done)) {
            tCurrentQueue = nullptr;
            makeReady(std::move(queue));  // still scheduled: it goes to the back of its ready list
            return;
        }
    }
    tCurrentQueue = nullptr;
}

void Scheduler::engineMain(int32_t index) {
    tEngineThread = true;
    const EngineSignals signals;  // kernels' faults become device faults (kernel_signals.hpp)
    char name[16];
    snprintf(name, sizeof(name), "mtia-sim%d.%d", device_.index() % 100, index % 100);
    pthread_setname_np(pthread_self(), name);
    if (bindEngines_) Topology::instance().bindThreadNearDevice(device_.index());
    for (;;) {
        std::shared_ptr<Queue> queue = take();
        idle_.fetch_sub(1, std::memory_order_relaxed);
        run(std::move(queue));
        idle_.fetch_add(1, std::memory_order_relaxed);
    }
}

}  // namespace mtia::sim
