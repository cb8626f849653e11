// Handles given out at the C ABI are not pointers but encoded slot numbers
// with a generation count: a stale, destroyed, double-destroyed or foreign
// handle fails lookup instead of touching freed memory.
//
// Encoding (64 bits): tag (8) | generation (24) | slot index (32). Tags are
// >= 0x80, so an encoded handle is never a user-space address and a real
// pointer passed by mistake never decodes to a live slot.
#pragma once

#include "core/spin_lock.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace mtia {

template <typename T>
class HandleTable {
public:
    using Ptr = std::shared_ptr<T>;

    explicit HandleTable(uint8_t tag) : tag_(tag), id_(nextTableId()) {}

    // Stores obj and returns its handle. Thread-safe.
    uint64_t insert(Ptr obj) {
        std::lock_guard lock(mu_);
        uint32_t index;
        if (!free_.empty()) {
            index = free_.back();
            free_.pop_back();
        } else {
            index = static_cast<uint32_t>(slots_.size());
            slots_.emplace_back();
        }
        Slot& s = slots_[index];
        s.obj = std::move(obj);
        return encode(index, s.generation);
    }

    // A looked-up object held without touching its reference count: borrowed from the calling
    // thread's lookup cache, which keeps it alive until this thread's next lookup in a table of the
    // same type, or owning a reference when the cache cannot be used (the thread is exiting).
    class Ref {
    public:
        Ref() = default;
        explicit Ref(T* borrowed) noexcept : ptr_(borrowed) {}
        explicit Ref(Ptr owned) noexcept : ptr_(owned.get()), owned_(std::move(owned)) {}
        T* get() const noexcept { return ptr_; }
        T* operator->() const noexcept { return ptr_; }
        T& operator*() const noexcept { return *ptr_; }
        explicit operator bool() const noexcept { return ptr_ != nullptr; }

    private:
        T* ptr_ = nullptr;
        Ptr owned_;
    };

    // The object behind handle, or null when the handle is not live. Thread-safe.
    Ptr lookup(uint64_t handle) const {
        Ptr uncached;
        const Ptr* found = find(handle, uncached);
        return found != nullptr ? *found : nullptr;
    }

    // Like lookup(), without a reference count update on the common path; see Ref for how long the
    // object stays alive. One borrowed Ref per table type at a time. Thread-safe.
    Ref borrow(uint64_t handle) const {
        Ptr uncached;
        const Ptr* found = find(handle, uncached);
        if (found == nullptr) return Ref();
        if (found == &uncached) return Ref(std::move(uncached));
        return Ref(found->get());
    }

    // Removes handle and returns its object (null when not live). Thread-safe.
    Ptr remove(uint64_t handle) {
        std::lock_guard lock(mu_);
        Slot* s = const_cast<Slot*>(slot(handle));
        if (s == nullptr) return nullptr;
        Ptr obj = std::move(s->obj);
        s->obj.reset();
        removals_.fetch_add(1,
                            std::memory_order_release);  // invalidates every thread's cached lookup
        s->generation = (s->generation + 1) & kGenerationMask;
        if (s->generation == 0) s->generation = 1;
        free_.push_back(static_cast<uint32_t>(s - slots_.data()));
        return obj;
    }

    size_t size() const {
        std::lock_guard lock(mu_);
        return slots_.size() - free_.size();
    }

    // Every live handle with its object, at one moment (device reset picks what to remove from it).
    // Thread-safe.
    std::vector<std::pair<uint64_t, Ptr>> entries() const {
        std::vector<std::pair<uint64_t, Ptr>> all;
        std::lock_guard lock(mu_);
        for (size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].obj)
                all.emplace_back(encode(static_cast<uint32_t>(i), slots_[i].generation),
                                 slots_[i].obj);
        return all;
    }

private:
    static constexpr uint32_t kGenerationMask = 0xffffff;
    struct Cache {
        // The main thread's thread-locals are destroyed when exit() starts, before atexit handlers
        // and static destructors that may still call the runtime; from then on the cache is
        // bypassed.
        ~Cache() {
            obj.reset();
            alive = false;
        }
        bool alive = true;
        uint64_t table = 0;  // id_ of the table (ids are never reused, addresses may be)
        uint64_t handle = 0;
        uint64_t epoch = 0;
        Ptr obj;
    };
    static Cache& threadCache() {
        thread_local Cache cache;
        return cache;
    }
    // A thread that looks up the same handle again (a stream it launches on, a kernel it launches)
    // is answered from its own one-entry cache, without the lock, while no handle of the table was
    // removed since; the cached reference only delays the destruction of an object removed
    // meanwhile. Returns the cache's reference, or &uncached when the cache is unusable, or null
    // when handle is not live.
    const Ptr* find(uint64_t handle, Ptr& uncached) const {
        Cache& cache = threadCache();
        if (cache.alive && cache.table == id_ && cache.handle == handle &&
            cache.epoch == removals_.load(std::memory_order_acquire))
            return &cache.obj;
        Ptr obj;
        uint64_t epoch = 0;
        {
            std::lock_guard lock(mu_);
            const Slot* s = slot(handle);
            if (s == nullptr) return nullptr;
            obj = s->obj;
            epoch = removals_.load(std::memory_order_relaxed);
        }
        if (!cache.alive) {  // the thread is exiting: do not cache
            uncached = std::move(obj);
            return &uncached;
        }
        cache.table = id_;
        cache.handle = handle;
        cache.epoch = epoch;
        cache.obj = std::move(obj);
        return &cache.obj;
    }
    static uint64_t nextTableId() {
        static std::atomic<uint64_t> next{1};
        return next.fetch_add(1, std::memory_order_relaxed);
    }
    struct Slot {
        uint32_t generation = 1;
        Ptr obj;
    };

    uint64_t encode(uint32_t index, uint32_t generation) const {
        return (uint64_t{tag_} << 56) | (uint64_t{generation} << 32) | index;
    }

    const Slot* slot(uint64_t handle) const {
        if ((handle >> 56) != tag_) return nullptr;
        uint32_t index = static_cast<uint32_t>(handle);
        uint32_t generation = static_cast<uint32_t>(handle >> 32) & kGenerationMask;
        if (index >= slots_.size()) return nullptr;
        const Slot& s = slots_[index];
        if (s.generation != generation || !s.obj) return nullptr;
        return &s;
    }

    const uint8_t tag_;
    const uint64_t id_;
    std::atomic<uint64_t> removals_{0};  // written under mu_
    mutable SpinLock
        mu_;  // sections are a lookup and a shared_ptr copy (insert may grow the vectors)
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
};

// Encoded handles travel through the C ABI as its opaque pointer types.
template <typename H>
H toHandle(uint64_t v) {
    return reinterpret_cast<H>(static_cast<uintptr_t>(v));
}
template <typename H>
uint64_t fromHandle(H h) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
}

// Tags of the handle kinds (one per C handle type).
enum HandleTag : uint8_t {
    kTagStream = 0xA1,
    kTagEvent = 0xA2,
    kTagModule = 0xA3,
    kTagFunction = 0xA4,
    kTagGraph = 0xA5,
};

}  // namespace mtia
