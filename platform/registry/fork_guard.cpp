#include "fork_guard.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace mtia::registry::fork_guard {

std::atomic<uint64_t> detail::forks{0};

namespace {

constexpr int kTracked = 64;
// fd + 1, 0 when empty: zero-initialised storage needs no constructor that could run too late.
std::atomic<int> tracked[kTracked];

void inChild() {
    for (auto& entry : tracked) {
        const int value = entry.exchange(0, std::memory_order_relaxed);
        if (value != 0) ::close(value - 1);
    }
    detail::forks.fetch_add(1, std::memory_order_relaxed);
}

void installOnce() {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, inChild); });
}

}  // namespace

void track(int fd) {
    installOnce();
    for (auto& entry : tracked) {
        int expected = 0;
        if (entry.compare_exchange_strong(expected, fd + 1, std::memory_order_relaxed)) return;
    }
    // Table full (more than 64 registries open in one process): that child keeps the description,
    // which only delays noticing the parent's death until the child exits too.
}

void untrack(int fd) {
    for (auto& entry : tracked) {
        int expected = fd + 1;
        if (entry.compare_exchange_strong(expected, 0, std::memory_order_relaxed)) return;
    }
}

}  // namespace mtia::registry::fork_guard
