// The lock between a queue's submitters and the engine that runs it. Both
// hold it for a few moves of commands, but under std::mutex the two sides
// collided often enough to sleep in the kernel on every other submission; a
// spin lock that yields after a short spin keeps both in user space.
// (The sim is built against the driver ABI only, so it has its own.)
#pragma once

#include "cpu_relax.hpp"

#include <sched.h>

#include <atomic>

namespace mtia::sim {

class SpinLock {
public:
    void lock() noexcept {
        while (locked_.exchange(true, std::memory_order_acquire)) {
            for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
                if (spins < 128)
                    cpuRelax();
                else
                    sched_yield();  // the holder may have been preempted
            }
        }
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> locked_{false};
};

}  // namespace mtia::sim
