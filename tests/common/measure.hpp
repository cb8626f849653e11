// Measurements of the test process itself: CPU time, resident memory, open descriptors and threads
// (for tests that check that the runtime neither spins, leaks nor leaves threads behind).
#pragma once

#include <cstdint>

#include "eventually.hpp"

namespace mtia_test {

// CPU time the calling thread has used.
Clock::duration threadCpuTime();
// Resident set size of the process in bytes (from /proc/self/statm); -1 when unreadable.
int64_t residentBytes();
// Open file descriptors and threads of the process (from /proc/self); -1 when unreadable.
int openFds();
int threadCount();

inline double ms(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

// Whether a sanitizer that keeps freed memory around (ASan's quarantine) or wraps the allocator is
// built in: resident-memory growth then says nothing about the runtime. (Evaluated where a test is
// compiled, so it stays in the header.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace mtia_test
