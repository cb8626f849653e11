#include "cleanup.hpp"

#include "registry.hpp"
#include "requests.hpp"
#include "shared_object.hpp"

#include <unistd.h>

namespace mtia::registry {

namespace {

// Once the object is gone no tool can be waiting for one of its requests (a waiting tool holds it
// open). directory: the user's directory the object was in; "" finds it (as removeIfUnused does).
void removeEveryRequestFile(const std::string& objectName, const std::string& directory,
                            CleanupReport& out) {
    std::string dir;
    const Status found = directory.empty() ? requestDirectory(geteuid(), false, dir)
                                           : requestDirectory(directory, false, dir);
    if (found)
        out.requestFiles += removeRequestFiles(dir, objectName, -1, [](uint32_t) { return false; });
}

}  // namespace

Status cleanupMachine(const std::string& objectName, CleanupReport& out) {
    out = CleanupReport{};
    std::string directory;
    {
        std::unique_ptr<Registry> registry;
        const Status opened = Registry::openExisting(objectName, registry);
        if (opened.code == Code::Unavailable) {
            // Half-created or of another layout: garbage once nobody holds it open.
            const Status removed = removeIfUnused(objectName);
            if (removed) {
                out.removed = true;
                removeEveryRequestFile(objectName, "", out);
            }
            return removed.code == Code::Busy ? Status::ok() : removed;
        }
        if (!opened) return opened;
        out.reaped = registry->reap();
        out.live = static_cast<uint32_t>(registry->processes().size());
        // Answers nobody took (their tool was killed while waiting) and .tmp files of killed
        // writers.
        out.requestFiles = registry->removeAbandonedRequestFiles(false);
        directory = registry->directory();
    }  // closed here: our own opener lock must not keep the object
    if (out.live != 0) return Status::ok();
    const Status removed = removeIfUnused(objectName, directory);
    if (removed.code == Code::Busy) return Status::ok();  // someone opened or registered meanwhile
    if (removed.code == Code::NotFound) return Status::ok();
    if (!removed) return removed;
    out.removed = true;
    removeEveryRequestFile(objectName, directory, out);
    return Status::ok();
}

}  // namespace mtia::registry
