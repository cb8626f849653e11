// How the device allocator gives memory back: pending cross-stream frees,
// released private pools, the oversize and release-everything steps of the
// out-of-memory ladder, garbage collection, mtiaEmptyCache, and the
// out-of-memory report.
#include "allocator/byte_format.hpp"
#include "allocator/device_allocator.hpp"
#include "core/error.hpp"

#include <algorithm>

namespace mtia::allocator {

void DeviceAllocator::processPending() {
    if (!deferredFrees_.empty()) retryDeferredFrees();
    if (!pending_.empty()) {
        std::vector<Block*> done;
        std::erase_if(pending_, [&](PendingUse& u) {
            if (!u.stream->completed(u.seq)) return false;
            if (--u.block->pendingUses == 0) done.push_back(u.block);
            return true;
        });
        for (Block* b : done) freeBlock(b);
    }
    if (!releasable_.empty()) releaseReadyPoolSegments(false);
}

void DeviceAllocator::waitForPendingUses() {
    ++stats_.numSyncAllStreams;
    retryDeferredFrees();
    std::vector<PendingUse> pending;
    pending.swap(pending_);
    for (PendingUse& u : pending) {
        try {
            u.stream->wait(u.seq);
        } catch (const Error&) {
            // A faulted device dropped the work: the block is not in use any more either way.
        }
        if (--u.block->pendingUses == 0) freeBlock(u.block);
    }
}

bool DeviceAllocator::segmentIdle(const Segment& seg) const {
    for (const Block* b = seg.head; b != nullptr; b = b->next) {
        if (b->allocated || b->pendingUses > 0) return false;
        if (b->mapped && !b->pool->contains(b)) return false;
    }
    return true;
}

void DeviceAllocator::releaseSegmentIfIdle(Segment* seg) {
    if (!segmentIdle(*seg)) return;
    if (capturing() || !segmentWorkDone(*seg)) {  // capturing first: nothing is asked then
        if (std::find(releasable_.begin(), releasable_.end(), seg) == releasable_.end())
            releasable_.push_back(seg);
        return;
    }
    releaseSegment(seg);
}

bool DeviceAllocator::segmentWorkDone(Segment& seg) {
    if (!seg.streamRef) return true;
    if (seg.stampPending) stampFree(seg);
    return !seg.stampPending && seg.streamRef->completed(seg.lastFreeSeq);
}

void DeviceAllocator::releaseReadyPoolSegments(bool wait) {
    const std::vector<Segment*> candidates = releasable_;
    for (Segment* seg : candidates) {
        if (!segmentIdle(*seg)) continue;
        if (!segmentWorkDone(*seg)) {
            // Unstamped: the driver cannot say how far the stream is; emptyCache synchronizes the
            // device.
            if (!wait || seg->stampPending) continue;
            try {
                seg->streamRef->wait(seg->lastFreeSeq);
            } catch (const Error&) {
                // faulted work was dropped
            }
        }
        releaseSegment(seg);
    }
}

void DeviceAllocator::releaseSegment(Segment* seg) {
    noteSegmentRelease(seg);
    for (Block* b = seg->head; b != nullptr; b = b->next)
        if (b->mapped && b->pool->erase(b)) inactiveSplitOut(b);
    if (seg->expandable) {
        size_t mappedChunks = 0;
        for (size_t i = 0; i < seg->chunks.size(); ++i)
            if (seg->chunks[i] != nullptr) {
                memory_.unmap(seg->base + i * seg->chunkSize, seg->chunkSize, seg->chunks[i]);
                ++mappedChunks;
            }
        if (mappedChunks > 0) countMapped(*seg, seg->mappedBytes, mappedChunks, false);
        memory_.unreserve(seg->base, seg->size);
    } else {
        memory_.release(seg->base, seg->size, seg->mem);
        countMapped(*seg, seg->size, 1, false);
    }
    countSegment(*seg, false);
    segments_.erase(seg->base);
    std::erase(releasable_, seg);
    PrivatePool* owner = seg->owner;
    for (Block* b = seg->head; b != nullptr;) {
        Block* next = b->next;
        b->pool->destroyBlock(b);
        b = next;
    }
    delete seg;
    if (owner != nullptr) forgetPoolIfUnused(owner);
}

void DeviceAllocator::forgetPoolIfUnused(PrivatePool* pool) {
    if (pool->users > 0 || pool->segments > 0) return;
    for (const Route& r : routes_)
        if (r.pool == pool->id) return;
    pools_.erase(pool->id);
}

// PyTorch's release_available_cached_blocks: with max_split_size_mb set, cached oversize blocks of
// the request's pool and stream are whole segments; give back the smallest one that is large
// enough, or else the largest ones until the request's size has been given back.
bool DeviceAllocator::releaseOversize(BlockPool& pool, uint64_t stream, size_t rounded) {
    if (config_.maxSplitSize == AllocConfig::kUnlimited) return false;
    std::vector<Block*> oversize;
    pool.forEach([&](Block* b) {
        if (b->stream == stream && b->size >= config_.maxSplitSize && !b->isSplit() &&
            !b->segment->expandable)
            oversize.push_back(b);
    });
    if (oversize.empty()) return false;
    (void)memory_.synchronize();
    // forEach visits by size: the first large enough is the smallest such.
    for (Block* b : oversize)
        if (b->size >= rounded) {
            releaseSegment(b->segment);
            return true;
        }
    size_t released = 0;
    for (auto it = oversize.rbegin(); it != oversize.rend() && released < rounded; ++it) {
        released += (*it)->size;
        releaseSegment((*it)->segment);
    }
    return true;
}

// A new segment is about to be allocated. When this stream's pool caches at least that much in
// whole segments that fit nowhere (unsplit free blocks too small for the request) and the stream
// has no unfinished work (nothing queued can touch them), they go back first, largest first, until
// the new segment's size has been given back: memory that grows in odd sizes (a KV cache
// re-allocated a block larger) then reuses what it left instead of adding to it. PyTorch keeps them
// until out-of-memory, empty_cache or garbage collection. With garbage collection configured, it
// alone decides.
void DeviceAllocator::reclaimWholeSegments(BlockPool& pool, streams::Stream& stream, size_t size) {
    if (capturing() || collectsGarbage() || pool.kind() == PoolKind::Small) return;
    const auto sid = static_cast<uint64_t>(stream.id());
    std::vector<Block*> whole;
    size_t cached = 0;
    pool.forEach([&](Block* b) {
        if (b->stream == sid && !b->isSplit() && !b->segment->expandable && b->size < size) {
            whole.push_back(b);
            cached += b->size;
        }
    });
    if (cached < size || !stream.idle()) return;
    size_t released = 0;
    for (auto it = whole.rbegin(); it != whole.rend() && released < size; ++it) {  // largest first
        released += (*it)->size;
        releaseSegment((*it)->segment);
    }
}

mtiaError_t DeviceAllocator::releaseCached() {
    waitForPendingUses();
    const mtiaError_t st = memory_.synchronize();
    std::vector<Segment*> candidates;
    for (auto& [base, seg] : segments_)
        if (seg->owner == nullptr || seg->owner->users == 0) candidates.push_back(seg);
    for (Segment* seg : candidates) {
        if (seg->expandable)
            shrinkExpandable(seg);
        else if (segmentIdle(*seg))
            releaseSegment(seg);
    }
    return st;
}

// Proactive and cheap: only with a memory fraction set and a threshold, and only whole cached
// segments of the large pool that sat unused for at least the average age, until reserved memory is
// back under threshold x allowed.
void DeviceAllocator::collectGarbage() {
    if (!collectsGarbage()) return;
    const double allowed = fraction_ * static_cast<double>(totalMemory_);
    const auto threshold = static_cast<int64_t>(config_.garbageCollectionThreshold * allowed);
    int64_t excess = stats_.reservedBytes[kStatAll].current - threshold;
    if (excess <= 0) return;
    bool synced = false;
    while (excess > 0) {
        std::vector<Block*> candidates;
        uint64_t totalAge = 0;
        large_.forEach([&](Block* b) {
            if (b->isSplit() || b->segment->expandable) return;
            candidates.push_back(b);
            totalAge += searches_ - b->gcStamp;
        });
        if (candidates.empty()) return;
        const uint64_t average = totalAge / candidates.size();
        if (!synced) {
            (void)memory_.synchronize();
            synced = true;
        }
        for (Block* b : candidates) {
            if (excess <= 0) break;
            if (searches_ - b->gcStamp < average) continue;
            excess -= static_cast<int64_t>(b->size);
            releaseSegment(b->segment);
        }
    }
}

// One of the ways memory goes back: Note [giving memory back] in device_allocator.cpp.
void DeviceAllocator::emptyCache() {
    Lock lock(mu_);
    if (capturing())
        fail(mtiaErrorIllegalState,
             "device {} has a capture in progress (allocations routed to a private pool by stream)",
             device_);
    if (const mtiaError_t st = releaseCached(); st != mtiaSuccess)
        throw Error(
            st, fmt::format("device {} has a sticky fault; its cache was freed all the same: {}",
                            device_, memory_.why()));
}

void DeviceAllocator::outOfMemory(Lock& lock, size_t size, size_t rounded, uint64_t stream) {
    ++stats_.numOoms;
    uint64_t free = 0;
    uint64_t total = totalMemory_;
    try {
        memory_.info(free, total);
    } catch (const Error&) {
        // the report goes out without the device's figures
    }
    record(mem::Action::Oom, free, rounded, stream, PoolId{}, allocContext_);
    const std::string message = outOfMemoryMessage(size, rounded, free, total);
    const auto limit =
        fractionSet_ ? static_cast<uint64_t>(fraction_ * static_cast<double>(total)) : total;
    lock.unlock();
    context_.notifyOom(device_, rounded, limit, free);
    throw Error(mtiaErrorMemoryAllocation, message);
}

std::string DeviceAllocator::outOfMemoryMessage(size_t size, size_t rounded, uint64_t free,
                                                uint64_t total) const {
    const auto allocated = static_cast<uint64_t>(stats_.allocatedBytes[kStatAll].current);
    const auto reserved = static_cast<uint64_t>(stats_.reservedBytes[kStatAll].current);
    const uint64_t unallocated = reserved - allocated;
    uint64_t inPools = 0;
    uint64_t largest = 0;
    auto scan = [&](const BlockPool& p) {
        p.forEach([&](Block* b) { largest = std::max<uint64_t>(largest, b->size); });
    };
    scan(small_);
    scan(large_);
    for (const auto& [id, pool] : pools_) {
        inPools += pool->reserved;
        scan(pool->small);
        scan(pool->large);
    }
    std::string m = fmt::format("out of memory on device {0}: tried to allocate {1} ({2} bytes, "
                                "{3} once rounded). Device {0} has {4} in "
                                "total, of which {5} is free. This process has {6} allocated and "
                                "{7} reserved but unallocated (largest free "
                                "block {8}); {9} of its memory is held in private pools",
                                device_, formatBytes(size), size, rounded, formatBytes(total),
                                formatBytes(free), formatBytes(allocated), formatBytes(unallocated),
                                formatBytes(largest), formatBytes(inPools));
    const auto limit = static_cast<uint64_t>(fraction_ * static_cast<double>(total));
    if (fractionSet_)
        m += fmt::format("; its memory fraction {} allows {}", fraction_, formatBytes(limit));
    m += ". ";
    if (rounded > total)
        m += "The request is larger than the device's memory.";
    else if (fractionSet_ && reserved + segmentSize(rounded) > limit &&
             free >= segmentSize(rounded))
        m += "The memory fraction is the limit (mtiaSetMemoryFraction, "
             "per_process_memory_fraction).";
    else if (unallocated >= rounded)
        m += config_.expandableSegments  // no point suggesting what is already on
                 ? "Fragmentation: more than the request is reserved but unallocated, yet no free "
                   "block fits."
                 : "Fragmentation: more than the request is reserved but unallocated, yet no free "
                   "block fits; "
                   "MTIA_ALLOC_CONF=expandable_segments:True avoids this.";
    else
        m += "The device is exhausted: free memory or allocate less.";
    if (!driverRefusal_.empty()) m += fmt::format(" (The driver said: {})", driverRefusal_);
    if (capturing())
        m += " A capture is underway on this device (allocations routed to a private pool by "
             "stream), so no cached "
             "memory was given back to make room.";
    return m;
}

}  // namespace mtia::allocator
