#include "hooks.h"

#include "allocator.h"
#include "device_kernels.h"
#include "generator.h"
#include "mtia_check.h"
#include "python_objects.h"
#include "python_stacks.h"
#include "streams.h"

#include <c10/util/Exception.h>
#include <c10/util/Logging.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <vector>

namespace py = pybind11;

namespace torch_mtia {
namespace {

std::string* kernelModulePath = nullptr;  // leaked: read at init, possibly at exit
thread_local int64_t lastGraph = 0;

// Releases the GIL for a wait when this thread holds it (PyTorch's bindings call the hooks with it
// held; C++ callers may not hold it).
class WaitWithoutGil {
public:
    WaitWithoutGil() {
        if (Py_IsInitialized() && PyGILState_Check()) release_.emplace();
    }

private:
    std::optional<py::gil_scoped_release> release_;
};

std::mutex observersMutex;
std::vector<PyObject*>* observers = nullptr;  // strong references, kept for the process

// The runtime calls this with no lock of its own held, on the failing thread. A C callback: nothing
// may escape it.
void notifyObservers(int dev, size_t requested, size_t total, size_t free, void*) noexcept {
    try {
        std::vector<PyObject*> copy;
        {
            std::lock_guard<std::mutex> lock(observersMutex);
            if (observers != nullptr) copy = *observers;
        }
        if (copy.empty() || !Py_IsInitialized()) return;
        py::gil_scoped_acquire gil;
        for (PyObject* observer : copy) {
            try {
                const py::handle callable(observer);
                callable(dev, requested, total, free);
            } catch (py::error_already_set& e) {
                e.discard_as_unraisable("torch_mtia out-of-memory observer");
            }
        }
    } catch (...) {
        // Out of host memory while copying the observers: they are not told.
    }
}

mtiaHistoryMode historyMode(const std::optional<std::string>& enabled) {
    if (!enabled) return mtiaHistoryOff;
    if (*enabled == "state") return mtiaHistoryState;
    if (*enabled == "all") return mtiaHistoryAll;
    TORCH_CHECK(false,
                "torch_mtia: record_memory_history: enabled must be None, \"state\" or \"all\", "
                "got \"",
                *enabled, "\"");
}

mtiaStackMode stackMode(const std::string& stacks) {
    if (stacks == "python") return mtiaStacksFramework;
    if (stacks == "cpp") return mtiaStacksCpp;
    if (stacks == "all") return mtiaStacksAll;
    TORCH_CHECK(false,
                "torch_mtia: record_memory_history: stacks must be \"python\", \"cpp\" or \"all\", "
                "got \"",
                stacks, "\"");
}

}  // namespace

const MTIAHooks& MTIAHooks::get() {
    const auto* hooks = dynamic_cast<const MTIAHooks*>(&at::detail::getMTIAHooks());
    TORCH_CHECK(
        hooks != nullptr,
        "torch_mtia: PyTorch's MTIA hooks are not ours (they were created before torch_mtia "
        "was loaded)");
    return *hooks;
}

void MTIAHooks::setKernelModule(std::string path) {
    if (kernelModulePath == nullptr) kernelModulePath = new std::string();
    *kernelModulePath = std::move(path);
}

void MTIAHooks::init() const {
    MTIA_CHECK(mtiaInit(mtiaInitDefault));
    if (kernelModulePath != nullptr && !kernelModulePath->empty())
        loadKernelModule(kernelModulePath->c_str());
}

c10::DeviceIndex MTIAHooks::deviceCount() const {
    int count = 0;
    if (mtiaGetDeviceCount(&count) != mtiaSuccess) return 0;
    return static_cast<c10::DeviceIndex>(count);
}

bool MTIAHooks::hasPrimaryContext(c10::DeviceIndex device) const {
    mtiaMemoryStats stats = MTIA_MEMORY_STATS_INIT;
    if (mtiaMemoryGetStats(device, &stats) != mtiaSuccess) return false;
    return stats.num_device_alloc > 0 || stats.reserved_bytes[mtiaStatAll].current > 0;
}

void MTIAHooks::setCurrentDevice(c10::DeviceIndex device) const {
    MTIA_CHECK(mtiaSetDevice(device));
}

c10::DeviceIndex MTIAHooks::getCurrentDevice() const {
    return currentDevice();
}

c10::DeviceIndex MTIAHooks::exchangeDevice(c10::DeviceIndex device) const {
    int previous = 0;
    MTIA_CHECK(mtiaExchangeDevice(device, &previous));
    return static_cast<c10::DeviceIndex>(previous);
}

c10::DeviceIndex MTIAHooks::maybeExchangeDevice(c10::DeviceIndex device) const {
    // Setting the current device never starts a device here, so the maybe form is the same.
    return exchangeDevice(device);
}

void MTIAHooks::deviceSynchronize(c10::DeviceIndex device) const {
    DeviceScope scope(resolveDevice(device));
    WaitWithoutGil wait;
    MTIA_CHECK(mtiaDeviceSynchronize());
}

std::string MTIAHooks::showConfig() const {
    int major = 0, minor = 0, patch = 0;
    mtiaRuntimeGetVersion(&major, &minor, &patch);
    const char* driver = "";
    mtiaDriverGetName(&driver);
    char conf[1024] = "";
    mtiaAllocatorGetConfig(conf, sizeof conf);
    return "MTIA runtime " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + ", driver " + driver + ", " + std::to_string(deviceCount()) +
           " devices, allocator settings \"" + conf + "\"";
}

namespace {
mtiaDeviceProp properties(c10::DeviceIndex device) {
    mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
    MTIA_CHECK(mtiaGetDeviceProperties(&prop, resolveDevice(device)));
    return prop;
}
}  // namespace

PyObject* MTIAHooks::getDeviceCapability(c10::DeviceIndex device) const {
    const mtiaDeviceProp prop = properties(device);
    return py::make_tuple(prop.major, prop.minor).release().ptr();
}

PyObject* MTIAHooks::getDeviceProperties(c10::DeviceIndex device) const {
    return devicePropertiesObject(properties(device));
}

c10::Stream MTIAHooks::getCurrentStream(c10::DeviceIndex device) const {
    return currentStream(device);
}

int64_t MTIAHooks::getCurrentRawStream(c10::DeviceIndex device) const {
    return currentStream(device).id();
}

c10::Stream MTIAHooks::getDefaultStream(c10::DeviceIndex device) const {
    return defaultStream(device);
}

void MTIAHooks::setCurrentStream(const c10::Stream& stream) const {
    // The stream's device becomes the current device too. The stream is resolved first, so that a
    // stream that is not ours (or gone) changes nothing.
    mtiaStream_t handle = streamHandle(stream);
    MTIA_CHECK(mtiaSetDevice(stream.device_index()));
    MTIA_CHECK(mtiaSetCurrentStream(handle));
}

bool MTIAHooks::isPinnedPtr(const void* data) const {
    if (data == nullptr) return false;
    mtiaPointerAttributes attr = MTIA_POINTER_ATTRIBUTES_INIT;
    if (mtiaPointerGetAttributes(&attr, data) != mtiaSuccess) return false;
    return attr.type == mtiaMemoryTypeHost && attr.locked != 0;
}

at::Allocator* MTIAHooks::getPinnedMemoryAllocator() const {
    return pinnedAllocator();
}

c10::Device MTIAHooks::getDeviceFromPtr(void* data) const {
    mtiaPointerAttributes attr = MTIA_POINTER_ATTRIBUTES_INIT;
    MTIA_CHECK(mtiaPointerGetAttributes(&attr, data));
    TORCH_CHECK(attr.type == mtiaMemoryTypeDevice, "torch_mtia: the pointer ", data,
                " is not MTIA device memory");
    return {kDeviceType, static_cast<c10::DeviceIndex>(attr.device)};
}

PyObject* MTIAHooks::memoryStats(c10::DeviceIndex device) const {
    return memoryStatsObject(deviceStats(device));
}

void MTIAHooks::emptyCache() const {
    WaitWithoutGil wait;
    MTIA_CHECK(mtiaEmptyCache());
}

void MTIAHooks::recordMemoryHistory(const std::optional<std::string>& enabled,
                                    const std::string& stacks, size_t maxEntries) const {
    const mtiaHistoryMode mode = historyMode(enabled);
    const mtiaStackMode stackKind = stackMode(stacks);
    // The runtime waits for provider callbacks of other threads, which take the GIL.
    WaitWithoutGil wait;
    if (enabled && stackKind != mtiaStacksCpp) installPythonContextProvider();
    MTIA_CHECK(mtiaMemoryRecordHistory(mode, stackKind, maxEntries));
}

PyObject* MTIAHooks::memorySnapshot(const std::optional<std::string>& localPath) const {
    if (localPath) {
        {
            WaitWithoutGil wait;
            MTIA_CHECK(mtiaMemoryDumpSnapshot(localPath->c_str(), mtiaSnapshotPickle,
                                              mtiaSnapshotIncludeTraces));
        }
        Py_RETURN_NONE;
    }
    mtiaBuffer buffer{nullptr, 0};
    {
        WaitWithoutGil wait;
        MTIA_CHECK(mtiaMemorySnapshot(mtiaSnapshotPickle, mtiaSnapshotIncludeTraces, &buffer));
    }
    py::bytes bytes(static_cast<const char*>(buffer.data), buffer.size);
    mtiaBufferFree(&buffer);
    return py::module_::import("pickle").attr("loads")(bytes).release().ptr();
}

void MTIAHooks::resetPeakMemoryStats(c10::DeviceIndex device) const {
    MTIA_CHECK(mtiaMemoryResetPeakStats(resolveDevice(device)));
}

void MTIAHooks::attachOutOfMemoryObserver(PyObject* observer) const {
    TORCH_CHECK(observer != nullptr && PyCallable_Check(observer),
                "torch_mtia: attach_out_of_memory_observer: observer must be callable");
    std::lock_guard<std::mutex> lock(observersMutex);
    if (observers == nullptr) {
        observers = new std::vector<PyObject*>();
        MTIA_CHECK(mtiaAttachOutOfMemoryObserver(&notifyObservers, nullptr));
    }
    Py_INCREF(observer);
    observers->push_back(observer);
}

const at::Generator& MTIAHooks::getDefaultGenerator(c10::DeviceIndex device) const {
    return defaultGenerator(device);
}

at::Generator MTIAHooks::getNewGenerator(c10::DeviceIndex device) const {
    return newGenerator(device);
}

int64_t MTIAHooks::mtiagraphCreate(bool keepGraph) const {
    mtiaGraph_t g = nullptr;
    MTIA_CHECK(mtiaGraphCreate(&g, keepGraph ? mtiaGraphKeepGraph : 0u));
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t handle = nextGraph_++;
    graphs_.emplace(handle, g);
    lastGraph = handle;
    return handle;
}

int64_t MTIAHooks::lastCreatedGraph() {
    return lastGraph;
}

size_t MTIAHooks::liveGraphs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return graphs_.size();
}

