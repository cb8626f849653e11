#include "scheduler.hpp"

#include "clock.hpp"
#include "cpu_relax.hpp"
#include "device.hpp"
#include "engine.hpp"
#include "topology.hpp"

#include <pthread.h>

#include <array>
#include <bit>
#include <cstdio>
#include <thread>

namespace mtia::sim {
namespace {

// An engine that ran out of work polls the ready lists this long before sleeping: back-to-back
// submissions then skip the futex wake-up, and an idle device still costs no CPU.
constexpr uint64_t kEngineSpinNs = 5'000;
// Commands an engine runs from one queue before letting same-priority queues have a turn.
constexpr int kBatch = 64;
// Commands an engine takes from its queue per lock.
constexpr size_t kTake = 16;

thread_local const Queue* tCurrentQueue = nullptr;
thread_local bool tEngineThread = false;

}  // namespace

Scheduler::Scheduler(Device& device, int32_t engines, bool bindEngines)
    : device_(device), engines_(engines), bindEngines_(bindEngines) {}

const Queue* Scheduler::currentQueue() { return tCurrentQueue; }

bool Scheduler::onEngineThread() { return tEngineThread; }

void Scheduler::start() {
  if (started_.load(std::memory_order_acquire) == engines_) return;
  std::lock_guard lock(startMu_);
  // Counted one by one, so that a failed thread creation (it throws) is retried by the next queue
  // without ever starting more than engines_ threads.
  for (int32_t i = started_.load(std::memory_order_relaxed); i < engines_; ++i) {
    // Detached on purpose: engines live as long as the process, and the device that owns them is
    // never destroyed, so exit never races with an engine touching freed state.
    idle_.fetch_add(1, std::memory_order_relaxed);  // before the engine can take work and count down
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
    readyMask_.fetch_or(1u << level, std::memory_order_release);
    wake = sleeping_ > 0;
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

std::shared_ptr<Queue> Scheduler::take() {
  const uint64_t start = monotonicNs();
  do {
    for (int i = 0; i < 32; ++i) {
      if (readyMask_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lock(mu_);
        if (std::shared_ptr<Queue> queue = popLocked()) return queue;
      }
      cpuRelax();
    }
  } while (monotonicNs() - start < kEngineSpinNs);
  std::unique_lock lock(mu_);
  for (;;) {
    if (std::shared_ptr<Queue> queue = popLocked()) return queue;
    ++sleeping_;
    wake_.wait(lock);
    --sleeping_;
  }
}

bool Scheduler::shouldYield(int level, int batch) const {
  const uint32_t mask = readyMask_.load(std::memory_order_relaxed);
  if (mask == 0) return false;
  if (batch >= kBatch && (mask >> level) != 0) return true;
  // More urgent work waits and nobody else is free to take it.
  return (mask >> (level + 1)) != 0 && idle_.load(std::memory_order_relaxed) == 0;
}

void Scheduler::run(std::shared_ptr<Queue> queue) {
  tCurrentQueue = queue.get();
  std::array<Command, kTake> taken;
  int done = 0;
  for (;;) {
    size_t count = 0;
    if (queue->next(taken.data(), taken.size(), count) != Queue::Next::Run) break;
    for (size_t i = 0; i < count; ++i) {
      execute(device_, *queue, taken[i]);
      queue->complete(taken[i].seq);
      taken[i] = Command{};  // drop its references (module, wait target) now that it completed
      if (shouldYield(queue->level(), ++done)) {
        queue->giveBack(taken.data() + i + 1, count - i - 1);
        tCurrentQueue = nullptr;
        makeReady(std::move(queue));
        return;
      }
    }
  }
  tCurrentQueue = nullptr;
}

void Scheduler::engineMain(int32_t index) {
  tEngineThread = true;
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
