// The caching allocator of one device, in the class of PyTorch's CUDA
// caching allocator: requests are rounded (size_policy.hpp) and served by
// best fit from cached free blocks of the same stream, splitting large blocks
// and merging freed neighbours; segments come from the driver only when
// nothing cached fits. One mutex per device guards everything here;
// observers and free-memory callbacks run with it released.
//
// The reasoning lives in named notes in device_allocator.cpp:
//   Note [giving memory back]     when segments return to the device
//   Note [stream order]           reuse on the freeing stream, cross-stream frees
//   Note [capture and the allocator]  what changes while a graph capture routes here
#pragma once

#include "allocator/address_map.hpp"
#include "allocator/alloc_config.hpp"
#include "allocator/allocation.hpp"
#include "allocator/allocator_context.hpp"
#include "allocator/block_pool.hpp"
#include "allocator/driver_memory.hpp"
#include "allocator/history/device_snapshot.hpp"
#include "allocator/history/trace_ring.hpp"
#include "allocator/pool_id.hpp"
#include "allocator/private_pool.hpp"
#include "allocator/segment.hpp"
#include "allocator/stats.hpp"
#include "core/futex_mutex.hpp"
#include "streams/stream.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace mtia::allocator {

class DeviceAllocator {
public:
    // device: the runtime's ordinal (messages, observers); totalMemory: the device's memory in
    // bytes; granularity: the driver's allocation granularity (segments and chunks are multiples of
    // it); addressSpace: the device's virtual address range in bytes (0 when the driver does not
    // say), which bounds what one expandable segment reserves.
    DeviceAllocator(const driver::Driver& driver, int device, int32_t driverDevice,
                    uint64_t totalMemory, uint64_t granularity, uint64_t addressSpace,
                    AllocatorContext& context);
    // Gives every segment back (the process is ending; the runtime drained the device first).
    ~DeviceAllocator();
    DeviceAllocator(const DeviceAllocator&) = delete;
    DeviceAllocator& operator=(const DeviceAllocator&) = delete;

    // A block of at least size (> 0) bytes for use on stream (of this device). Thread-safe; may
    // block (device allocation, waiting for streams on the out-of-memory path). Throws InvalidValue
    // (size too large once rounded), MemoryAllocation (after the out-of-memory ladder; the
    // observers have been called), Error for other driver failures.
    void* allocate(size_t size, streams::Stream& stream);
    // Returns the block starting at ptr to the cache, stream-ordered. Thread-safe, non-blocking.
    // Throws InvalidValue (not the start of a live block of this device; the message says why).
    void free(void* ptr);
    // The block at ptr is used by stream too (see the class comment). Thread-safe, non-blocking.
    // Throws InvalidValue (not the start of a live block).
    void recordStream(void* ptr, std::shared_ptr<streams::Stream> stream);
    // The live allocation ptr lies in (interior pointers resolve within the requested size), if
    // any. Thread-safe, non-blocking.
    std::optional<Allocation> find(const void* ptr) const;

    // Waits for pending cross-stream frees and the device, then gives back every cached segment
    // with no live block (and the unmapped parts of expandable ones) of the default pools and of
    // released private pools. Thread-safe; blocking. Throws IllegalState (a capture routes
    // allocations here; nothing is freed), the device's sticky fault (after freeing).
    void emptyCache();
    // New settings (roundup, split limits, expandable segments for new segments, garbage
    // collection); applyFraction: the settings named per_process_memory_fraction, which then
    // replaces the device's memory fraction (as mtiaSetMemoryFraction does). Thread-safe.
    void setConfig(const AllocConfig& config, bool applyFraction);
    // Limits reserved memory to fraction x total (fraction in [0, 1], checked by the caller).
    // Thread-safe.
    void setMemoryFraction(double fraction);

    DeviceStats stats() const;
    void resetPeakStats();
    void resetAccumulatedStats();
    // Bytes reserved from the device now (all pools). Thread-safe.
    int64_t reservedBytes() const;

