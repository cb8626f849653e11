#include "allocator/device_allocator.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <iterator>
#include <new>
#include <utility>

namespace mtia::allocator {

// Note [giving memory back]
// Segments go back to the device on mtiaEmptyCache, on the out-of-memory path,
// through garbage collection, when a released private pool no longer needs
// them, and, beyond PyTorch, when a stream with no unfinished work is about
// to grow while at least as much of its memory sits cached in pieces too
// small for the request (whole large segments, or chunks in the holes of
// expandable segments): a buffer that grows in odd sizes then reuses what it
// left behind instead of adding to it.
//
// Note [stream order]
// A block freed on the stream it was allocated for is reused at once by later
// allocations on that stream (their work runs after the work already queued).
// A block that other streams used (recordStream) is cached again only once
// those streams finished what they had queued at the free. Segments go back
// to the device only after the device finished the work that may touch them.
//
// Note [capture and the allocator]
// While a stream route exists (beginAllocateToPool with a stream filter, or
// routeStreamToPool; capturing()), the allocator asks no stream anything
// (lastSubmitted, completed, idle, query, wait, waitFor) and gives nothing back
// to the device (unmap, memory release, address release, device synchronize),
// whatever is called: a device call of that kind inside a capture would fail
// it or wait on work that never comes (pytorch/pytorch#55860). Where the calls
// are, and what they do instead while capturing:
//   - allocate: processPending (queries, frees) and garbage collection are
//     skipped; the out-of-memory ladder runs only the free-memory callbacks and
//     the first device allocation: releaseOversize, waitForPendingUses,
//     releaseCached and the idle-stream reclaims (reclaimWholeSegments,
//     reclaimHoles) are skipped, and the request fails with MemoryAllocation
//     and the usual report when nothing cached fits. What a failed device
//     allocation got and could not use (a reservation, an expandable segment's
//     chunks, the new segment itself) is kept, not given back: reservations in
//     held_ until the capture ends, mapped chunks and segments as cached memory.
//   - free: a private pool's segment reads its stream's lastSubmitted to know
//     when the block's work is done; during a capture it is marked
//     stampPending and read when the capture ends (a later, larger number:
//     conservative). A block other streams used (recordStream) waits in
//     deferredFrees_ instead of asking them how far they are. A released pool's
//     segment that falls idle joins releasable_.
//   - recordStream, find, stats, setConfig, setMemoryFraction,
//     beginAllocateToPool, routeStreamToPool, poolInUse, poolOwns: never query
//     or free.
//   - releasePool: its idle segments join releasable_ (no waiting);
//     endAllocateToPool: frees nothing while another stream route remains.
//   - emptyCache: throws IllegalState before doing anything.
// When the last stream route ends (endAllocateToPool), the put-off work runs:
// stamps, deferred frees, held_ reservations, segments of released pools whose
// work is done, expandable segments the capture reserved but never mapped. The
// one exception: where the host itself runs out of memory (std::bad_alloc)
// while device memory is to be kept or a new segment set up, that device
// memory goes back at once.

DeviceAllocator::DeviceAllocator(const driver::Driver& driver, int device, int32_t driverDevice,
                                 uint64_t totalMemory, uint64_t granularity, uint64_t addressSpace,
                                 AllocatorContext& context)
    : memory_(driver, device, driverDevice), context_(context), device_(device),
      totalMemory_(totalMemory), granularity_(granularity != 0 ? granularity : 1),
      addressSpace_(addressSpace), config_(context.config()) {
    fraction_ = config_.perProcessMemoryFraction;
    fractionSet_ = fraction_ < 1.0;
}

DeviceAllocator::~DeviceAllocator() {
    memory_.release(held_);
    // History references go without calling the provider: the process is ending (Python may be
    // gone).
    HistoryRecorder& history = context_.history();
    for (AllocContext* c : trace_.clear()) history.unref(c);
    for (auto& [base, seg] : segments_) {
        history.unref(seg->context);
        for (Block* b = seg->head; b != nullptr; b = b->next) history.unref(b->context);
        if (seg->expandable) {
            for (size_t i = 0; i < seg->chunks.size(); ++i)
                if (seg->chunks[i] != nullptr)
                    memory_.unmap(seg->base + i * seg->chunkSize, seg->chunkSize, seg->chunks[i]);
            memory_.unreserve(seg->base, seg->size);
        } else {
            memory_.release(seg->base, seg->size, seg->mem);
        }
        for (Block* b = seg->head; b != nullptr;) {
            Block* next = b->next;
            b->pool->destroyBlock(b);
            b = next;
        }
        delete seg;
    }
}

void* DeviceAllocator::allocate(size_t size, streams::Stream& stream) {
    // Memory history: the caller's context is captured before the lock (stack walks are slow next
    // to a cache hit); whatever references are dropped under the lock are released after it.
    HistoryRecorder& history = context_.history();
    struct ContextScope {
        HistoryRecorder& history;
        AllocContext* ctx;
        ~ContextScope() {
            if (ctx != nullptr) {
                allocContext_ = nullptr;
                history.unref(ctx);
            }
            history.drain();
        }
    } scope{history, history.recording() ? history.capture() : nullptr};
    Lock lock(mu_);
    if (scope.ctx != nullptr) allocContext_ = scope.ctx;  // (thread-local: only while recording)
    if (!capturing()) processEvents();
    const size_t rounded = roundSize(size, config_);
    const uint64_t sid = static_cast<uint64_t>(stream.id());
    BlockPool* pool = &poolOf(routeFor(sid), poolFor(rounded));
    Block* b = takeCached(*pool, sid, rounded);
    if (b == nullptr && context_.hasFreeMemoryCallbacks()) {
        // Libraries free their own caches through the ABI: they must not find this lock held.
        lock.unlock();
        const bool freed = context_.runFreeMemoryCallbacks(device_, rounded);
        lock.lock();
        pool = &poolOf(routeFor(sid), poolFor(rounded));  // routes may have changed meanwhile
        if (freed) {
            if (!capturing()) processEvents();
            b = takeCached(*pool, sid, rounded);
        }
    }
    if (b == nullptr) b = allocateFresh(lock, *pool, stream, rounded);
    if (b == nullptr) b = outOfMemoryLadder(lock, *pool, stream, rounded);
    if (b == nullptr) outOfMemory(lock, size, rounded, sid);
    serve(b, rounded, size);
    if (history.recording()) {
        allocContext_ = nullptr;
        noteAlloc(b, std::exchange(scope.ctx, nullptr));
    }
    return reinterpret_cast<void*>(b->address);
}

PrivatePool* DeviceAllocator::routeFor(uint64_t stream) {
    if (routes_.empty()) return nullptr;
    const Route* chosen = nullptr;
    for (const Route& r : routes_) {
        if (r.stream == stream) {
            chosen = &r;
            break;
        }
        if (r.stream == 0 && r.thread == std::this_thread::get_id() && chosen == nullptr)
            chosen = &r;
    }
    if (chosen == nullptr) return nullptr;
    return pools_.at(chosen->pool).get();
}

// The best-fitting cached block, out of the pool, cut to size when it should be split: the front
// goes to the caller and the cached rest keeps its place in the pool (no set update in the common
// case).
Block* DeviceAllocator::takeCached(BlockPool& pool, uint64_t stream, size_t rounded) {
    ++searches_;
    Block* c = pool.bestFit(stream, rounded, config_);
    if (c == nullptr) return nullptr;
    const bool wasSplit = c->isSplit();
    if (!shouldSplit(pool.kind(), c->segment->expandable, c->size, rounded, config_)) {
        pool.erase(c);
        if (wasSplit)
            inactiveSplitChange(*c->segment, pool.kind(), -1, -static_cast<int64_t>(c->size));
        return c;
    }
    Block* front = pool.makeBlock();
    front->address = c->address;
    front->size = rounded;
    front->stream = c->stream;
    front->pool = &pool;
    front->segment = c->segment;
    front->mapped = c->mapped;
    front->prev = c->prev;
    front->next = c;
    if (c->prev != nullptr) c->prev->next = front;
    c->prev = front;
    if (c->segment->head == c) c->segment->head = front;
    pool.rekey(c, c->address + rounded, c->size - rounded);
    // An inactive split block shrinks by the front; an unsplit one leaves a new inactive split
    // block.
    if (wasSplit) {
        inactiveSplitChange(*c->segment, pool.kind(), 0, -static_cast<int64_t>(rounded));
    } else {
        inactiveSplitChange(*c->segment, pool.kind(), 1, static_cast<int64_t>(c->size));
    }
    return front;
}

// Growth without giving anything back: garbage collection first (it only frees what is old and
// unused), then a new segment or more of an expandable one.
Block* DeviceAllocator::allocateFresh(Lock& lock, BlockPool& pool, streams::Stream& stream,
                                      size_t rounded) {
    driverRefusal_.clear();
    if (!capturing()) collectGarbage();
    return newSegment(lock, pool, stream, rounded);
}

// PyTorch's ladder (during a capture: Note [capture and the allocator]), plus a search of the cache
// after the pending frees completed (PyTorch issue #189504: it retried only the device allocation
// and could fail while a fitting block sat free).
Block* DeviceAllocator::outOfMemoryLadder(Lock& lock, BlockPool& pool, streams::Stream& stream,
                                          size_t rounded) {
    const uint64_t sid = static_cast<uint64_t>(stream.id());
    if (!capturing() && releaseOversize(pool, sid, rounded))
        if (Block* b = newSegment(lock, pool, stream, rounded)) return b;
    // During a capture nothing may be queried or freed: the capture has to fail over to the caller.
    if (capturing()) return nullptr;
    ++stats_.numAllocRetries;
    waitForPendingUses();
    if (Block* b = takeCached(pool, sid, rounded)) return b;
    releaseCached();
    if (Block* b = newSegment(lock, pool, stream, rounded)) return b;
    return takeCached(pool, sid, rounded);
}

bool DeviceAllocator::allowedToGrow(size_t bytes) const {
    if (!fractionSet_) return true;
    const auto allowed = static_cast<uint64_t>(fraction_ * static_cast<double>(totalMemory_));
    const auto reserved = static_cast<uint64_t>(stats_.reservedBytes[kStatAll].current);
    return bytes <= allowed && reserved <= allowed - bytes;
}

Block* DeviceAllocator::newSegment(Lock& lock, BlockPool& pool, streams::Stream& stream,
                                   size_t rounded) {
    if (config_.expandableSegments) return growExpandable(pool, stream, rounded);
    const size_t size = granular(segmentSize(rounded));
    if (size < rounded)
        fail(mtiaErrorInvalidValue, "size {} is too large to represent once rounded", rounded);
    reclaimWholeSegments(pool, stream, size);
    if (!allowedToGrow(size)) return nullptr;
    mtiaDrvMem mem = nullptr;
    uintptr_t va = 0;
    // What a failed attempt leaves over goes back through giveBack, which a capture makes keep it;
    // a reservation an earlier attempt of the capture kept is used again.
    Leftovers left;
    left.ranges.reserve(1);
    if (const uintptr_t kept = held_.takeRange(size); kept != 0)
        left.ranges.emplace_back(kept, size);
    if (config_.releaseLockOnDeviceMalloc) {
        // Other threads may use the cache while the driver works. A private pool this request goes
        // to is pinned meanwhile: a concurrent release must not forget it under us.
        PrivatePool* pinned = pool.owner;
        if (pinned != nullptr) ++pinned->users;
        auto unpin = [&] {
            if (pinned == nullptr) return;
            --pinned->users;
        };
        lock.unlock();
        try {
            va = memory_.allocate(size, &mem, &left);
        } catch (...) {
            lock.lock();
            unpin();
            giveBack(left);
            throw;
        }
        lock.lock();
        unpin();
    } else {
        try {
            va = memory_.allocate(size, &mem, &left);
        } catch (...) {
            giveBack(left);
            throw;
        }
    }
    if (va == 0) {
        driverRefusal_ = memory_.why();
        giveBack(left);
        return nullptr;
    }
    std::unique_ptr<Segment> seg;
    Block* b = nullptr;
    try {
        seg = std::make_unique<Segment>();
        b = pool.makeBlock();
        segments_.emplace(va, seg.get());
    } catch (...) {
        if (b != nullptr) pool.destroyBlock(b);
        memory_.release(va, size, mem);  // out of host memory: see the class comment
        throw;
    }
    seg->base = va;
    seg->size = size;
    seg->kind = pool.kind();
    seg->stream = static_cast<uint64_t>(stream.id());
    seg->owner = pool.owner;
    seg->mem = mem;
    if (pool.owner != nullptr) seg->streamRef = stream.shared_from_this();
    b->address = va;
    b->size = size;
    b->stream = seg->stream;
    b->pool = &pool;
    b->segment = seg.get();
    seg->head = b;
    countSegment(*seg, true);
    countMapped(*seg, size, 1, true);
    noteSegmentAlloc(seg.get());
    seg.release();
    return b;
}

void DeviceAllocator::serve(Block* b, size_t rounded, size_t requested) {
    BlockPool& pool = *b->pool;
    if (shouldSplit(pool.kind(), b->segment->expandable, b->size, rounded, config_))
        cache(splitBlock(b, rounded));
    b->allocated = true;
    b->requested = requested;
    live_.insert(b->address, b);
    const PoolKind kind = pool.kind();
    const auto size = static_cast<int64_t>(b->size);
    stats_.allocation.increase(kind, 1);
    stats_.allocatedBytes.increase(kind, size);
    memory_.reportAllocated(static_cast<uint64_t>(stats_.allocatedBytes[kStatAll].current));
    stats_.requestedBytes.increase(kind, static_cast<int64_t>(requested));
    stats_.active.increase(kind, 1);
    stats_.activeBytes.increase(kind, size);
    if (b->size >= config_.maxSplitSize) stats_.oversizeAllocations.increase(1);
}

void DeviceAllocator::cache(Block* b) {
    b->pool->insert(b);
    b->gcStamp = searches_;
    inactiveSplitIn(b);
}

void DeviceAllocator::countSegment(const Segment& seg, bool added) {
    if (seg.owner != nullptr) seg.owner->segments += added ? 1 : -1;
    if (added) {
        stats_.segment.increase(seg.kind, 1);
        if (!seg.expandable && seg.size >= config_.maxSplitSize)
            stats_.oversizeSegments.increase(1);
    } else {
        stats_.segment.decrease(seg.kind, 1);
        if (!seg.expandable && seg.size >= config_.maxSplitSize)
            stats_.oversizeSegments.decrease(1);
    }
}

void DeviceAllocator::countMapped(const Segment& seg, size_t bytes, size_t chunks, bool mapped) {
    const auto n = static_cast<int64_t>(bytes);
    if (mapped) {
        stats_.reservedBytes.increase(seg.kind, n);
        stats_.numDeviceAlloc += static_cast<int64_t>(chunks);
        if (seg.owner != nullptr) seg.owner->reserved += bytes;
    } else {
        stats_.reservedBytes.decrease(seg.kind, n);
        stats_.numDeviceFree += static_cast<int64_t>(chunks);
        if (seg.owner != nullptr) seg.owner->reserved -= bytes;
    }
}

// Stream-ordered (Note [stream order]); during a capture, see Note [capture and the allocator].
void DeviceAllocator::free(void* ptr) {
    struct DrainAfterUnlock {  // framework ids whose last reference this free drops go back after
                               // the lock
        HistoryRecorder& history;
        ~DrainAfterUnlock() { history.drain(); }
    } drain{context_.history()};
    Lock lock(mu_);
    Block* b = live_.erase(reinterpret_cast<uintptr_t>(ptr));
    if (b == nullptr) {
        lock.unlock();
        if (auto inside = find(ptr))
            fail(mtiaErrorInvalidValue,
                 "ptr {} points inside the allocation at {}; pass the pointer the allocation "
                 "returned",
                 ptr, inside->base);
        fail(mtiaErrorInvalidValue,
             "ptr {} is not a live allocation of device {} (never allocated or already freed)", ptr,
             device_);
    }
    b->allocated = false;
    noteFreeRequested(b);
    const PoolKind kind = b->pool->kind();
    stats_.allocation.decrease(kind, 1);
    stats_.allocatedBytes.decrease(kind, static_cast<int64_t>(b->size));
    memory_.reportAllocated(static_cast<uint64_t>(stats_.allocatedBytes[kStatAll].current));
    // requested_bytes drops in freeBlock, with active_bytes: a block waiting for other streams is
    // still active and its snapshot segment still counts its request (PyTorch's free_block does the
    // same).
    if (b->size >= config_.maxSplitSize) stats_.oversizeAllocations.decrease(1);
    if (Segment* seg = b->segment; seg->streamRef) stampFree(*seg);
    if (b->streamUses.empty()) {
        freeBlock(b);
    } else if (capturing() || !deferUntilUsesDone(b)) {
        // Other streams' progress cannot be queried during a capture (PyTorch defers these the same
        // way), or the driver could not say: asked again when the capture ends or at the next
        // allocation.
        deferredFrees_.push_back(b);
    }
}

void DeviceAllocator::stampFree(Segment& seg) {
    if (capturing()) {
        seg.stampPending = true;
        return;
    }
    try {
        seg.lastFreeSeq = std::max(seg.lastFreeSeq, seg.streamRef->lastSubmitted());
        seg.stampPending = false;  // this number is at least the one put off
    } catch (const Error&) {
        seg.stampPending = true;
    }
}

bool DeviceAllocator::deferUntilUsesDone(Block* b) {
    pending_.reserve(pending_.size() + b->streamUses.size());
    const size_t before = pending_.size();
    try {
        for (auto& s : b->streamUses) pending_.push_back({s, s->lastSubmitted(), b});
    } catch (const Error&) {
        pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(before), pending_.end());
        return false;
    }
    b->pendingUses += static_cast<int>(b->streamUses.size());
    b->streamUses.clear();
    return true;
}

