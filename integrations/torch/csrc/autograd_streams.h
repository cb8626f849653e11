// Stream order around PyTorch 1.13's autograd engine. The engine orders backward work by streams
// for CUDA only: backward nodes of other devices run on that device's engine thread, whose current
// stream is the device's default stream, with no order against the stream that was current where
// backward() was called (the forward pass's stream, usually) and none against what that stream does
// next (read the gradients). A fence closes both gaps for every device with memory: before the
// engine runs, each default stream waits for the caller's current stream (which the default stream
// replaces on the caller's thread meanwhile); after it, the caller's stream waits for the default
// stream. torch_mtia wraps the engine's run_backward in such a fence.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace torch_mtia {

// (device, caller's current stream id) of each device whose default stream now waits for the
// caller's current stream (devices whose current stream is their default stream need nothing and
// are left out).
using BackwardFence = std::vector<std::pair<c10::DeviceIndex, int64_t>>;

// Called on the thread that calls the engine, before it runs. Devices without device memory are
// skipped (no tensor of theirs can take part) and not started. For each other device whose current
// stream is not its default stream: the default stream waits for the current stream, and the
// default stream becomes this thread's current stream until backwardFenceEnd (the engine runs some
// nodes on this thread too). Non-blocking; legal during capture (the default stream then joins the
// capture, as a stream waiting on a captured event does). Never throws: a device that cannot be
// ordered (a sticky fault) is logged and left out, as its MTIA work fails by itself.
BackwardFence backwardFenceBegin();

// Called on the same thread after the engine returned (or threw): each listed device's current
// stream is the caller's again, and it waits for the device's default stream. Non-blocking; never
// throws (failures are logged).
void backwardFenceEnd(const BackwardFence& fence);

}  // namespace torch_mtia
