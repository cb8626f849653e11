// The pause hint for spin-wait loops (saves power and lets a sibling hyperthread run).
#pragma once

namespace mtia::sim {

inline void cpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

}  // namespace mtia::sim