void DeviceAllocator::retryDeferredFrees() {
    while (!deferredFrees_.empty()) {
        if (!deferUntilUsesDone(deferredFrees_.back())) return;
        deferredFrees_.pop_back();
    }
}

void DeviceAllocator::giveBack(Leftovers& left) {
    if (left.empty()) return;
    if (capturing()) {
        try {
            held_.absorb(left);
            return;
        } catch (const std::bad_alloc&) {
            // out of host memory: given back after all
        }
    }
    memory_.release(left);
}

void DeviceAllocator::freeBlock(Block* b) {
    noteFreeCompleted(b);
    BlockPool& pool = *b->pool;
    stats_.active.decrease(pool.kind(), 1);
    stats_.activeBytes.decrease(pool.kind(), static_cast<int64_t>(b->size));
    stats_.requestedBytes.decrease(pool.kind(), static_cast<int64_t>(b->requested));
    Block* prev = b->prev != nullptr && pool.contains(b->prev) ? b->prev : nullptr;
    Block* next = b->next != nullptr && pool.contains(b->next) ? b->next : nullptr;
    // The net change of the inactive split blocks: merged neighbours leave, the merged block joins.
    int64_t splitBlocks = 0;
    int64_t splitBytes = 0;
    for (const Block* n : {prev, next}) {
        if (n == nullptr) continue;
        splitBlocks -= 1;  // a neighbour of b is split
        splitBytes -= static_cast<int64_t>(n->size);
    }
    if ((prev == nullptr) != (next == nullptr)) {
        // One cached neighbour (the common case): it absorbs b and keeps its place in the pool.
        Block* keep = prev != nullptr ? prev : next;
        if (keep == next) {
            keep->prev = b->prev;
            if (b->prev != nullptr) b->prev->next = keep;
            if (b->segment->head == b) b->segment->head = keep;
            pool.rekey(keep, b->address, keep->size + b->size);
        } else {
            keep->next = b->next;
            if (b->next != nullptr) b->next->prev = keep;
            pool.rekey(keep, keep->address, keep->size + b->size);
        }
        pool.destroyBlock(b);
        b = keep;
    } else {
        mergeFreeNeighbours(b);
        pool.insert(b);
    }
    b->gcStamp = searches_;
    if (b->isSplit()) {
        splitBlocks += 1;
        splitBytes += static_cast<int64_t>(b->size);
    }
    inactiveSplitChange(*b->segment, pool.kind(), splitBlocks, splitBytes);
    if (pool.owner != nullptr && pool.owner->users == 0) releaseSegmentIfIdle(b->segment);
}

