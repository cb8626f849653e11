#include "autograd_streams.h"

#include "hooks.h"
#include "mtia_check.h"
#include "streams.h"

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
    mtiaStream_t caller = nullptr;
    MTIA_CHECK(mtiaGetCurrentStream(d, &caller));
    mtiaStream_t fallback = defaultHandle(d);
    if (caller == fallback) continue;
    order(d, caller, fallback);
    int64_t id = 0;
    MTIA_CHECK(mtiaStreamGetId(caller, &id));
    fence.emplace_back(d, id);
  }
  return fence;
}

void backwardFenceEnd(const BackwardFence& fence) {
  for (const auto& [device, id] : fence) {
    mtiaStream_t caller = nullptr;
    MTIA_CHECK(mtiaStreamFromId(id, &caller));
    order(device, defaultHandle(device), caller);
  }
}

}  // namespace torch_mtia
