#include "replay_plan.hpp"

#include <fmt/format.h>

#include <unordered_map>

namespace mtia::mem {

namespace {

class Planner {
public:
    explicit Planner(const std::vector<TraceEntry>& entries) {
        // Reserved up front: a rehash in the middle of a trace of millions of entries costs more
        // than the table does.
        blocks_.reserve(entries.size() / 2 + 16);
        plan_.ops.reserve(entries.size() / 2 + 16);
    }

    void add(const TraceEntry& e) {
        switch (e.action) {
        case Action::Alloc: return alloc(e);
        case Action::FreeRequested: return free(e, true);
        case Action::FreeCompleted: return free(e, false);
        default:
            return;  // the recorded allocator's own doings (segments, snapshots, OOMs) are not ours
                     // to copy
        }
    }
    ReplayPlan take() { return std::move(plan_); }

private:
    struct BlockState {
        uint32_t slot;
        bool freed;  // requested, its completion still to come
    };

    void alloc(const TraceEntry& e) {
        if (auto it = blocks_.find(e.addr); it != blocks_.end()) {
            if (!it->second.freed) release(it->second.slot);  // its free fell out of the trace
            blocks_.erase(it);
        }
        const uint32_t slot = takeSlot(true);
        plan_.ops.push_back({ReplayOp::Alloc, streamIndex(e.stream), slot, e.size});
        blocks_.emplace(e.addr, BlockState{slot, false});
    }

    void free(const TraceEntry& e, bool requested) {
        auto it = blocks_.find(e.addr);
        if (it == blocks_.end()) {
            // Allocated before the trace began: in the prelude, into a slot no one used before.
            const uint32_t slot = takeSlot(false);
            plan_.prelude.push_back({ReplayOp::Alloc, streamIndex(e.stream), slot, e.size});
            release(slot);
            if (requested) blocks_.emplace(e.addr, BlockState{slot, true});
            return;
        }
        if (!it->second.freed) release(it->second.slot);
        if (requested)
            it->second.freed = true;
        else
            blocks_.erase(it);
    }

    void release(uint32_t slot) {
        plan_.ops.push_back({ReplayOp::Free, 0, slot, 0});
        spare_.push_back(slot);
    }
    uint32_t takeSlot(bool reuse) {
        if (reuse && !spare_.empty()) {
            const uint32_t s = spare_.back();
            spare_.pop_back();
            return s;
        }
        if (plan_.slots == UINT32_MAX) throw PlanError("more than 2^32 blocks live at once");
        return plan_.slots++;
    }
    uint16_t streamIndex(uint64_t stream) {
        // Traces use a handful of streams: a linear search beats hashing.
        for (size_t i = 0; i < plan_.streams.size(); ++i)
            if (plan_.streams[i] == stream) return static_cast<uint16_t>(i);
        if (plan_.streams.size() > UINT16_MAX)
            throw PlanError(fmt::format("more than {} streams", UINT16_MAX + 1));
        plan_.streams.push_back(stream);
        return static_cast<uint16_t>(plan_.streams.size() - 1);
    }

    ReplayPlan plan_;
    std::unordered_map<uint64_t, BlockState> blocks_;
    std::vector<uint32_t> spare_;
};

}  // namespace

ReplayPlan planReplay(const std::vector<TraceEntry>& entries) {
    Planner p(entries);
    for (const TraceEntry& e : entries) p.add(e);
    return p.take();
}

}  // namespace mtia::mem