void DeviceAllocator::recordStream(void* ptr, std::shared_ptr<streams::Stream> stream) {
    std::lock_guard<FutexMutex> lock(mu_);
    Block* b = live_.find(reinterpret_cast<uintptr_t>(ptr));
    if (b == nullptr)
        fail(mtiaErrorInvalidValue, "ptr {} is not the start of a live allocation of device {}",
             ptr, device_);
    if (static_cast<uint64_t>(stream->id()) == b->stream) return;
    for (const auto& s : b->streamUses)
        if (s.get() == stream.get()) return;
    b->streamUses.push_back(std::move(stream));
}

std::optional<Allocation> DeviceAllocator::find(const void* ptr) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<FutexMutex> lock(mu_);
    const Block* hit = live_.find(p);
    if (hit == nullptr) {
        auto s = segments_.upper_bound(p);
        if (s == segments_.begin()) return std::nullopt;
        --s;
        if (!s->second->contains(p)) return std::nullopt;
        for (const Block* b = s->second->head; b != nullptr; b = b->next)
            if (p >= b->address && p - b->address < b->size) {
                hit = b;
                break;
            }
        if (hit == nullptr || !hit->allocated || p - hit->address >= hit->requested)
            return std::nullopt;
    }
    return Allocation{reinterpret_cast<void*>(hit->address), hit->requested, hit->size, device_};
}

