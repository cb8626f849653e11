// mtiaDeviceReset: what this process holds of one device goes, the device's sticky fault is
// cleared, and the device is usable again (CUDA's cudaDeviceReset for one device).
#pragma once

namespace mtia {

class Device;
class Runtime;

// Releases every stream but the default stream, every event, every graph, every allocation (the
// caching allocator's segments, private pools included) and every IPC export and import of dev,
// then clears its fault through the driver (driver ABI 1.8). Modules stay: they belong to the
// process, not to a device. Serialised with other resets. Blocking (waits for the device's
// running work). Throws StreamCaptureUnsupported (a capture is live on dev), NotSupported (dev is
// faulted and the driver cannot reset it), the driver's errors.
void resetDevice(Runtime& rt, Device& dev);

}  // namespace mtia
