#include "test_hooks.hpp"

#include <atomic>

namespace mtia::registry::testing {
namespace {
std::atomic<Hook> hook{nullptr};
}

void setHook(Hook h) {
    hook.store(h, std::memory_order_release);
}

void runHook(Point point) {
    if (Hook h = hook.load(std::memory_order_acquire)) h(point);
}

}  // namespace mtia::registry::testing
