#include "allocator/host_allocator.hpp"

#include "allocator/host_numa.hpp"
#include "allocator/host_pages.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace mtia::allocator {
namespace {

// The background thread polls pending blocks at growing gaps while any is pending: a block becomes
// reusable at most a millisecond after its streams finished, and an idle allocator costs nothing
// (the thread sleeps until a free makes a block pending).
constexpr std::chrono::microseconds kFirstPollGap{50};
constexpr std::chrono::microseconds kLastPollGap{1000};

}  // namespace

size_t hostSizeClass(size_t size) {
    constexpr size_t kLargestClass = (SIZE_MAX >> 1) + 1;
    if (size > kLargestClass)
        fail(mtiaErrorInvalidValue,
             "size {} is too large (pinned blocks are powers of two of at most {} bytes)", size,
             kLargestClass);
    return std::max(std::bit_ceil(size), hostPageSize());
}

HostAllocator::HostAllocator(const AllocConfig& config) noexcept {
    setConfig(config);
}

HostAllocator::~HostAllocator() {
    stopBackgroundThread();
    std::lock_guard lock(mu_);
    for (const auto& [base, b] : blocks_) unmapBlock(*b);
}

void* HostAllocator::allocate(size_t size, int numaNode) {
    const size_t capacity = hostSizeClass(size);
    const int node = usableHostNode(numaNode);
    if (node != numaNode)
        log(LogLevel::Debug,
            "pinned host memory: NUMA node {} is not usable on this host; no placement", numaNode);
    {
        Released released;
        std::lock_guard lock(mu_);
        if (!background_) pollPendingLocked(released);
        auto it = cached_.find({node, capacity});
        if (it != cached_.end() && !it->second.empty()) {
            // The most recently freed block first: its pages are the likeliest to be warm in the
            // caches.
            Block* b = it->second.back();
            it->second.pop_back();
            b->state = State::Live;
            b->requested = size;
            live_.fetch_add(1, std::memory_order_relaxed);
            return b->base;
        }
    }
    std::unique_ptr<Block> fresh = mapBlock(size, capacity, node);
    void* base = fresh->base;
    try {
        std::lock_guard lock(mu_);
        blocks_.emplace(reinterpret_cast<uintptr_t>(base), std::move(fresh));
        ++counters_.mapCount;
        live_.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {  // the map could not grow: the block was never handed out
        if (fresh) unmapBlock(*fresh);
        throw;
    }
    return base;
}

std::unique_ptr<HostAllocator::Block> HostAllocator::mapBlock(size_t size, size_t capacity,
                                                              int node) {
    void* base = mapHostPages(capacity);
    if (base == nullptr) {
        // Memory idle in the cache may be what the OS is missing.
        emptyCache();
        base = mapHostPages(capacity);
    }
    if (base == nullptr) {
        const int err = errno;
        fail(mtiaErrorMemoryAllocation,
             "out of host memory: cannot map {} bytes (the size class of a {}-byte request): {}",
             capacity, size, std::strerror(err));
    }
    std::unique_ptr<Block> b;
    try {
        b = std::make_unique<Block>();
    } catch (...) {
        unmapHostPages(base, capacity);
        throw;
    }
    b->base = base;
    b->capacity = capacity;
    b->requested = size;
    b->node = node;
    // Placement first: locking and touching fault the pages in, and the policy only steers new
    // pages.
    b->placed = node >= 0 && preferHostNode(base, capacity, node);
    if (reserveLockBudget(capacity)) {
        b->locked = lockHostPages(base, capacity);
        if (!b->locked) lockedBytes_.fetch_sub(capacity, std::memory_order_relaxed);
    }
    if (!b->locked) touchHostPages(base, capacity);
    return b;
}

void HostAllocator::unmapBlock(const Block& b) noexcept {
    unmapHostPages(b.base, b.capacity);
    if (b.locked) lockedBytes_.fetch_sub(b.capacity, std::memory_order_relaxed);
}

bool HostAllocator::reserveLockBudget(size_t bytes) noexcept {
    // The limit is honoured by our own count even where the kernel would not enforce it (a process
    // with CAP_IPC_LOCK): RLIMIT_MEMLOCK is what the administrator allows, and tests can rely on
    // it. The limit is read each time because the process may change it.
    const size_t limit = hostLockLimit();
    size_t current = lockedBytes_.load(std::memory_order_relaxed);
    do {
        if (limit != SIZE_MAX && (bytes > limit || current > limit - bytes)) return false;
    } while (
        !lockedBytes_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
    return true;
}

HostAllocator::Block* HostAllocator::containingLocked(uintptr_t p) const {
    auto it = blocks_.upper_bound(p);
    if (it == blocks_.begin()) return nullptr;
    --it;
    Block* b = it->second.get();
    return p - it->first < b->capacity ? b : nullptr;
}

void HostAllocator::free(void* ptr) {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    Released released;
    std::lock_guard lock(mu_);
    Block* b = containingLocked(p);
    if (b == nullptr) fail(mtiaErrorInvalidValue, "ptr {} is not memory from mtiaMallocHost", ptr);
    if (b->state != State::Live)
        fail(mtiaErrorInvalidValue, "ptr {} was already freed (mtiaFreeHost)", ptr);
    if (b->base != ptr)
        fail(mtiaErrorInvalidValue,
             "ptr {} lies inside the mtiaMallocHost allocation at {} ({} bytes); pass its start",
             ptr, b->base, b->requested);
    // The work each recorded stream has queued so far is what may still touch the block; work
    // queued later belongs to whoever gets the block next.
    for (StreamUse& use : b->uses) {
        try {
            use.seq = use.stream->lastSubmitted();
        } catch (const std::exception& e) {
            // A driver that cannot count its queue: the block is never reused rather than reused
            // too early.
            use.seq = UINT64_MAX;
            log(LogLevel::Warn, "pinned host block {} stays unused: {}", b->base, e.what());
        }
    }
    // Out of host memory below (std::bad_alloc) leaves the block live, so the caller may free it
    // again.
    if (finished(b->uses, released)) {
        cacheLocked(b, released);
    } else {
        pending_.push_back(b);
        b->state = State::Pending;
        if (background_) wake_.notify_one();
    }
    live_.fetch_sub(1, std::memory_order_relaxed);
}

HostAllocator::Block* HostAllocator::liveLocked(const void* hostPtr) const {
    const auto p = reinterpret_cast<uintptr_t>(hostPtr);
    Block* b = containingLocked(p);
    if (b == nullptr || b->state != State::Live ||
        p - reinterpret_cast<uintptr_t>(b->base) >= b->requested)
        fail(mtiaErrorInvalidValue, "hostPtr {} is not inside a live mtiaMallocHost allocation{}",
             hostPtr, b != nullptr && b->state != State::Live ? " (it was freed)" : "");
    return b;
}

void HostAllocator::checkLive(const void* hostPtr) const {
    std::lock_guard lock(mu_);
    liveLocked(hostPtr);
}

void HostAllocator::recordStream(const void* hostPtr, std::shared_ptr<streams::Stream> stream) {
    std::lock_guard lock(mu_);
    Block* b = liveLocked(hostPtr);
    for (const StreamUse& use : b->uses)
        if (use.stream == stream) return;
    b->uses.push_back(StreamUse{std::move(stream), 0});
}

std::optional<HostBlockInfo> HostAllocator::find(const void* ptr) const noexcept {
    // Copies of pageable memory ask too; with no pinned memory live they take no lock.
    if (ptr == nullptr || live_.load(std::memory_order_relaxed) == 0) return std::nullopt;
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard lock(mu_);
    const Block* b = containingLocked(p);
    if (b == nullptr || b->state != State::Live ||
        p - reinterpret_cast<uintptr_t>(b->base) >= b->requested)
        return std::nullopt;
    return HostBlockInfo{b->base, b->requested, b->locked, b->placed ? b->node : -1};
}

void HostAllocator::cacheLocked(Block* b, Released& released) {
    // Everything that may throw (std::bad_alloc) comes first, so a failure changes nothing.
    released.reserve(released.size() + b->uses.size());
    cached_[{b->node, b->capacity}].push_back(b);
    for (StreamUse& use : b->uses) released.push_back(std::move(use.stream));
    b->uses.clear();
    b->state = State::Cached;
}

bool HostAllocator::finished(std::vector<StreamUse>& uses, Released& released) {
    released.reserve(released.size() +
                     uses.size());  // the one step that may throw, before any change
    auto done = [](const StreamUse& use) {
        if (use.seq == 0) return true;
        try {
            return use.stream->completed(use.seq);
        } catch (...) {
            return false;  // the driver cannot say: keep waiting rather than reuse too early
        }
    };
    auto keep =
        std::partition(uses.begin(), uses.end(), [&](const StreamUse& use) { return !done(use); });
    for (auto it = keep; it != uses.end(); ++it) released.push_back(std::move(it->stream));
    uses.erase(keep, uses.end());
    return uses.empty();
}

void HostAllocator::pollPendingLocked(Released& released) {
    for (size_t i = 0; i < pending_.size();) {
        Block* b = pending_[i];
        if (!finished(b->uses, released)) {
            ++i;
            continue;
        }
        cacheLocked(b, released);  // may throw: the block then stays pending, with no use left
        pending_[i] = pending_.back();
        pending_.pop_back();
    }
}

void HostAllocator::emptyCache() noexcept {
    std::vector<std::unique_ptr<Block>> victims;
    {
        Released released;
        std::lock_guard lock(mu_);
        try {
            pollPendingLocked(released);
        } catch (...) {  // out of host memory: what is cached already still goes
        }
        size_t count = 0;
        for (const auto& [key, list] : cached_) count += list.size();
        try {
            victims.reserve(count);
        } catch (...) {
            return;  // out of host memory: the cache stays, as if it had been filled again at once
        }
        for (auto& [key, list] : cached_) {
            for (Block* b : list) {
                auto it = blocks_.find(reinterpret_cast<uintptr_t>(b->base));
                victims.push_back(std::move(it->second));
                blocks_.erase(it);
            }
        }
        cached_.clear();
        counters_.unmapCount += victims.size();
    }
    for (const auto& b : victims) unmapBlock(*b);
}

void HostAllocator::setConfig(const AllocConfig& config) noexcept {
    std::lock_guard control(controlMu_);
    if (thread_ && threadPid_ != static_cast<int>(getpid())) {
        // A forked child: the thread stayed in the parent. Joining it would wait forever,
        // destroying the handle of a joinable thread would terminate, so the handle is dropped.
        // Whoever held mu_ at the fork is gone too; if that was the thread, this child cannot use
        // the allocator anyway.
        (void)thread_.release();
        if (mu_.try_lock()) {
            background_ = false;
            mu_.unlock();
        }
    }
    if (!config.pinnedUseBackgroundThreads) {
        if (!thread_) return;
        {
            std::lock_guard lock(mu_);
            stop_ = true;
            background_ = false;
        }
        wake_.notify_all();
        thread_->join();
        thread_.reset();
        return;
    }
    if (thread_) return;
    {
        std::lock_guard lock(mu_);
        stop_ = false;
        background_ = true;
    }
    try {
        thread_ = std::make_unique<std::thread>([this] { backgroundLoop(); });
        threadPid_ = static_cast<int>(getpid());
    } catch (const std::exception& e) {
        std::lock_guard lock(mu_);
        background_ = false;
        log(LogLevel::Warn,
            "pinned_use_background_threads: cannot start the thread ({}); allocations poll instead",
            e.what());
    }
}

void HostAllocator::stopBackgroundThread() noexcept {
    AllocConfig off;
    off.pinnedUseBackgroundThreads = false;
    setConfig(off);
}

void HostAllocator::backgroundLoop() {
    Released released;
    std::unique_lock lock(mu_);
    auto gap = kFirstPollGap;
    while (!stop_) {
        if (pending_.empty()) {
            gap = kFirstPollGap;
            wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
            continue;
        }
        try {
            pollPendingLocked(released);
        } catch (...) {  // out of host memory while caching: try again at the next poll
        }
        if (!released.empty()) {
            lock.unlock();
            released.clear();
            lock.lock();
        }
        if (!pending_.empty() && !stop_) {
            wake_.wait_for(lock, gap);
            gap = std::min(gap * 2, kLastPollGap);
        }
    }
}

HostAllocatorStats HostAllocator::stats() const {
    std::lock_guard lock(mu_);
    HostAllocatorStats s = counters_;
    for (const auto& [base, b] : blocks_) {
        s.mappedBytes += b->capacity;
        if (b->locked) s.lockedBytes += b->capacity;
        switch (b->state) {
        case State::Live:
            ++s.liveBlocks;
            s.liveBytes += b->requested;
            break;
        case State::Pending: ++s.pendingBlocks; break;
        case State::Cached:
            ++s.cachedBlocks;
            s.cachedBytes += b->capacity;
            break;
        }
    }
    return s;
}

}  // namespace mtia::allocator
