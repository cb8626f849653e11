// Fences for a handshake whose two sides run at very different rates: a
// submitter publishes a command and then reads whether an engine owns the
// queue (every submission), and an engine clears its ownership and then reads
// whether anything was published (only when a queue runs idle). Both need
// store-then-load ordering. With membarrier(2), the frequent side gets away
// with a compiler barrier and the rare side pays for a process-wide barrier;
// without it (old kernels, seccomp filters, TSan builds, which do not model
// it), both sides use a full fence.
#pragma once

#include <atomic>

namespace mtia::sim {

// Whether heavyFence() is a process-wide barrier. Decided once, thread-safe.
bool asymmetricFencesAvailable() noexcept;

// A full fence whatever the build (TSan does not support std::atomic_thread_fence).
inline void fullFence() noexcept {
#if defined(__x86_64__)
    asm volatile("lock orl $0, (%%rsp)" ::: "memory", "cc");
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// The frequent side's fence, between its store and its load.
inline void lightFence() noexcept {
    if (asymmetricFencesAvailable()) {
        std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
        fullFence();
    }
}

// The rare side's fence, between its store and its load: orders against every thread of the
// process. False when membarrier failed after it had been set up (the kernel ran out of memory for
// the call): the frequent side fenced only the compiler, so the handshake must not rely on this
// round.
[[nodiscard]] bool heavyFence() noexcept;

}  // namespace mtia::sim
