// MTIAHooks: PyTorch 2.13's at::MTIAHooksInterface (and the AcceleratorHooksInterface under it)
// over the runtime's C ABI, registered with REGISTER_MTIA_HOOKS when the extension loads. PyTorch
// reaches every method through at::detail::getMTIAHooks(): torch.mtia's Python functions
// (torch._C._mtia_*), at::globalContext().lazyInitDevice(kMTIA), torch.Generator(device="mtia"),
// pin_memory(), torch.mtia.MTIAGraph. No method is left failing.
//
// Thread safety: every method may be called from any thread. Methods that return PyObject* (and
// attachOutOfMemoryObserver) are called by PyTorch's bindings with the GIL held, and need it.
// Methods that wait for the device (deviceSynchronize, emptyCache, memorySnapshot,
// recordMemoryHistory, mtiagraphReplay/Reset/Destroy) release the GIL while they wait when the
// caller holds it, because host functions and the Python stack provider of other threads take it.
// Errors: a failing runtime call becomes c10::Error with the runtime's message (MTIA_CHECK);
// deviceCount never throws.
#pragma once

#include <mtia/mtia.h>

#include <ATen/detail/MTIAHooksInterface.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace torch_mtia {

class GraphRng;

class MTIAHooks final : public at::MTIAHooksInterface {
public:
    MTIAHooks() = default;

    // The instance PyTorch created from the registry (at::detail::getMTIAHooks()), for our
    // bindings.
    static const MTIAHooks& get();

    // The kernel module that init() loads (set by torch_mtia's __init__ before anything can init).
    static void setKernelModule(std::string path);

    // Device.
    void init() const override;  // mtiaInit and the kernel module; PyTorch calls it once
    bool isBuilt() const override { return true; }
    bool hasMTIA() const override { return true; }
    bool isAvailable() const override { return deviceCount() > 0; }
    c10::DeviceIndex deviceCount() const override;  // 0 on any problem
    c10::DeviceIndex getDeviceCount() const override { return deviceCount(); }
    bool hasPrimaryContext(c10::DeviceIndex device) const override;  // its allocator has memory
    void setCurrentDevice(c10::DeviceIndex device) const override;
    c10::DeviceIndex getCurrentDevice() const override;
    c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override;
    c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override;
    void deviceSynchronize(c10::DeviceIndex device) const override;
    std::string showConfig() const override;
    PyObject* getDeviceCapability(c10::DeviceIndex device) const override;  // (major, minor)
    PyObject* getDeviceProperties(c10::DeviceIndex device) const override;  // dict

    // Streams.
    c10::Stream getCurrentStream(c10::DeviceIndex device) const override;
    int64_t getCurrentRawStream(c10::DeviceIndex device) const override;  // runtime stream id
    c10::Stream getDefaultStream(c10::DeviceIndex device) const override;
    void setCurrentStream(const c10::Stream& stream) const override;

    // Host memory and pointers.
    bool isPinnedPtr(const void* data) const override;  // from mtiaMallocHost
    at::Allocator* getPinnedMemoryAllocator() const override;
    c10::Device getDeviceFromPtr(void* data) const override;

    // Memory.
    PyObject* memoryStats(c10::DeviceIndex device) const override;  // dict, see python_objects.h
    void emptyCache() const override;
    // enabled: nullopt (off), "state" or "all"; stacks: "python", "cpp" or "all"; max_entries 0:
    // the runtime's default ring.
    void recordMemoryHistory(const std::optional<std::string>& enabled, const std::string& stacks,
                             size_t maxEntries) const override;
    // PyTorch's snapshot dict; with local_path, written there as a pickle and None returned.
    PyObject* memorySnapshot(const std::optional<std::string>& localPath) const override;
    void resetPeakMemoryStats(c10::DeviceIndex device) const override;
    // observer(device, requested_bytes, device_total_bytes, device_free_bytes), on the failing
    // thread with the GIL taken; exceptions it raises are reported as unraisable.
    void attachOutOfMemoryObserver(PyObject* observer) const override;

    // Random numbers.
    const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override;
    at::Generator getNewGenerator(c10::DeviceIndex device) const override;

    // MTIAGraph: graphs live in a handle -> graph map (the hooks can only hook functions).
    int64_t mtiagraphCreate(bool keepGraph = false) const override;
    void mtiagraphDestroy(int64_t handle) const override;  // idempotent; never throws
    void mtiagraphCaptureBegin(int64_t handle, c10::MempoolId_t pool) const override;
    void mtiagraphCaptureEnd(int64_t handle) const override;
    void mtiagraphInstantiate(int64_t handle) const override;
    void mtiagraphReplay(int64_t handle) const override;
    void mtiagraphReset(int64_t handle) const override;
    c10::MempoolId_t mtiagraphPool(int64_t handle) const override;
    c10::MempoolId_t graphPoolHandle() const override;

    // The handle of the graph this thread created last (torch_mtia ties it to the Python
    // MTIAGraph object, whose destructor PyTorch 2.13 does not forward to mtiagraphDestroy).
    static int64_t lastCreatedGraph();
    // Graphs alive (created and not destroyed), for tests.
    size_t liveGraphs() const;

private:
    mtiaGraph_t graph(int64_t handle) const;

    mutable std::mutex mutex_;
    mutable std::unordered_map<int64_t, mtiaGraph_t> graphs_;
    // The random state of each graph whose capture began (generator.h: graph safety).
    mutable std::unordered_map<int64_t, std::shared_ptr<GraphRng>> rngs_;
    std::shared_ptr<GraphRng> rng(int64_t handle) const;
    mutable int64_t nextGraph_ = 1;
};

}  // namespace torch_mtia
