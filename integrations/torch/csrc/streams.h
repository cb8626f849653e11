// PyTorch streams (c10::Stream of MTIA) over the runtime's streams. A c10::Stream's id is
// the runtime's int64 stream id (mtiaStreamGetId, never reused), which mtiaStreamFromId turns back
// into the handle, so a stream survives PyTorch's packing into Python integers (48 bits of id,
// ample for a counter). Streams from the pool are created once per device and priority and live for
// the process.
#pragma once

#include <mtia/mtia.h>

#include <c10/core/Stream.h>

namespace torch_mtia {

constexpr c10::DeviceType kDeviceType = c10::DeviceType::MTIA;

// The runtime's handle for a PyTorch stream; throws for a stream that is not ours or not alive.
mtiaStream_t streamHandle(const c10::Stream& stream);

// The PyTorch stream for a runtime handle.
c10::Stream toC10Stream(mtiaStream_t handle);

// The calling thread's current device (mtiaGetDevice).
c10::DeviceIndex currentDevice();

// Resolves -1 to the current device.
c10::DeviceIndex resolveDevice(c10::DeviceIndex index);

c10::Stream currentStream(c10::DeviceIndex index);
c10::Stream defaultStream(c10::DeviceIndex index);

// A stream of a fixed pool per device and priority, handed out round robin.
c10::Stream poolStream(c10::DeviceIndex index, bool highPriority);

// The current stream of device index, or when that cannot be had (a broken runtime) its default
// stream, or a c10::Stream with id 0 that names no stream; never throws (for the guard's noexcept
// methods).
c10::Stream currentStreamNoThrow(c10::DeviceIndex index) noexcept;

// Sets the current device for its lifetime and restores the previous one.
class DeviceScope {
public:
    explicit DeviceScope(c10::DeviceIndex index);
    ~DeviceScope();
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

private:
    int previous_ = -1;
};

}  // namespace torch_mtia