void DeviceAllocator::setConfig(const AllocConfig& config, bool applyFraction) {
    std::lock_guard<FutexMutex> lock(mu_);
    if (applyFraction) {
        fraction_ = config.perProcessMemoryFraction;
        fractionSet_ = true;
    }
    if (config.maxSplitSize != config_.maxSplitSize) {
        // free() and segment release count out by the limit in force then: recount what is live
        // under the new limit, or a changed limit leaves counts behind or drives them below zero.
        auto recount = [](Stat& s, bool was, bool is) {
            if (was == is) return;
            s.current += is ? 1 : -1;
            s.peak = std::max(s.peak, s.current);
        };
        for (const auto& [base, seg] : segments_) {
            if (!seg->expandable)
                recount(stats_.oversizeSegments, seg->size >= config_.maxSplitSize,
                        seg->size >= config.maxSplitSize);
            for (const Block* b = seg->head; b != nullptr; b = b->next)
                if (b->allocated)
                    recount(stats_.oversizeAllocations, b->size >= config_.maxSplitSize,
                            b->size >= config.maxSplitSize);
        }
    }
    config_ = config;
}

void DeviceAllocator::setMemoryFraction(double fraction) {
    std::lock_guard<FutexMutex> lock(mu_);
    fraction_ = fraction;
    fractionSet_ = true;
}

