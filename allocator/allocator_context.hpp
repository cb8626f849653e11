// What the device allocators of a process share: the settings, the
// history recorder, the out-of-memory observers, the free-memory callbacks and the counter behind
// fresh pool ids. Observers and callbacks are called with no allocator lock
// held, so they may allocate and free themselves.
#pragma once

#include "allocator/alloc_config.hpp"
#include "allocator/history/history_recorder.hpp"
#include "allocator/pool_id.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

namespace mtia::allocator {

class AllocatorContext {
public:
    using OomObserver = void (*)(int dev, size_t requested, size_t total, size_t free, void* user);
    using FreeMemoryCallback = int (*)(int dev, size_t requested, void* user);

    explicit AllocatorContext(const AllocConfig& initial) : config_(initial) {}

    // Thread-safe.
    AllocConfig config() const;
    void setConfig(const AllocConfig& config);

    // Observers and callbacks stay for the life of the process. Thread-safe.
    void addOomObserver(OomObserver cb, void* user);
    void addFreeMemoryCallback(FreeMemoryCallback cb, void* user);
    bool hasFreeMemoryCallbacks() const noexcept {
        return callbackCount_.load(std::memory_order_acquire) != 0;
    }
    // Calls every observer; the caller holds no allocator lock.
    void notifyOom(int dev, size_t requested, size_t total, size_t free) const;
    // Calls every callback; true when one of them says it freed something.
    bool runFreeMemoryCallbacks(int dev, size_t requested) const;

    // Memory-history recording: settings, contexts, annotations (history_recorder.hpp).
    HistoryRecorder& history() noexcept { return history_; }

    // A fresh {0, n} pool id (n from 1, never repeated). Thread-safe.
    PoolId newPoolId() noexcept {
        return PoolId{0, nextPool_.fetch_add(1, std::memory_order_relaxed)};
    }

private:
    template <class Fn>
    struct Entry {
        Fn fn;
        void* user;
    };

    mutable std::mutex mu_;
    AllocConfig config_;
    std::vector<Entry<OomObserver>> observers_;
    std::vector<Entry<FreeMemoryCallback>> callbacks_;
    std::atomic<size_t> callbackCount_{0};
    std::atomic<uint64_t> nextPool_{1};
    HistoryRecorder history_;
};

}  // namespace mtia::allocator
