#include "runtime/context/remote_snapshot.hpp"

#include "core/log.hpp"
#include "platform/registry/requests.hpp"
#include "runtime/context/memory_snapshot.hpp"

#include <atomic>
#include <exception>

namespace mtia {
namespace {

std::atomic<Runtime*> gTarget{nullptr};

registry::RequestResult serve(registry::RequestOp op, const char* path) {
    Runtime* rt = gTarget.load(std::memory_order_acquire);
    if (rt == nullptr) return registry::RequestResult::Failed;
    try {
        const mtiaSnapshotFormat format =
            op == registry::RequestOp::SnapshotJson ? mtiaSnapshotJson : mtiaSnapshotPickle;
        dumpMemorySnapshot(*rt, path, format, true);
        return registry::RequestResult::Done;
    } catch (const std::exception& e) {
        log(LogLevel::Warn, "memory snapshot requested by another process failed: {}", e.what());
        return registry::RequestResult::Failed;
    }
}

}  // namespace

void installRemoteSnapshot(Runtime& rt) {
    gTarget.store(&rt, std::memory_order_release);
    registry::setRequestHandler(&serve);
}

void stopRemoteSnapshot() {
    gTarget.store(nullptr, std::memory_order_release);
}

}  // namespace mtia
