// Expandable segments (PyTorch's expandable_segments:True): a segment per
// stream and pool reserves a large range of device addresses and maps
// physical chunks into it as requests need them (2 MiB chunks for the small
// pool, 20 MiB for the large one). Its blocks cover the whole reservation;
// unmapped blocks are never cached. Growth takes the lowest run of free
// blocks that is large enough and maps what is unmapped of it, so freed
// pieces merge back; shrinking unmaps the chunks that lie wholly inside
// cached free blocks. Live blocks never move.
#include "allocator/device_allocator.hpp"
#include "core/error.hpp"

#include <algorithm>

namespace mtia::allocator {

namespace {

size_t roundUpTo(size_t n, size_t step) {
    return (n + step - 1) / step * step;
}

// Absorbs b->next into b (same mapping state; neither cached).
void absorbNext(Block* b) {
    Block* n = b->next;
    b->size += n->size;
    b->next = n->next;
    if (b->next != nullptr) b->next->prev = b;
    n->pool->destroyBlock(n);
}

}  // namespace

Block* DeviceAllocator::growExpandable(BlockPool& pool, streams::Stream& stream, size_t rounded) {
    const auto sid = static_cast<uint64_t>(stream.id());
    reclaimHoles(pool, stream, rounded);
    auto growable = [&](Block* b) {
        return !b->allocated && b->pendingUses == 0 && (!b->mapped || pool.contains(b));
    };
    for (auto& [base, seg] : segments_) {
        if (!seg->expandable || seg->owner != pool.owner || seg->kind != pool.kind() ||
            seg->stream != sid)
            continue;
        for (Block* start = seg->head; start != nullptr;) {
            if (!growable(start)) {
                start = start->next;
                continue;
            }
            size_t total = 0;
            Block* b = start;
            for (; b != nullptr && growable(b); b = b->next) {
                total += b->size;
                if (total >= rounded) break;
            }
            if (b != nullptr && total >= rounded) return mapRun(seg, start, rounded);
            start = b != nullptr ? b->next : nullptr;
        }
    }
    Segment* seg = newExpandableSegment(pool, stream, rounded);
    if (seg == nullptr) return nullptr;
    Block* b = mapRun(seg, seg->head, rounded);
    // A capture keeps the segment (nothing is given back meanwhile): later growth uses it, and it
    // goes when the capture ends if it still maps nothing.
    if (b == nullptr && !capturing()) releaseSegment(seg);
    return b;
}

// Nothing cached fits, so the segments are about to map more. When at least the request's size sits
// mapped but free in holes of this stream's segments and the stream has no unfinished work (nothing
// queued can touch the holes), the chunks lying wholly in the holes go back first: a growing buffer
// (a KV cache) then reuses physical memory instead of adding to it. PyTorch unmaps only on
// out-of-memory and empty_cache, so its reserved memory keeps every hole. With garbage collection
// configured, it alone decides what idle memory goes back.
void DeviceAllocator::reclaimHoles(BlockPool& pool, streams::Stream& stream, size_t rounded) {
    if (capturing() || collectsGarbage()) return;
    const auto sid = static_cast<uint64_t>(stream.id());
    std::vector<Segment*> mine;
    size_t idle = 0;
    for (auto& [base, seg] : segments_) {
        if (!seg->expandable || seg->owner != pool.owner || seg->kind != pool.kind() ||
            seg->stream != sid)
            continue;
        mine.push_back(seg);
        for (const Block* b = seg->head; b != nullptr; b = b->next)
            if (b->mapped && pool.contains(b)) idle += b->size;
    }
    if (idle < rounded || !stream.idle()) return;
    for (Segment* seg : mine) shrinkExpandable(seg);
}

Segment* DeviceAllocator::newExpandableSegment(BlockPool& pool, streams::Stream& stream,
                                               size_t rounded) {
    const size_t chunk = granular(pool.kind() == PoolKind::Small ? kSmallBuffer : kLargeBuffer);
    if (rounded > SIZE_MAX - (chunk - 1))
        fail(mtiaErrorInvalidValue,
             "size {} is too large to represent once rounded to {}-byte chunks", rounded, chunk);
    const size_t need = roundUpTo(rounded, chunk);
    // The large pool's segment may grow to the whole device, small requests rarely need more than
    // an eighth; but every stream and private pool has segments of its own, so one reservation
    // takes at most an eighth of the device's address space (the simulated device has four times
    // its memory), and a stream that outgrows it gets another segment. Halved reservations are
    // tried when addresses run short all the same.
    size_t share = pool.kind() == PoolKind::Small ? totalMemory_ / 8 : totalMemory_;
    if (addressSpace_ != 0) share = std::min<size_t>(share, addressSpace_ / 8);
    size_t size = std::max(need, roundUpTo(share, chunk));
    uintptr_t va = 0;
    for (;;) {
        va = memory_.reserve(size);
        if (va != 0 || size == need) break;
        size = std::max(need, roundUpTo(size / 2, chunk));
    }
    if (va == 0) {
        driverRefusal_ = memory_.why();
        return nullptr;
    }
    std::unique_ptr<Segment> seg;
    Block* b = nullptr;
    try {
        seg = std::make_unique<Segment>();
        b = pool.makeBlock();
        seg->chunks.assign(size / chunk, nullptr);
        segments_.emplace(va, seg.get());
    } catch (...) {
        if (b != nullptr) pool.destroyBlock(b);
        memory_.unreserve(va, size);  // out of host memory: see the class comment
        throw;
    }
    seg->base = va;
    seg->size = size;
    seg->kind = pool.kind();
    seg->stream = static_cast<uint64_t>(stream.id());
    seg->owner = pool.owner;
    seg->expandable = true;
    seg->chunkSize = chunk;
    if (pool.owner != nullptr) seg->streamRef = stream.shared_from_this();
    b->address = va;
    b->size = size;
    b->stream = seg->stream;
    b->pool = &pool;
    b->segment = seg.get();
    b->mapped = false;
    seg->head = b;
    countSegment(*seg, true);
    return seg.release();
}

// Maps what is unmapped of [start, start + rounded) and returns it merged into one mapped block,
// out of the pool; null (nothing changed) when the device or the memory fraction says no.
Block* DeviceAllocator::mapRun(Segment* seg, Block* start, size_t rounded) {
    const size_t chunk = seg->chunkSize;
    const uintptr_t needEnd = start->address + rounded;
    std::vector<size_t> toMap;
    for (Block* b = start; b != nullptr && b->address < needEnd; b = b->next) {
        if (b->mapped) continue;
        const size_t first = (b->address - seg->base) / chunk;
        const size_t last =
            roundUpTo(std::min(b->address + b->size, needEnd) - seg->base, chunk) / chunk;
        for (size_t i = first; i < last; ++i) toMap.push_back(i);
    }
    if (!allowedToGrow(toMap.size() * chunk)) return nullptr;
    Leftovers left;  // physical memory created but not mapped
    size_t n = 0;
    try {
        for (; n < toMap.size(); ++n) {
            const size_t i = toMap[n];
            mtiaDrvMem mem = memory_.map(seg->base + i * chunk, chunk, &left);
            if (mem == nullptr) break;
            seg->chunks[i] = mem;
        }
    } catch (...) {
        undoPartialMap(seg, start, toMap, n);
        giveBack(left);
        throw;
    }
    if (n < toMap.size()) {
        driverRefusal_ = memory_.why();
        undoPartialMap(seg, start, toMap, n);
        giveBack(left);
        return nullptr;
    }
    seg->mappedBytes += n * chunk;
    countMapped(*seg, n * chunk, n, true);
    noteMappedRuns(seg, toMap, n);
    return joinMapped(seg, start, needEnd);
}

// The run of growable blocks from start up to end at least (the chunks under it all mapped now) as
// one mapped block, out of the pool; the unmapped rest of the last block past end stays a block of
// its own.
Block* DeviceAllocator::joinMapped(Segment* seg, Block* start, uintptr_t end) {
    const size_t chunk = seg->chunkSize;
    BlockPool& pool = *start->pool;
    for (Block* b = start;;) {
        if (b->mapped) {
            pool.erase(b);
        } else {
            const uintptr_t mappedEnd =
                seg->base + roundUpTo(std::min(b->address + b->size, end) - seg->base, chunk);
            if (mappedEnd < b->address + b->size)
                splitBlock(b, mappedEnd - b->address);  // the rest stays unmapped
            b->mapped = true;
        }
        const bool last = b->address + b->size >= end;
        if (b != start) absorbNext(start);
        if (last) break;
        b = start->next;
    }
    return start;
}

// Growth failed after mapping the first `mapped` chunks of toMap (in address order). They go back
// to the device, except during a capture, which gives nothing back: then they stay mapped as a
// cached free block (the run from start up to the last chunk mapped), which later requests use.
void DeviceAllocator::undoPartialMap(Segment* seg, Block* start, const std::vector<size_t>& toMap,
                                     size_t mapped) {
    if (mapped == 0) return;
    const size_t chunk = seg->chunkSize;
    if (!capturing()) {
        for (size_t k = 0; k < mapped; ++k) {
            memory_.unmap(seg->base + toMap[k] * chunk, chunk, seg->chunks[toMap[k]]);
            seg->chunks[toMap[k]] = nullptr;
        }
        return;
    }
    seg->mappedBytes += mapped * chunk;
    countMapped(*seg, mapped * chunk, mapped, true);
    noteMappedRuns(seg, toMap, mapped);
    Block* b = joinMapped(seg, start, seg->base + (toMap[mapped - 1] + 1) * chunk);
    mergeFreeNeighbours(b);
    cache(b);
}

void DeviceAllocator::shrinkExpandable(Segment* seg) {
    const size_t chunk = seg->chunkSize;
    std::vector<Block*> cached;
    for (Block* b = seg->head; b != nullptr; b = b->next)
        if (b->mapped && !b->allocated && b->pool->contains(b)) cached.push_back(b);
    for (Block* b : cached) {
        const size_t first = roundUpTo(b->address - seg->base, chunk) / chunk;
        const size_t last = (b->address + b->size - seg->base) / chunk;
        if (first >= last) continue;
        b->pool->erase(b);
        Block* mid = b;
        const uintptr_t from = seg->base + first * chunk;
        const uintptr_t to = seg->base + last * chunk;
        if (from > b->address) {
            mid = splitBlock(b, from - b->address);
            cache(b);
        }
        if (to < mid->address + mid->size) cache(splitBlock(mid, to - mid->address));
        for (size_t i = first; i < last; ++i) {
            memory_.unmap(seg->base + i * chunk, chunk, seg->chunks[i]);
            seg->chunks[i] = nullptr;
        }
        seg->mappedBytes -= (last - first) * chunk;
        countMapped(*seg, (last - first) * chunk, last - first, false);
        noteUnmapped(*seg, first, last);
        mid->mapped = false;
        coalesceUnmapped(mid);
    }
    if (seg->mappedBytes == 0) releaseSegment(seg);
}

void DeviceAllocator::coalesceUnmapped(Block* b) {
    if (b->next != nullptr && !b->next->mapped) absorbNext(b);
    if (b->prev != nullptr && !b->prev->mapped) absorbNext(b->prev);
}

}  // namespace mtia::allocator
