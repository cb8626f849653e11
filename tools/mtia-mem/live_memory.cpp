#include "live_memory.hpp"

#include <unordered_set>

namespace mtia::mem {

LiveMemory::LiveMemory(const Snapshot& snap, int device) {
    const auto& entries = snap.deviceTraces[static_cast<size_t>(device)];
    std::unordered_set<uint64_t> mentioned;  // addresses of alloc and free entries seen so far
    for (const TraceEntry& e : entries) {
        const bool free = e.action == Action::FreeRequested || e.action == Action::FreeCompleted;
        if (e.action != Action::Alloc && !free) continue;
        // The first mention of an address being a free: that block was allocated before the ring
        // began.
        if (mentioned.insert(e.addr).second && free)
            live_[e.addr] = LiveBlock{e.size, e.stack, false};
    }
    for (const Segment& seg : snap.segments) {
        if (seg.device != device) continue;
        for (const Block& b : seg.blocks)
            if ((b.state == BlockState::ActiveAllocated ||
                 b.state == BlockState::ActivePendingFree) &&
                !mentioned.contains(b.address))
                live_[b.address] = LiveBlock{b.requestedSize > 0 ? b.requestedSize : b.size,
                                             b.stack, b.state == BlockState::ActivePendingFree};
    }
    for (const auto& [addr, block] : live_) liveBytes_ += block.size;
    preludeBytes_ = liveBytes_;
    preludeBlocks_ = live_.size();
}

}  // namespace mtia::mem
