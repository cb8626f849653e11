// Forked children start with no registration. The child inherits the
// parent's lock-file descriptor, and an open file description held by a
// child would keep the parent's slot "alive" after the parent dies; so a
// pthread_atfork child handler closes every tracked descriptor and bumps a
// generation that each Registry compares (one relaxed load) before use.
#pragma once

#include <atomic>
#include <cstdint>

namespace mtia::registry::fork_guard {

namespace detail {
extern std::atomic<uint64_t> forks;  // bumped by the child handler
}  // namespace detail

// Close fd in every future forked child (until untrack). Installs the handler on first use.
void track(int fd);
void untrack(int fd);
// Bumped in the child by each fork. One relaxed load: registries check it on their hot paths.
inline uint64_t generation() {
    return detail::forks.load(std::memory_order_relaxed);
}

}  // namespace mtia::registry::fork_guard
