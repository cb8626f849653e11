#include "snapshot.hpp"

#include <string_view>

namespace mtia::mem {

namespace {
struct Named {
  Action action;
  const char* name;
};
constexpr Named kNames[] = {
    {Action::Alloc, "alloc"},
    {Action::FreeRequested, "free_requested"},
    {Action::FreeCompleted, "free_completed"},
    {Action::SegmentAlloc, "segment_alloc"},
    {Action::SegmentFree, "segment_free"},
    {Action::SegmentMap, "segment_map"},
    {Action::SegmentUnmap, "segment_unmap"},
    {Action::Snapshot, "snapshot"},
    {Action::Oom, "oom"},
};
}  // namespace

Action actionFromName(std::string_view name) {
  for (const Named& n : kNames)
    if (name == n.name) return n.action;
  return Action::Other;
}

const char* actionName(Action a) {
  for (const Named& n : kNames)
    if (n.action == a) return n.name;
  return "other";
}

}  // namespace mtia::mem
