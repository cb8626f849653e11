// MTIAHooks: the methods of PyTorch's at::MTIAHooksInterface (newest upstream copy, including the
// MTIAGraph methods and graphPoolHandle) with their meanings, implemented only over the C ABI.
// PyTorch 1.13 has no MTIA device type and no hooks registry, so nothing in PyTorch instantiates it
// here; torch_mtia's Python module calls it, and a newer PyTorch's REGISTER_MTIA_HOOKS would wrap
// it. The upstream methods that return PyObject* (memoryStats, memorySnapshot, getDeviceProperties)
// return plain C++ values here; the Python layer converts them.
#pragma once

#include <mtia/mtia.h>

#include <c10/core/Stream.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace torch_mtia {

using MempoolId = std::pair<uint64_t, uint64_t>;
using OutOfMemoryObserver =
    std::function<void(int64_t device, int64_t requested, int64_t total, int64_t free)>;

class MTIAHooks {
public:
    static MTIAHooks& get();

    // Device.
    void init() const;                     // brings the runtime up (mtiaInit); idempotent
    bool hasMTIA() const { return true; }  // the backend is built in
    bool isAvailable() const { return deviceCount() > 0; }
    c10::DeviceIndex deviceCount() const;                   // never throws; 0 on any problem
    bool hasPrimaryContext(c10::DeviceIndex device) const;  // the device's allocator has been used
    void setCurrentDevice(c10::DeviceIndex device) const;
    c10::DeviceIndex getCurrentDevice() const;
    c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const;
    c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const;
    void deviceSynchronize(c10::DeviceIndex device) const;  // every stream of device is idle
    std::string showConfig() const;
    std::pair<int, int> getDeviceCapability(c10::DeviceIndex device) const;
    mtiaDeviceProp getDeviceProperties(c10::DeviceIndex device) const;

    // Streams.
    c10::Stream getCurrentStream(c10::DeviceIndex device) const;
    int64_t getCurrentRawStream(c10::DeviceIndex device) const;  // the runtime's int64 stream id
    c10::Stream getDefaultStream(c10::DeviceIndex device) const;
    void setCurrentStream(const c10::Stream& stream) const;

    // Memory.
    mtiaMemoryStats memoryStats(c10::DeviceIndex device) const;
    void emptyCache() const;
    // enabled: nullopt (off), "state" or "all"; stacks: "python" (the framework provider's frames),
    // "cpp" or "all"; maxEntries 0: the runtime's default ring.
    void recordMemoryHistory(const c10::optional<std::string>& enabled, const std::string& stacks,
                             size_t maxEntries) const;
    // The snapshot as pickle bytes (PyTorch's memory snapshot dict), or written to localPath when
    // set (then the result is empty).
    std::string memorySnapshot(const c10::optional<std::string>& localPath) const;
    void resetPeakMemoryStats(c10::DeviceIndex device) const;
    void attachOutOfMemoryObserver(OutOfMemoryObserver observer) const;

    // MTIAGraph: graphs live in a handle -> graph map (the hooks can only hook functions).
    int64_t mtiagraphCreate(bool keepGraph = false) const;
    void mtiagraphDestroy(int64_t handle) const;  // never throws: called from destructors
    void mtiagraphCaptureBegin(int64_t handle, MempoolId pool) const;
    void mtiagraphCaptureEnd(int64_t handle) const;
    void mtiagraphInstantiate(int64_t handle) const;
    void mtiagraphReplay(int64_t handle) const;
    void mtiagraphReset(int64_t handle) const;
    MempoolId mtiagraphPool(int64_t handle) const;
    MempoolId graphPoolHandle() const;

private:
    MTIAHooks() = default;
    mtiaGraph_t graph(int64_t handle) const;

    mutable std::mutex mutex_;
    mutable std::unordered_map<int64_t, mtiaGraph_t> graphs_;
    mutable int64_t nextGraph_ = 1;
};

}  // namespace torch_mtia