    // Private pools (ABI: mtiaMemPool*). filter null: the calling thread's allocations; else
    // allocations on that stream from any thread, and while such a route exists the allocator
    // queries no stream and frees nothing to the device. Thread-safe. begin throws IllegalState
    // (filter already routed); end throws NotFound (no route to id from here); release throws
    // NotFound (no such pool, or released by all its users) and may block (waits for the work
    // queued on the pool's segments before giving them back).
    void beginAllocateToPool(PoolId id, const streams::Stream* filter);
    void endAllocateToPool(PoolId id);
    void releasePool(PoolId id);
    // A stream route to the existing pool id that adds no user (streams joining a graph capture);
    // ended by endAllocateToPool(id), with the pool's other stream routes. Throws NotFound (no such
    // pool; a released pool still holding segments exists), IllegalState (stream already routed).
    // Thread-safe.
    void routeStreamToPool(PoolId id, const streams::Stream& stream);
    // Whether pool id exists and has users. Thread-safe.
    bool poolInUse(PoolId id) const;
    // Whether [ptr, ptr + bytes) lies inside one segment of private pool id (live or cached blocks
    // alike; for an expandable segment, inside its mapped chunks). bytes 0: whether ptr does.
    // Thread-safe.
    bool poolOwns(PoolId id, const void* ptr, size_t bytes) const;

    // --- device reset (device_allocator_reset.cpp)
    // mtiaDeviceReset: every allocation of this device ends (live ones included, their pointers
    // become unknown to the allocator), every segment of every pool (private pools included) goes
    // back to the device, private pools and routes are forgotten, the statistics start from zero
    // and the allocated bytes published to monitoring tools are 0. The caller waited for the
    // device's work and ended its captures. Thread-safe; never throws.
    void releaseAll() noexcept;

    // --- IPC (device_allocator_ipc.cpp)
    struct ExportRange {
        mtiaDrvMem mem = nullptr;  // the physical allocation behind the block
        uint64_t offset = 0;       // granule-aligned start of the block's granules in mem
        uint64_t size = 0;         // bytes of those granules
        uint64_t intoRange = 0;    // the block's start, from offset
        size_t requested = 0;      // the allocation's size as the caller asked
    };
    // The physical memory behind the live allocation starting at ptr, whole granules, for an IPC
    // export. Thread-safe, non-blocking. Throws InvalidValue naming argName (not the start of a
    // live allocation: interior, freed, never allocated), NotSupported (the block lies in an
    // expandable segment, whose chunks are separate physical allocations).
    ExportRange exportRange(const void* ptr, const char* argName) const;

    // --- memory history (device_allocator_history.cpp)
    // Applies the history recorder's settings to what this device holds: Off forgets the trace ring
    // and the contexts of live blocks and segments, State forgets the ring, All resizes it (newest
    // kept). Thread-safe, non-blocking; throws std::bad_alloc (ring).
    void applyHistorySettings();
    // A copy of the segments and blocks and, with traces, of the trace ring (a "snapshot" entry is
    // recorded first while tracing), each context with a reference of its own. Thread-safe,
    // non-blocking; throws std::bad_alloc.
    DeviceSnapshot collectSnapshot(bool traces);

private:
    struct PendingUse {
        std::shared_ptr<streams::Stream> stream;
        uint64_t seq;
        Block* block;
    };
    struct Route {
        PoolId pool;
        uint64_t stream;  // 0: a thread route
        std::thread::id thread;
    };
    using Lock = std::unique_lock<FutexMutex>;