DeviceStats DeviceAllocator::stats() const {
    std::lock_guard<FutexMutex> lock(mu_);
    DeviceStats s = stats_;
    // PyTorch reports "no limit" as the size_t maximum read as int64: -1.
    s.maxSplitSize = config_.maxSplitSize == AllocConfig::kUnlimited
                         ? -1
                         : static_cast<int64_t>(config_.maxSplitSize);
    return s;
}

void DeviceAllocator::resetPeakStats() {
    std::lock_guard<FutexMutex> lock(mu_);
    stats_.resetPeaks();
}

void DeviceAllocator::resetAccumulatedStats() {
    std::lock_guard<FutexMutex> lock(mu_);
    stats_.resetAccumulated();
}

int64_t DeviceAllocator::reservedBytes() const {
    std::lock_guard<FutexMutex> lock(mu_);
    return stats_.reservedBytes[kStatAll].current;
}

void DeviceAllocator::beginAllocateToPool(PoolId id, const streams::Stream* filter) {
    std::lock_guard<FutexMutex> lock(mu_);
    const uint64_t sid = filter != nullptr ? static_cast<uint64_t>(filter->id()) : 0;
    for (const Route& r : routes_)
        if (sid != 0 && r.stream == sid)
            fail(mtiaErrorIllegalState,
                 "filter stream {} already allocates to pool {{{}, {}}} on device {}", sid,
                 r.pool.first, r.pool.second, device_);
    // Everything that can throw comes first, so a failure leaves no pool without its route (nor a
    // null entry in pools_).
    routes_.reserve(routes_.size() + 1);
    auto it = pools_.find(id);
    if (it == pools_.end()) {
        auto fresh = std::make_unique<PrivatePool>(id);
        pools_.emplace(id, std::move(fresh));
    } else {
        // A released pool that comes back keeps its memory: take its segments off the release list.
        PrivatePool* pool = it->second.get();
        ++pool->users;
        std::erase_if(releasable_, [&](Segment* s) { return s->owner == pool; });
    }
    routes_.push_back({id, sid, std::this_thread::get_id()});
    if (sid != 0) ++streamRoutes_;
}

