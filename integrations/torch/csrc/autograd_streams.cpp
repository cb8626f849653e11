#include "autograd_streams.h"

#include "hooks.h"
#include "mtia_check.h"
#include "streams.h"

#include <c10/util/Logging.h>

#include <exception>

namespace torch_mtia {
namespace {

// Makes `waiter` wait for the work issued to `producer` so far (both on device `device`).
void order(c10::DeviceIndex device, mtiaStream_t producer, mtiaStream_t waiter) {
    DeviceScope scope(device);
    mtiaEvent_t event = nullptr;
    MTIA_CHECK(mtiaEventCreateWithFlags(&event, mtiaEventDisableTiming));
    // Destroyed at once: a record still completes and a wait issued on it is still released.
    struct Destroy {
        mtiaEvent_t e;
        ~Destroy() { mtiaEventDestroy(e); }
    } destroy{event};
    MTIA_CHECK(mtiaEventRecord(event, producer));
    MTIA_CHECK(mtiaStreamWaitEvent(waiter, event, mtiaEventWaitDefault));
}

mtiaStream_t defaultHandle(c10::DeviceIndex device) {
    mtiaStream_t handle = nullptr;
    MTIA_CHECK(mtiaGetDefaultStream(device, &handle));
    return handle;
}

}  // namespace

BackwardFence backwardFenceBegin() {
    const MTIAHooks& hooks = MTIAHooks::get();
    BackwardFence fence;
    for (c10::DeviceIndex d = 0; d < hooks.deviceCount(); ++d) {
        if (!hooks.hasPrimaryContext(d)) continue;
        try {
            mtiaStream_t caller = nullptr;
            MTIA_CHECK(mtiaGetCurrentStream(d, &caller));
            mtiaStream_t fallback = defaultHandle(d);
            if (caller == fallback) continue;
            int64_t id = 0;
            MTIA_CHECK(mtiaStreamGetId(caller, &id));
            order(d, caller, fallback);
            // The engine also runs nodes on this thread (those fed by CPU gradients, and the
            // accumulation of gradients that meet there): on the default stream as well, so all of
            // the pass is in one order.
            MTIA_CHECK(mtiaSetCurrentStream(fallback));
            fence.emplace_back(d, id);
        } catch (const std::exception& e) {
            // A device that cannot order (a sticky fault) fails the MTIA work of the pass by
            // itself; a pass without MTIA tensors must not fail for it.
            LOG(WARNING)
                << "torch_mtia: backward pass not ordered with the current stream of device "
                << int{d} << ": " << e.what();
        }
    }
    return fence;
}

void backwardFenceEnd(const BackwardFence& fence) {
    for (const auto& [device, id] : fence) {
        try {
            mtiaStream_t caller = nullptr;
            MTIA_CHECK(mtiaStreamFromId(id, &caller));
            MTIA_CHECK(mtiaSetCurrentStream(caller));
            order(device, defaultHandle(device), caller);
        } catch (const std::exception& e) {
            LOG(WARNING) << "torch_mtia: gradients of device " << int{device}
                         << " not ordered with the stream that called backward: " << e.what();
        }
    }
}

}  // namespace torch_mtia