mtiaGraph_t MTIAHooks::graph(int64_t handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = graphs_.find(handle);
    TORCH_CHECK(it != graphs_.end(), "torch_mtia: no MTIAGraph with handle ", handle);
    return it->second;
}

void MTIAHooks::mtiagraphDestroy(int64_t handle) const {
    mtiaGraph_t g = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = graphs_.find(handle);
        if (it == graphs_.end()) return;  // idempotent
        g = it->second;
        graphs_.erase(it);
    }
    std::shared_ptr<GraphRng> random = rng(handle);
    {
        WaitWithoutGil wait;  // waits for a replay in flight
        const mtiaError_t status = mtiaGraphDestroy(g);
        if (status != mtiaSuccess) LOG(WARNING) << describeFailure(status, "mtiaGraphDestroy");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    rngs_.erase(handle);
}

std::shared_ptr<GraphRng> MTIAHooks::rng(int64_t handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = rngs_.find(handle);
    return it == rngs_.end() ? nullptr : it->second;
}

void MTIAHooks::mtiagraphCaptureBegin(int64_t handle, c10::MempoolId_t pool) const {
    mtiaGraph_t g = graph(handle);
    auto random = std::make_shared<GraphRng>();  // its slots are allocated before the capture
    MTIA_CHECK(mtiaGraphCaptureBegin(g, nullptr, mtiaMemPoolId_t{pool.first, pool.second},
                                     mtiaStreamCaptureModeGlobal));
    mtiaStreamCaptureStatus status = mtiaStreamCaptureStatusNone;
    uint64_t captureId = 0;
    MTIA_CHECK(mtiaStreamGetCaptureInfo(nullptr, &status, &captureId));
    random->beginCapture(captureId);
    std::lock_guard<std::mutex> lock(mutex_);
    rngs_[handle] = std::move(random);
}