void DeviceAllocator::endAllocateToPool(PoolId id) {
    std::lock_guard<FutexMutex> lock(mu_);
    const auto me = std::this_thread::get_id();
    const bool wasCapturing = capturing();
    size_t ended = 0;
    std::erase_if(routes_, [&](const Route& r) {
        if (!(r.pool == id) || (r.stream == 0 && r.thread != me)) return false;
        if (r.stream != 0) --streamRoutes_;
        ++ended;
        return true;
    });
    if (ended == 0)
        fail(mtiaErrorNotFound,
             "no allocations on device {} are routed to pool {{{}, {}}} from this thread", device_,
             id.first, id.second);
    // The routes are gone whatever happens next: a driver failure below leaves the work for later
    // (processEvents, emptyCache) rather than failing the call.
    try {
        if (wasCapturing && !capturing())
            captureEnded();
        else if (!capturing())
            releaseReadyPoolSegments(false);
    } catch (const Error&) {}
    if (auto it = pools_.find(id); it != pools_.end()) forgetPoolIfUnused(it->second.get());
}

void DeviceAllocator::captureEnded() {
    memory_.release(held_);
    for (auto& [base, seg] : segments_)
        if (seg->stampPending) stampFree(*seg);
    retryDeferredFrees();
    // Growth that failed during the capture kept the segments it reserved; those it never mapped
    // go.
    std::vector<Segment*> unmapped;
    for (auto& [base, seg] : segments_)
        if (seg->expandable && seg->mappedBytes == 0 && segmentIdle(*seg)) unmapped.push_back(seg);
    for (Segment* seg : unmapped) releaseSegment(seg);
    releaseReadyPoolSegments(false);
}

