// The blocks live on one device as its trace is replayed, entry by entry:
// what trace (the peak) and plot (the timeline) both walk.
//
// Live means allocated and not yet free_completed. free_requested marks a
// block pending: the program let go of it, but other streams may still use it
// and the allocator cannot hand it out, so it still holds memory (the
// snapshot's "active" bytes, as PyTorch's memory viewer counts them). The size
// counted is the trace's: alloc's size, the bytes requested.
//
// The history ring keeps only the newest entries, so blocks can be live before
// the first one. Two kinds are known and count as live from the start (the
// prelude): blocks freed in the trace whose alloc is not in it (their size is
// the free's), and blocks live in the snapshot's segments whose address the
// trace never mentions (their requested_size). Blocks allocated before the
// ring and freed before the snapshot leave no trace at all.
#pragma once

#include "allocator/snapshot/model.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace mtia::mem {

struct LiveBlock {
    uint64_t size = 0;
    StackId stack = 0;
    bool pending = false;  // free_requested, not yet free_completed
};

class LiveMemory {
public:
    // The state before the first entry of snap.deviceTraces[device]: the prelude.
    LiveMemory(const Snapshot& snap, int device);

    // Applies one entry of the device's trace; onChange(stack, delta) is called for every change of
    // live bytes (an alloc at a live address first drops the block there, as the allocator must
    // have freed it).
    template <class F>
    void apply(const TraceEntry& e, F&& onChange) {
        switch (e.action) {
        case Action::Alloc: {
            ++allocs_;
            auto [it, added] = live_.try_emplace(e.addr);
            if (!added) change(it->second.stack, -static_cast<int64_t>(it->second.size), onChange);
            it->second = LiveBlock{e.size, e.stack, false};
            change(e.stack, static_cast<int64_t>(e.size), onChange);
            return;
        }
        case Action::FreeRequested:
            if (auto it = live_.find(e.addr); it != live_.end() && !it->second.pending) {
                it->second.pending = true;
                ++frees_;
            }
            return;
        case Action::FreeCompleted:
            if (auto it = live_.find(e.addr); it != live_.end()) {
                if (!it->second.pending) ++frees_;  // its request is not in the trace
                change(it->second.stack, -static_cast<int64_t>(it->second.size), onChange);
                live_.erase(it);
            }
            return;
        default: return;  // segment, snapshot, oom and annotation entries change no block
        }
    }
    void apply(const TraceEntry& e) {
        apply(e, [](StackId, int64_t) {});
    }

    uint64_t liveBytes() const { return liveBytes_; }
    const std::unordered_map<uint64_t, LiveBlock>& blocks() const { return live_; }  // by address
    uint64_t preludeBytes() const { return preludeBytes_; }
    size_t preludeBlocks() const { return preludeBlocks_; }
    uint64_t allocs() const { return allocs_; }
    // Blocks freed: at their free_requested, or at free_completed when the request is not in the
    // trace.
    uint64_t frees() const { return frees_; }

private:
    template <class F>
    void change(StackId stack, int64_t delta, F& onChange) {
        liveBytes_ += static_cast<uint64_t>(delta);  // wraps back for negative deltas
        onChange(stack, delta);
    }

    std::unordered_map<uint64_t, LiveBlock> live_;
    uint64_t liveBytes_ = 0;
    uint64_t preludeBytes_ = 0;
    size_t preludeBlocks_ = 0;
    uint64_t allocs_ = 0;
    uint64_t frees_ = 0;
};

}  // namespace mtia::mem
