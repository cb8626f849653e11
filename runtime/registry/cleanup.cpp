#include "cleanup.hpp"

#include "registry.hpp"
#include "shared_object.hpp"

namespace mtia::registry {

Status cleanupMachine(const std::string& objectName, CleanupReport& out) {
  out = CleanupReport{};
  {
    std::unique_ptr<Registry> registry;
    const Status opened = Registry::openExisting(objectName, registry);
    if (opened.code == Code::Unavailable) {
      // Half-created or of another layout: garbage once nobody holds it open.
      const Status removed = removeIfUnused(objectName);
      if (removed) out.removed = true;
      return removed.code == Code::Busy ? Status::ok() : removed;
    }
    if (!opened) return opened;
    out.reaped = registry->reap();
    out.live = static_cast<uint32_t>(registry->processes().size());
  }  // closed here: our own opener lock must not keep the object
  if (out.live != 0) return Status::ok();
  const Status removed = removeIfUnused(objectName);
  if (removed.code == Code::Busy) return Status::ok();  // someone opened or registered meanwhile
  if (removed.code == Code::NotFound) return Status::ok();
  if (!removed) return removed;
  out.removed = true;
  return Status::ok();
}

}  // namespace mtia::registry
