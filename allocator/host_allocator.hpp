// The caching pinned-host allocator behind mtiaMallocHost, mtiaFreeHost and
// mtiaHostRecordStream: one per process (the runtime owns it), thread-safe.
//
// Requests are rounded up to a power of two of at least one page and served
// from blocks cached per (NUMA node, size class); a miss maps a new block,
// prefers the node on it, faults it in and locks it while RLIMIT_MEMLOCK
// allows (host_numa.hpp, host_pages.hpp). A freed block is reused only after
// the work queued before the free on every stream recorded for it has
// finished: the free snapshots each recorded stream's last command number,
// and pending blocks are polled on allocation, or by a background thread when
// pinned_use_background_threads is set.
#pragma once

#include "allocator/alloc_config.hpp"
#include "streams/stream.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace mtia::allocator {

// A live pinned allocation, as mtiaPointerGetAttributes reports it.
struct HostBlockInfo {
    void* base = nullptr;
    size_t size = 0;      // bytes the caller asked for
    bool locked = false;  // page-locked (mlock succeeded)
    int node = -1;        // NUMA node the pages were placed on, -1 when not placed
};

// Counters of one allocator; a consistent snapshot.
struct HostAllocatorStats {
    size_t liveBlocks = 0;     // allocated, not freed
    size_t liveBytes = 0;      // requested bytes of those
    size_t pendingBlocks = 0;  // freed, waiting for recorded streams
    size_t cachedBlocks = 0;   // free, ready for reuse
    size_t cachedBytes = 0;    // size-class bytes of those
    size_t mappedBytes = 0;    // size-class bytes of every block the allocator holds
    size_t lockedBytes = 0;    // of mappedBytes, page-locked
    uint64_t mapCount = 0;     // blocks mapped from the OS so far
    uint64_t unmapCount = 0;   // blocks returned to the OS so far
};

// The size class a request of size bytes is served from: the next power of two, at least one page.
// Each block is its own mapping (placed, locked and unmapped on its own), so a block smaller than a
// page would occupy a whole page all the same; powers of two keep the number of classes, and so the
// memory idle in the cache, small (log2 of the largest request). Throws
// Error(mtiaErrorInvalidValue) naming "size" when the class does not fit in size_t. Thread-safe
// (pure).
size_t hostSizeClass(size_t size);

class HostAllocator {
public:
    // Starts the background thread when config.pinnedUseBackgroundThreads is set (see setConfig).
    // Never throws.
    explicit HostAllocator(const AllocConfig& config = AllocConfig{}) noexcept;
    // Stops the background thread and returns every block to the OS, live ones included: no memory
    // of this allocator may be used afterwards (the runtime's allocator lives as long as the
    // process).
    ~HostAllocator();
    HostAllocator(const HostAllocator&) = delete;
    HostAllocator& operator=(const HostAllocator&) = delete;

    // size > 0 bytes preferring NUMA node numaNode (-1: no preference; a node this host does not
    // have, or any node where NUMA is unusable, silently means no preference). Reuses a cached
    // block of the same node and size class first, after moving pending blocks whose streams
    // finished into the cache (unless the background thread does that). Thread-safe; may block in
    // the OS (mapping, faulting and locking a new block). Throws Error(mtiaErrorInvalidValue) (size
    // too large), Error(mtiaErrorMemoryAllocation) (the OS refuses the mapping even after the cache
    // was emptied).
    void* allocate(size_t size, int numaNode);

    // Frees the allocation starting at ptr: cached at once when no stream was recorded for it or
    // they are idle, else pending until the work they had queued at this call has finished.
    // Thread-safe, non-blocking. Throws Error(mtiaErrorInvalidValue) naming "ptr" when ptr is not
    // the start of a live allocation (never allocated here, inside one, or already freed; the
    // message says which).
    void free(void* ptr);

    // Records that stream uses the live allocation containing hostPtr (interior pointers resolve),
    // so a later free waits for the stream's work. Recording one stream twice changes nothing.
    // Thread-safe, non-blocking. Throws Error(mtiaErrorInvalidValue) naming "hostPtr" when it lies
    // in no live allocation.
    void recordStream(const void* hostPtr, std::shared_ptr<streams::Stream> stream);
    // Throws what recordStream throws for hostPtr, without recording (ABI calls check their
    // arguments in order). Thread-safe, non-blocking.
    void checkLive(const void* hostPtr) const;

