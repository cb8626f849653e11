#include "allocator/snapshot/model.hpp"

#include <fmt/format.h>

namespace mtia::mem {

namespace {

template <typename E>
struct Named {
    E value;
    const char* name;
};

constexpr Named<Action> kActions[] = {
    {Action::Alloc, "alloc"},
    {Action::FreeRequested, "free_requested"},
    {Action::FreeCompleted, "free_completed"},
    {Action::SegmentAlloc, "segment_alloc"},
    {Action::SegmentFree, "segment_free"},
    {Action::SegmentMap, "segment_map"},
    {Action::SegmentUnmap, "segment_unmap"},
    {Action::Snapshot, "snapshot"},
    {Action::Oom, "oom"},
    {Action::Annotate, "annotate"},
};

// "active_awaiting_free" is what the _snapshot docstring calls the pending state; the C++ writes
// "active_pending_free" (reference notes 4.2). Both read the same.
constexpr Named<BlockState> kStates[] = {
    {BlockState::ActiveAllocated, "active_allocated"},
    {BlockState::ActivePendingFree, "active_pending_free"},
    {BlockState::ActivePendingFree, "active_awaiting_free"},
    {BlockState::Inactive, "inactive"},
};

// One string per stack: the frames' fields joined with separators that file names and function
// names do not contain.
std::string stackKey(const std::vector<Frame>& frames) {
    std::string key;
    for (const Frame& f : frames)
        fmt::format_to(std::back_inserter(key), "{}\x1f{}\x1f{}\x1e", f.filename, f.line, f.name);
    return key;
}

}  // namespace

StackId StackTable::intern(const std::vector<Frame>& frames) {
    if (frames.empty()) return 0;
    auto [it, added] = index_.try_emplace(stackKey(frames), static_cast<StackId>(stacks_.size()));
    if (added) stacks_.push_back(frames);
    return it->second;
}

std::optional<StackId> StackTable::find(const std::vector<Frame>& frames) const {
    if (frames.empty()) return 0;
    const auto it = index_.find(stackKey(frames));
    if (it == index_.end()) return std::nullopt;
    return it->second;
}

uint32_t Snapshot::internString(std::string_view s) {
    if (s.empty()) return 0;
    auto [it, added] =
        stringIndex_.try_emplace(std::string(s), static_cast<uint32_t>(strings.size()));
    if (added) strings.emplace_back(s);
    return it->second;
}

Action actionFromName(std::string_view name) {
    for (const auto& n : kActions)
        if (name == n.name) return n.value;
    return Action::Other;
}

const char* actionName(Action a) {
    for (const auto& n : kActions)
        if (n.value == a) return n.name;
    return "other";
}

BlockState blockStateFromName(std::string_view name) {
    for (const auto& n : kStates)
        if (name == n.name) return n.value;
    return BlockState::Other;
}

const char* blockStateName(BlockState s) {
    for (const auto& n : kStates)
        if (n.value == s) return n.name;
    return "other";
}

}  // namespace mtia::mem