    // --- finding and making blocks (device_allocator.cpp)
    PrivatePool* routeFor(uint64_t stream);
    BlockPool& poolOf(PrivatePool* owner, PoolKind kind) {
        return owner != nullptr ? owner->of(kind) : (kind == PoolKind::Small ? small_ : large_);
    }
    Block* takeCached(BlockPool& pool, uint64_t stream, size_t rounded);
    Block* allocateFresh(Lock& lock, BlockPool& pool, streams::Stream& stream, size_t rounded);
    Block* newSegment(Lock& lock, BlockPool& pool, streams::Stream& stream, size_t rounded);
    Block* outOfMemoryLadder(Lock& lock, BlockPool& pool, streams::Stream& stream, size_t rounded);
    void serve(Block* b, size_t rounded, size_t requested);
    void cache(Block* b);
    void freeBlock(Block* b);
    // Queues b's waits for the streams that used it; false (nothing changed) when the driver cannot
    // say how far one of them is.
    bool deferUntilUsesDone(Block* b);
    void retryDeferredFrees();
    // Records the free of a block of seg (a private pool's) against its stream, or leaves
    // stampPending.
    void stampFree(Segment& seg);
    // Driver memory nothing uses: back to the device now, or kept in held_ while capturing.
    void giveBack(Leftovers& left);
    // The last stream route ended: what the capture put off happens now.
    void captureEnded();
    // Note [capture and the allocator] in device_allocator.cpp.
    bool capturing() const { return streamRoutes_ > 0; }
    // PyTorch's garbage collection runs only with a memory fraction and a threshold set.
    bool collectsGarbage() const {
        return fractionSet_ && config_.garbageCollectionThreshold > 0.0;
    }
    bool allowedToGrow(size_t bytes) const;
    size_t granular(size_t bytes) const {
        return (bytes + granularity_ - 1) / granularity_ * granularity_;
    }
    // Free blocks inside split plain segments are memory the cache cannot give back (PyTorch's
    // inactive_split); expandable segments unmap at chunk granularity instead, so they do not
    // count.
    void inactiveSplitIn(const Block* b) {
        if (b->segment->expandable || !b->isSplit()) return;
        stats_.inactiveSplit.increase(b->pool->kind(), 1);
        stats_.inactiveSplitBytes.increase(b->pool->kind(), static_cast<int64_t>(b->size));
    }
    void inactiveSplitOut(const Block* b) {
        if (b->segment->expandable || !b->isSplit()) return;
        stats_.inactiveSplit.decrease(b->pool->kind(), 1);
        stats_.inactiveSplitBytes.decrease(b->pool->kind(), static_cast<int64_t>(b->size));
    }
    // A step's net change of inactive_split (blocks) and inactive_split_bytes for a plain segment
    // of pool kind: PyTorch counts the net of a split or merge, so the accumulated allocated and
    // freed totals grow by the net alone (not by the blocks' sizes before and after).
    void inactiveSplitChange(const Segment& seg, PoolKind kind, int64_t blocks, int64_t bytes) {
        if (seg.expandable) return;
        if (blocks > 0) {
            stats_.inactiveSplit.increase(kind, blocks);
        } else if (blocks < 0) {
            stats_.inactiveSplit.decrease(kind, -blocks);
        }
        if (bytes > 0) {
            stats_.inactiveSplitBytes.increase(kind, bytes);
        } else if (bytes < 0) {
            stats_.inactiveSplitBytes.decrease(kind, -bytes);
        }
    }
    void countSegment(const Segment& seg, bool added);
    void countMapped(const Segment& seg, size_t bytes, size_t chunks, bool mapped);
    [[noreturn]] void outOfMemory(Lock& lock, size_t size, size_t rounded, uint64_t stream);
    std::string outOfMemoryMessage(size_t size, size_t rounded, uint64_t free,
                                   uint64_t total) const;

    // --- memory history (device_allocator_history.cpp); every note* is a no-op while not recording
    // An entry in the trace ring while tracing (ctx: a context to mention, referenced anew).
    void record(mem::Action action, uint64_t addr, uint64_t size, uint64_t stream, PoolId pool,
                AllocContext* ctx) noexcept;
    static PoolId poolIdOf(const Segment& seg);
    // b was just served for the calling thread's allocation, whose context ctx (a reference the
    // block takes over) was captured before the lock.
    void noteAlloc(Block* b, AllocContext* ctx) noexcept;
    void noteFreeRequested(const Block* b) noexcept;
    // b's free completes (it is about to be cached): its context is dropped.
    void noteFreeCompleted(Block* b) noexcept;
    // A plain segment was created, or chunks [first, last) of an expandable one mapped, for the
    // calling thread's allocation.
    void noteSegmentAlloc(Segment* seg) noexcept;
    void noteMapped(Segment* seg, size_t first, size_t last) noexcept;
    // noteMapped for the first n chunk indices of chunks (ascending), one entry per run of adjacent
    // ones.
    void noteMappedRuns(Segment* seg, const std::vector<size_t>& chunks, size_t n) noexcept;
    void noteUnmapped(const Segment& seg, size_t first, size_t last) noexcept;
    // seg goes back to the device: segment_free (plain) or segment_unmap per mapped run, context
    // dropped.
    void noteSegmentRelease(Segment* seg) noexcept;