    // The live allocation containing ptr (interior pointers resolve; freed blocks do not).
    // Thread-safe, non-blocking; lock-free while no allocation is live. Never throws.
    std::optional<HostBlockInfo> find(const void* ptr) const noexcept;

    // Returns every cached block to the OS, after moving pending blocks whose streams finished into
    // the cache; live and still pending blocks stay. Thread-safe; blocks while unmapping. Never
    // throws.
    void emptyCache() noexcept;

    // Applies pinned_use_background_threads: starts or stops (and joins) the background thread. The
    // other settings do not concern this allocator. Thread-safe; blocks while a stopping thread
    // finishes its current poll. Never throws (a thread that cannot start is logged; allocations
    // keep polling).
    void setConfig(const AllocConfig& config) noexcept;

    // Stops the background thread (process exit: it must not query drivers during static
    // destruction). A later setConfig may start it again. Thread-safe, blocks as setConfig. Never
    // throws. In a forked child, which has no copy of the thread, the parent's thread is forgotten
    // instead of joined (a join would wait forever).
    void stopBackgroundThread() noexcept;

    // Thread-safe, non-blocking (walks the blocks under the allocator's lock). Throws
    // std::bad_alloc only.
    HostAllocatorStats stats() const;

private:
    struct StreamUse {
        std::shared_ptr<streams::Stream> stream;
        uint64_t seq = 0;  // set at free: the stream's last command then
    };
    enum class State { Live, Pending, Cached };
    struct Block {
        void* base = nullptr;
        size_t capacity = 0;  // the size class
        size_t requested = 0;
        int node = -1;        // the usable node asked for: the cache key
        bool placed = false;  // the kernel accepted the node preference
        bool locked = false;
        State state = State::Live;
        std::vector<StreamUse> uses;  // live: recorded streams; pending: what is still unfinished
    };
    using ClassKey = std::pair<int, size_t>;  // (node, size class)

    // Streams whose last use here ended, destroyed by the caller once mu_ is released (the last
    // reference releases a driver queue, which has no business running under the allocator's lock).
    using Released = std::vector<std::shared_ptr<streams::Stream>>;

    std::unique_ptr<Block> mapBlock(size_t size, size_t capacity, int node);  // no lock held
    void unmapBlock(const Block& b) noexcept;                                 // no lock held
    Block* containingLocked(uintptr_t p) const;  // the block whose capacity holds p, in any state
    Block*
    liveLocked(const void* hostPtr) const;  // the live block holding hostPtr; throws InvalidValue
    void cacheLocked(Block* b, Released& released);
    void pollPendingLocked(Released& released);  // pending blocks whose streams finished -> cache
    static bool finished(std::vector<StreamUse>& uses, Released& released);  // drops finished uses
    void backgroundLoop();
    bool reserveLockBudget(size_t bytes) noexcept;

    mutable std::mutex mu_;
    std::map<uintptr_t, std::unique_ptr<Block>> blocks_;  // every block held, by base address
    std::map<ClassKey, std::vector<Block*>> cached_;      // free blocks, most recently freed last
    std::vector<Block*> pending_;                         // freed, waiting for streams
    std::atomic<size_t> live_{0};                         // live blocks: find() skips the lock at 0
    std::atomic<size_t> lockedBytes_{0};                  // reserved against RLIMIT_MEMLOCK
    HostAllocatorStats counters_;                         // map/unmap counts (under mu_)

    // The background thread: started and stopped under controlMu_; background_, stop_ under mu_.
    std::mutex controlMu_;
    std::unique_ptr<std::thread> thread_;  // leaked, never joined, in a forked child
    int threadPid_ = 0;                    // the process the thread runs in
    std::condition_variable wake_;
    bool background_ = false;  // the thread polls, allocations do not
    bool stop_ = false;
};

}  // namespace mtia::allocator
