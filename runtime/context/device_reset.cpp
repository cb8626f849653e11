#include "runtime/context/device_reset.hpp"

#include "core/error.hpp"
#include "graph/capture.hpp"
#include "runtime/context/runtime.hpp"

#include <mutex>

namespace mtia {
namespace {

// Graph objects captured on device ordinal are destroyed as mtiaGraphDestroy would: out of the
// handle table and reset now (waits for its replay, ends its use of its private pool, drops its
// command lists), whoever still holds a reference.
void releaseGraphs(Runtime& rt, int ordinal) {
    for (auto& [h, g] : rt.graphs().entries()) {
        mtiaGraphInfo info{};
        info.structSize = sizeof(info);
        g->info(info);
        if (info.device != ordinal) continue;
        if (auto removed = rt.graphs().remove(h)) {
            graph::untrackGraph(removed.get());
            removed->reset();
        }
    }
}

}  // namespace

void resetDevice(Runtime& rt, Device& dev) {
    static std::mutex resetMu;
    std::lock_guard lock(resetMu);
    const int ordinal = dev.ordinal();
    const driver::Driver& driver = rt.driver();
    if (graph::CaptureTable::instance().capturingOn(ordinal))
        fail(mtiaErrorStreamCaptureUnsupported,
             "a stream of device {} is capturing a graph; end the capture before resetting the "
             "device",
             ordinal);
    const auto driverReset = driver.ops().deviceReset;
    if (driverReset == nullptr && dev.faulted())
        fail(mtiaErrorNotSupported,
             "device {} has a sticky fault, and driver '{}' (driver ABI 1.{}) cannot clear it "
             "(deviceReset needs 1.8)",
             ordinal, driver.name(), MTIA_DRIVER_API_MINOR(driver.ops().version));
    // The running work first (a faulted device runs nothing more: its queues drain at once).
    (void)driver.ops().deviceSynchronize(dev.driverDevice());
    releaseGraphs(rt, ordinal);
    rt.streams().releaseDevice(ordinal);
    allocator::DeviceAllocator* memory = dev.memoryIfStarted();
    rt.ipc().releaseDevice(memory, dev.driverDevice());
    if (memory != nullptr) memory->releaseAll();
    if (driverReset != nullptr)
        driver.check(driverReset(dev.driverDevice()), "resetting the device");
    dev.forgetPeers();
}

}  // namespace mtia