    // --- giving memory back (device_allocator_release.cpp)
    // Cheap when nothing waits (every allocation calls it).
    void processEvents() {
        if (!pending_.empty() || !releasable_.empty() || !deferredFrees_.empty()) processPending();
    }
    void processPending();
    void waitForPendingUses();
    bool releaseOversize(BlockPool& pool, uint64_t stream, size_t rounded);
    void reclaimWholeSegments(BlockPool& pool, streams::Stream& stream, size_t size);
    // Frees every cached segment of the default pools and of released private pools; returns the
    // device's sticky fault, if any (freed all the same).
    mtiaError_t releaseCached();
    void releaseSegmentIfIdle(Segment* seg);
    // Whether the work of seg's stream that may touch it is done (true for the default pools'
    // segments).
    bool segmentWorkDone(Segment& seg);
    void releaseSegment(Segment* seg);
    bool segmentIdle(const Segment& seg) const;
    void collectGarbage();
    void releaseReadyPoolSegments(bool wait);
    void forgetPoolIfUnused(PrivatePool* pool);

    // --- expandable segments (expandable_segments.cpp)
    Block* growExpandable(BlockPool& pool, streams::Stream& stream, size_t rounded);
    void reclaimHoles(BlockPool& pool, streams::Stream& stream, size_t rounded);
    Segment* newExpandableSegment(BlockPool& pool, streams::Stream& stream, size_t rounded);
    Block* mapRun(Segment* seg, Block* start, size_t rounded);
    Block* joinMapped(Segment* seg, Block* start, uintptr_t end);
    void undoPartialMap(Segment* seg, Block* start, const std::vector<size_t>& toMap,
                        size_t mapped);
    void shrinkExpandable(Segment* seg);
    void coalesceUnmapped(Block* b);

    DriverMemory memory_;
    AllocatorContext& context_;
    const int device_;
    const uint64_t totalMemory_;
    const size_t granularity_;
    const uint64_t addressSpace_;

    mutable FutexMutex mu_;
    AllocConfig config_;
    double fraction_ = 1.0;
    bool fractionSet_ = false;
    BlockPool small_{PoolKind::Small};
    BlockPool large_{PoolKind::Large};
    AddressMap live_;                         // allocated blocks by address
    std::map<uintptr_t, Segment*> segments_;  // by base address
    std::vector<PendingUse> pending_;         // frees waiting for other streams
    // Frees with other streams' uses that could not ask those streams yet (a capture was underway,
    // or the driver failed): asked when the capture ends, or at the next allocation.
    std::vector<Block*> deferredFrees_;
    Leftovers
        held_;  // what failed device allocations left during a capture, given back when it ends
    std::unordered_map<PoolId, std::unique_ptr<PrivatePool>, PoolIdHash> pools_;
    std::vector<Route> routes_;
    int streamRoutes_ = 0;
    std::vector<Segment*> releasable_;  // idle segments of released pools, waiting for their stream
    DeviceStats stats_;
    uint64_t searches_ = 0;      // cache searches so far: the clock of garbage collection's ages
    std::string driverRefusal_;  // why the driver refused memory during the current request ("" if
                                 // it did not)
    TraceRing trace_;            // memory history: the actions of this device while tracing
    // The context of the allocation the calling thread is making (null: none), for the segment
    // entries it causes; per thread, since release_lock_on_device_malloc lets others in meanwhile.
    static inline thread_local AllocContext* allocContext_ = nullptr;
};

}  // namespace mtia::allocator
