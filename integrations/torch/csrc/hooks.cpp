#include "hooks.h"

#include "mtia_check.h"
#include "streams.h"

#include <c10/util/Exception.h>
#include <c10/util/Logging.h>

#include <vector>

namespace torch_mtia {
namespace {

std::mutex observersMutex;
std::vector<OutOfMemoryObserver>* observers = nullptr;  // leaked: observers stay for the process

// The runtime calls this with no lock of its own held, on the failing thread. A C callback: nothing
// may escape it (copying the list may throw bad_alloc, an observer anything).
void notifyObservers(int dev, size_t requested, size_t total, size_t free, void*) noexcept {
    try {
        std::vector<OutOfMemoryObserver> copy;
        {
            std::lock_guard<std::mutex> lock(observersMutex);
            if (observers != nullptr) copy = *observers;
        }
        for (auto& observer : copy) {
            try {
                observer(dev, static_cast<int64_t>(requested), static_cast<int64_t>(total),
                         static_cast<int64_t>(free));
            } catch (const std::exception& e) {
                LOG(WARNING) << "torch_mtia: an out-of-memory observer failed: " << e.what();
            } catch (...) {
                LOG(WARNING) << "torch_mtia: an out-of-memory observer failed";
            }
        }
    } catch (...) {
        // Out of host memory while copying the observers: they are not told.
    }
}

mtiaHistoryMode historyMode(const c10::optional<std::string>& enabled) {
    if (!enabled) return mtiaHistoryOff;
    if (*enabled == "state") return mtiaHistoryState;
    if (*enabled == "all") return mtiaHistoryAll;
    TORCH_CHECK(
        false,
        "torch_mtia: record_memory_history: enabled must be None, \"state\" or \"all\", got \"",
        *enabled, "\"");
}

mtiaStackMode stackMode(const std::string& stacks) {
    if (stacks == "python") return mtiaStacksFramework;
    if (stacks == "cpp") return mtiaStacksCpp;
    if (stacks == "all") return mtiaStacksAll;
    TORCH_CHECK(
        false,
        "torch_mtia: record_memory_history: stacks must be \"python\", \"cpp\" or \"all\", got \"",
        stacks, "\"");
}

}  // namespace

MTIAHooks& MTIAHooks::get() {
    static auto* hooks =
        new MTIAHooks();  // leaked: graphs may be destroyed during interpreter teardown
    return *hooks;
}

void MTIAHooks::init() const {
    MTIA_CHECK(mtiaInit(mtiaInitDefault));
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

std::pair<int, int> MTIAHooks::getDeviceCapability(c10::DeviceIndex device) const {
    const mtiaDeviceProp prop = getDeviceProperties(device);
    return {prop.major, prop.minor};
}

mtiaDeviceProp MTIAHooks::getDeviceProperties(c10::DeviceIndex device) const {
    mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
    MTIA_CHECK(mtiaGetDeviceProperties(&prop, resolveDevice(device)));
    return prop;
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
    // As _mtia_setCurrentStream: the stream's device becomes the current device too. The stream is
    // resolved first, so that a stream that is not ours (or gone) changes nothing.
    mtiaStream_t handle = streamHandle(stream);
    MTIA_CHECK(mtiaSetDevice(stream.device_index()));
    MTIA_CHECK(mtiaSetCurrentStream(handle));
}

mtiaMemoryStats MTIAHooks::memoryStats(c10::DeviceIndex device) const {
    mtiaMemoryStats stats = MTIA_MEMORY_STATS_INIT;
    MTIA_CHECK(mtiaMemoryGetStats(resolveDevice(device), &stats));
    return stats;
}

void MTIAHooks::emptyCache() const {
    MTIA_CHECK(mtiaEmptyCache());
}

void MTIAHooks::recordMemoryHistory(const c10::optional<std::string>& enabled,
                                    const std::string& stacks, size_t maxEntries) const {
    MTIA_CHECK(mtiaMemoryRecordHistory(historyMode(enabled), stackMode(stacks), maxEntries));
}

std::string MTIAHooks::memorySnapshot(const c10::optional<std::string>& localPath) const {
    if (localPath) {
        MTIA_CHECK(mtiaMemoryDumpSnapshot(localPath->c_str(), mtiaSnapshotPickle,
                                          mtiaSnapshotIncludeTraces));
        return {};
    }
    mtiaBuffer buffer{nullptr, 0};
    MTIA_CHECK(mtiaMemorySnapshot(mtiaSnapshotPickle, mtiaSnapshotIncludeTraces, &buffer));
    std::string bytes(static_cast<const char*>(buffer.data), buffer.size);
    mtiaBufferFree(&buffer);
    return bytes;
}

void MTIAHooks::resetPeakMemoryStats(c10::DeviceIndex device) const {
    MTIA_CHECK(mtiaMemoryResetPeakStats(resolveDevice(device)));
}

void MTIAHooks::attachOutOfMemoryObserver(OutOfMemoryObserver observer) const {
    std::lock_guard<std::mutex> lock(observersMutex);
    if (observers == nullptr) {
        observers = new std::vector<OutOfMemoryObserver>();
        MTIA_CHECK(mtiaAttachOutOfMemoryObserver(&notifyObservers, nullptr));
    }
    observers->push_back(std::move(observer));
}

int64_t MTIAHooks::mtiagraphCreate(bool keepGraph) const {
    mtiaGraph_t g = nullptr;
    MTIA_CHECK(mtiaGraphCreate(&g, keepGraph ? mtiaGraphKeepGraph : 0u));
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t handle = nextGraph_++;
    graphs_.emplace(handle, g);
    return handle;
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
    const mtiaError_t status = mtiaGraphDestroy(g);
    if (status != mtiaSuccess) LOG(WARNING) << describeFailure(status, "mtiaGraphDestroy");
}

void MTIAHooks::mtiagraphCaptureBegin(int64_t handle, MempoolId pool) const {
    MTIA_CHECK(mtiaGraphCaptureBegin(graph(handle), nullptr,
                                     mtiaMemPoolId_t{pool.first, pool.second},
                                     mtiaStreamCaptureModeGlobal));
}

void MTIAHooks::mtiagraphCaptureEnd(int64_t handle) const {
    MTIA_CHECK(mtiaGraphCaptureEnd(graph(handle)));
}

void MTIAHooks::mtiagraphInstantiate(int64_t handle) const {
    MTIA_CHECK(mtiaGraphInstantiate(graph(handle)));
}

void MTIAHooks::mtiagraphReplay(int64_t handle) const {
    MTIA_CHECK(mtiaGraphReplay(graph(handle), nullptr));
}

void MTIAHooks::mtiagraphReset(int64_t handle) const {
    MTIA_CHECK(mtiaGraphReset(graph(handle)));
}

MempoolId MTIAHooks::mtiagraphPool(int64_t handle) const {
    mtiaMemPoolId_t pool{0, 0};
    MTIA_CHECK(mtiaGraphGetPool(graph(handle), &pool));
    return {pool.first, pool.second};
}

MempoolId MTIAHooks::graphPoolHandle() const {
    mtiaMemPoolId_t pool{0, 0};
    MTIA_CHECK(mtiaGraphPoolHandle(&pool));
    return {pool.first, pool.second};
}

}  // namespace torch_mtia
