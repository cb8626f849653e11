// Stream order around PyTorch 1.13's autograd engine. The engine orders backward work by streams for
// CUDA only: backward nodes of other devices run on that device's engine thread, whose current stream
// is the device's default stream, with no order against the stream that was current where backward()
// was called (the forward pass's stream, usually) and none against what that stream does next (read
// the gradients). A fence closes both gaps for every device with memory: before the engine runs, each
// default stream waits for the caller's current stream; after it, the caller's stream waits for the
// default stream. torch_mtia wraps the engine's run_backward in such a fence.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace torch_mtia {

// (device, caller's current stream id) of each device whose default stream now waits for the caller's
// current stream (devices whose current stream is their default stream need nothing and are left out).
using BackwardFence = std::vector<std::pair<c10::DeviceIndex, int64_t>>;

// Called on the thread that calls the engine, before it runs. Devices without device memory are
// skipped (no tensor of theirs can take part) and not started. Non-blocking; legal during capture
// (the default stream then joins the capture, as a stream waiting on a captured event does).
// Throws c10::Error with the runtime's message when an event cannot be created, recorded or waited on.
BackwardFence backwardFenceBegin();

// Called on the same thread after the engine returned (or threw): each listed caller stream waits
// for its device's default stream. Non-blocking; throws as backwardFenceBegin.
void backwardFenceEnd(const BackwardFence& fence);

}  // namespace torch_mtia
