// A lock for critical sections of a few instructions (copying a shared_ptr
// out of a table slot): one atomic exchange to take, one store to release,
// where std::mutex costs two read-modify-writes and a library call. A waiter
// spins briefly, then yields, so a holder that was preempted gets the CPU.
// Not for sections that block or allocate much.
#pragma once

#include <sched.h>

#include <atomic>

namespace mtia {

class SpinLock {
public:
    void lock() noexcept {
        for (;;) {
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
            for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
                if (spins < 64) {
                    relax();
                } else {
                    sched_yield();
                }
            }
        }
    }
    bool try_lock() noexcept {
        return !locked_.load(std::memory_order_relaxed) &&
               !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    }
    std::atomic<bool> locked_{false};
};

}  // namespace mtia