void DeviceAllocator::routeStreamToPool(PoolId id, const streams::Stream& stream) {
    std::lock_guard<FutexMutex> lock(mu_);
    auto it = pools_.find(id);
    if (it == pools_.end())
        fail(mtiaErrorNotFound, "device {} has no pool {{{}, {}}} to route stream {} to", device_,
             id.first, id.second, stream.id());
    const auto sid = static_cast<uint64_t>(stream.id());
    for (const Route& r : routes_)
        if (r.stream == sid)
            fail(mtiaErrorIllegalState,
                 "stream {} already allocates to pool {{{}, {}}} on device {}", sid, r.pool.first,
                 r.pool.second, device_);
    routes_.push_back({id, sid, std::this_thread::get_id()});
    ++streamRoutes_;
}

bool DeviceAllocator::poolInUse(PoolId id) const {
    std::lock_guard<FutexMutex> lock(mu_);
    auto it = pools_.find(id);
    return it != pools_.end() && it->second->users > 0;
}

bool DeviceAllocator::poolOwns(PoolId id, const void* ptr, size_t bytes) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<FutexMutex> lock(mu_);
    auto s = segments_.upper_bound(p);
    if (s == segments_.begin()) return false;
    const Segment& seg = *std::prev(s)->second;
    if (seg.owner == nullptr || !(seg.owner->id == id) || !seg.contains(p)) return false;
    const size_t offset = p - seg.base;
    if (bytes > seg.size - offset) return false;
    if (!seg.expandable) return true;
    const size_t last = bytes == 0 ? offset : offset + bytes - 1;
    for (size_t i = offset / seg.chunkSize; i <= last / seg.chunkSize; ++i)
        if (seg.chunks[i] == nullptr) return false;
    return true;
}

void DeviceAllocator::releasePool(PoolId id) {
    std::lock_guard<FutexMutex> lock(mu_);
    auto it = pools_.find(id);
    if (it == pools_.end() || it->second->users == 0)
        fail(mtiaErrorNotFound,
             "device {} has no pool {{{}, {}}} in use (never used, or released by all its users)",
             device_, id.first, id.second);
    PrivatePool* pool = it->second.get();
    if (pool->users > 1) {
        --pool->users;
        return;
    }
    std::vector<Segment*> mine;  // before the last user goes: bad_alloc here changes nothing
    for (auto& [base, seg] : segments_)
        if (seg->owner == pool) mine.push_back(seg);
    --pool->users;
    // Giving back its last segment forgets the pool: look it up again afterwards.
    for (Segment* seg : mine) releaseSegmentIfIdle(seg);
    if (!capturing()) releaseReadyPoolSegments(true);
    if (auto again = pools_.find(id); again != pools_.end())
        forgetPoolIfUnused(again->second.get());
}

}  // namespace mtia::allocator