void MTIAHooks::mtiagraphCaptureEnd(int64_t handle) const {
    if (auto random = rng(handle)) random->endCapture();
    MTIA_CHECK(mtiaGraphCaptureEnd(graph(handle)));
}

void MTIAHooks::mtiagraphInstantiate(int64_t handle) const {
    MTIA_CHECK(mtiaGraphInstantiate(graph(handle)));
}

void MTIAHooks::mtiagraphReplay(int64_t handle) const {
    mtiaGraph_t g = graph(handle);
    WaitWithoutGil wait;
    if (auto random = rng(handle)) random->prologue();
    MTIA_CHECK(mtiaGraphReplay(g, nullptr));
}

void MTIAHooks::mtiagraphReset(int64_t handle) const {
    mtiaGraph_t g = graph(handle);
    std::shared_ptr<GraphRng> random = rng(handle);
    {
        WaitWithoutGil wait;
        MTIA_CHECK(mtiaGraphReset(g));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    rngs_.erase(handle);
}

c10::MempoolId_t MTIAHooks::mtiagraphPool(int64_t handle) const {
    mtiaMemPoolId_t pool{0, 0};
    MTIA_CHECK(mtiaGraphGetPool(graph(handle), &pool));
    return {pool.first, pool.second};
}

c10::MempoolId_t MTIAHooks::graphPoolHandle() const {
    mtiaMemPoolId_t pool{0, 0};
    MTIA_CHECK(mtiaGraphPoolHandle(&pool));
    return {pool.first, pool.second};
}

}  // namespace torch_mtia

// In namespace at, where the registry's registerer lives; the registry key is the class name,
// "MTIAHooks", which at::detail::getMTIAHooks() asks for.
namespace at {
using torch_mtia::MTIAHooks;
REGISTER_MTIA_HOOKS(MTIAHooks);
}  // namespace at
