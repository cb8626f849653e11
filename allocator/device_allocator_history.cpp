// Memory history in the device allocator: the trace entries of its actions
// and the contexts of its blocks and segments (who allocated them), and the
// copy of its state that a snapshot is made of. PyTorch's meanings: alloc and
// free entries carry the requested bytes, segment entries the segment's (or
// mapped range's) bytes, oom the device's free bytes in place of an address.
#include "allocator/device_allocator.hpp"

namespace mtia::allocator {

PoolId DeviceAllocator::poolIdOf(const Segment& seg) {
    return seg.owner != nullptr ? seg.owner->id : PoolId{};
}

void DeviceAllocator::record(mem::Action action, uint64_t addr, uint64_t size, uint64_t stream,
                             PoolId pool, AllocContext* ctx) noexcept {
    HistoryRecorder& history = context_.history();
    if (!history.tracing()) return;
    if (trace_.capacity() !=
        history.maxEntries()) {  // a ring of the settings in force (set lazily)
        try {
            for (AllocContext* c : trace_.resize(history.maxEntries())) history.unref(c);
        } catch (...) {
            return;  // out of host memory: the entry is lost
        }
    }
    TraceRecord r;
    r.action = action;
    r.metadata = history.currentMetadata();
    r.addr = addr;
    r.size = size;
    r.stream = stream;
    r.pool = pool;
    r.stamp = history.stamp();
    r.context = ctx;
    if (ctx != nullptr) ctx->ref();
    try {
        history.unref(trace_.push(r));
    } catch (...) {
        history.unref(ctx);  // out of host memory: the entry is lost
    }
}

void DeviceAllocator::noteAlloc(Block* b, AllocContext* ctx) noexcept {
    HistoryRecorder& history = context_.history();
    if (!history.recording()) {  // turned off since the capture: see applyHistorySettings
        history.unref(ctx);
        return;
    }
    b->context = ctx;
    record(mem::Action::Alloc, b->address, b->requested, b->stream, poolIdOf(*b->segment), ctx);
}

// The two notes below run on every free: with tracing off they cost one relaxed load.
void DeviceAllocator::noteFreeRequested(const Block* b) noexcept {
    if (!context_.history().tracing()) return;
    record(mem::Action::FreeRequested, b->address, b->requested, b->stream, poolIdOf(*b->segment),
           b->context);
}

void DeviceAllocator::noteFreeCompleted(Block* b) noexcept {
    if (context_.history().tracing())
        record(mem::Action::FreeCompleted, b->address, b->requested, b->stream,
               poolIdOf(*b->segment), b->context);
    if (b->context != nullptr) {
        context_.history().unref(b->context);
        b->context = nullptr;
    }
}

void DeviceAllocator::noteSegmentAlloc(Segment* seg) noexcept {
    if (!context_.history().recording()) return;
    if (allocContext_ != nullptr && seg->context == nullptr) {
        allocContext_->ref();
        seg->context = allocContext_;
    }
    record(mem::Action::SegmentAlloc, seg->base, seg->size, seg->stream, poolIdOf(*seg),
           allocContext_);
}

void DeviceAllocator::noteMapped(Segment* seg, size_t first, size_t last) noexcept {
    if (!context_.history().recording()) return;
    if (allocContext_ != nullptr && seg->context == nullptr) {
        allocContext_->ref();
        seg->context = allocContext_;
    }
    record(mem::Action::SegmentMap, seg->base + first * seg->chunkSize,
           (last - first) * seg->chunkSize, seg->stream, poolIdOf(*seg), allocContext_);
}

void DeviceAllocator::noteMappedRuns(Segment* seg, const std::vector<size_t>& chunks,
                                     size_t n) noexcept {
    for (size_t k = 0; k < n;) {
        size_t end = k + 1;
        while (end < n && chunks[end] == chunks[end - 1] + 1) ++end;
        noteMapped(seg, chunks[k], chunks[end - 1] + 1);
        k = end;
    }
}

void DeviceAllocator::noteUnmapped(const Segment& seg, size_t first, size_t last) noexcept {
    record(mem::Action::SegmentUnmap, seg.base + first * seg.chunkSize,
           (last - first) * seg.chunkSize, seg.stream, poolIdOf(seg), seg.context);
}

void DeviceAllocator::noteSegmentRelease(Segment* seg) noexcept {
    HistoryRecorder& history = context_.history();
    if (history.tracing()) {
        if (!seg->expandable) {
            record(mem::Action::SegmentFree, seg->base, seg->size, seg->stream, poolIdOf(*seg),
                   seg->context);
        } else {
            for (size_t i = 0; i < seg->chunks.size();) {  // one entry per mapped run
                if (seg->chunks[i] == nullptr) {
                    ++i;
                    continue;
                }
                size_t end = i;
                while (end < seg->chunks.size() && seg->chunks[end] != nullptr) ++end;
                noteUnmapped(*seg, i, end);
                i = end;
            }
        }
    }
    history.unref(seg->context);
    seg->context = nullptr;
}

void DeviceAllocator::applyHistorySettings() {
    HistoryRecorder& history = context_.history();
    std::vector<AllocContext*> dropped;
    {
        std::lock_guard<FutexMutex> lock(mu_);
        switch (history.mode()) {
        case HistoryMode::All: dropped = trace_.resize(history.maxEntries()); break;
        case HistoryMode::State: dropped = trace_.clear(); break;
        case HistoryMode::Off:
            dropped = trace_.clear();
            for (const auto& [base, seg] : segments_) {
                history.unref(seg->context);
                seg->context = nullptr;
                for (Block* b = seg->head; b != nullptr; b = b->next) {
                    history.unref(b->context);
                    b->context = nullptr;
                }
            }
            break;
        }
        for (AllocContext* c : dropped) history.unref(c);
    }
    history.drain();
}

DeviceSnapshot DeviceAllocator::collectSnapshot(bool traces) {
    DeviceSnapshot out;
    out.device = device_;
    auto hold = [](AllocContext* c) {
        if (c != nullptr) c->ref();
        return c;
    };
    std::lock_guard<FutexMutex> lock(mu_);
    if (context_.history().tracing())
        record(mem::Action::Snapshot, 0,
               static_cast<uint64_t>(stats_.activeBytes[kStatAll].current), 0, PoolId{}, nullptr);
    size_t blocks = 0;
    for (const auto& [base, seg] : segments_)
        for (const Block* b = seg->head; b != nullptr; b = b->next) ++blocks;
    out.blocks.reserve(blocks);
    out.segments.reserve(segments_.size());
    try {
        for (const auto& [base, seg] : segments_) {
            SnapshotSegment* open = nullptr;  // the mapped range being filled
            for (const Block* b = seg->head; b != nullptr; b = b->next) {
                if (!b->mapped) {
                    open = nullptr;
                    continue;
                }
                if (open == nullptr) {
                    SnapshotSegment s;
                    s.address = b->address;
                    s.stream = seg->stream;
                    s.large = seg->kind == PoolKind::Large;
                    s.expandable = seg->expandable;
                    s.pool = poolIdOf(*seg);
                    s.context = hold(seg->context);
                    s.firstBlock = out.blocks.size();
                    out.segments.push_back(s);
                    open = &out.segments.back();
                }
                SnapshotBlock sb;
                sb.address = b->address;
                sb.size = b->size;
                sb.state = b->allocated ? mem::BlockState::ActiveAllocated
                           : b->cached  ? mem::BlockState::Inactive
                                        : mem::BlockState::ActivePendingFree;
                const bool active = sb.state != mem::BlockState::Inactive;
                sb.requested = active ? b->requested : b->size;
                sb.context = active ? hold(b->context) : nullptr;
                out.blocks.push_back(sb);
                open->totalSize += b->size;
                ++open->blockCount;
            }
        }
        if (traces) {
            out.trace.reserve(trace_.size());
            trace_.forEach([&](const TraceRecord& r) {
                out.trace.push_back(r);
                hold(r.context);
            });
        }
    } catch (...) {
        HistoryRecorder& history = context_.history();
        for (const SnapshotSegment& s : out.segments) history.unref(s.context);
        for (const SnapshotBlock& b : out.blocks) history.unref(b.context);
        for (const TraceRecord& r : out.trace) history.unref(r.context);
        throw;
    }
    return out;
}

}  // namespace mtia::allocator
