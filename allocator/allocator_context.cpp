#include "allocator/allocator_context.hpp"

namespace mtia::allocator {

AllocConfig AllocatorContext::config() const {
    std::lock_guard lock(mu_);
    return config_;
}

void AllocatorContext::setConfig(const AllocConfig& config) {
    std::lock_guard lock(mu_);
    config_ = config;
}

void AllocatorContext::addOomObserver(OomObserver cb, void* user) {
    std::lock_guard lock(mu_);
    observers_.push_back({cb, user});
}

void AllocatorContext::addFreeMemoryCallback(FreeMemoryCallback cb, void* user) {
    std::lock_guard lock(mu_);
    callbacks_.push_back({cb, user});
    callbackCount_.store(callbacks_.size(), std::memory_order_release);
}

// Both walk a copy: a callback may register another one.
void AllocatorContext::notifyOom(int dev, size_t requested, size_t total, size_t free) const {
    std::vector<Entry<OomObserver>> copy;
    {
        std::lock_guard lock(mu_);
        copy = observers_;
    }
    for (const auto& o : copy) o.fn(dev, requested, total, free, o.user);
}

bool AllocatorContext::runFreeMemoryCallbacks(int dev, size_t requested) const {
    std::vector<Entry<FreeMemoryCallback>> copy;
    {
        std::lock_guard lock(mu_);
        copy = callbacks_;
    }
    bool freed = false;
    for (const auto& c : copy) freed |= c.fn(dev, requested, c.user) != 0;
    return freed;
}

}  // namespace mtia::allocator
