// torch_mtia._C: the Python bindings. Everything hook-shaped goes through MTIAHooks; streams travel
// as (runtime stream id, device index) pairs, which torch_mtia turns into its Stream objects.
#include "autograd_streams.h"
#include "device_kernels.h"
#include "fallback_counts.h"
#include "hooks.h"
#include "mtia_check.h"
#include "python_guard_probe.h"
#include "python_stacks.h"
#include "stream_ref.h"
#include "streams.h"

#include <torch/extension.h>

#include <memory>

namespace py = pybind11;

namespace torch_mtia {
namespace {

// An event: created on the recording stream's device at its first record (PyTorch's lazy events).
class Event {
public:
    Event(bool enableTiming, bool blocking)
        : flags_((enableTiming ? 0u : mtiaEventDisableTiming) |
                 (blocking ? mtiaEventBlockingSync : 0u)) {}
    ~Event() {
        if (event_ != nullptr) mtiaEventDestroy(event_);
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    void record(const StreamRef& s) {
        mtiaStream_t handle = streamHandle(stream(s));
        if (event_ == nullptr) {
            DeviceScope scope(static_cast<c10::DeviceIndex>(s.second));
            MTIA_CHECK(mtiaEventCreateWithFlags(&event_, flags_));
            device_ = s.second;
        }
        MTIA_CHECK(mtiaEventRecord(event_, handle));
    }
    void wait(const StreamRef& s) {
        if (event_ == nullptr) return;
        MTIA_CHECK(mtiaStreamWaitEvent(streamHandle(stream(s)), event_, mtiaEventWaitDefault));
    }
    bool query() {
        if (event_ == nullptr) return true;
        const mtiaError_t status = mtiaEventQuery(event_);
        if (status == mtiaErrorNotReady) return false;
        MTIA_CHECK(status);
        return true;
    }
    void synchronize() {
        if (event_ != nullptr) MTIA_CHECK(mtiaEventSynchronize(event_));
    }
    float elapsedTime(const Event& end) const {
        TORCH_CHECK(event_ != nullptr && end.event_ != nullptr,
                    "torch_mtia: elapsed_time needs both events recorded first");
        float ms = 0;
        MTIA_CHECK(mtiaEventElapsedTime(&ms, event_, end.event_));
        return ms;
    }
    int device() const { return device_; }

private:
    unsigned flags_;
    mtiaEvent_t event_ = nullptr;
    int device_ = -1;
};

py::dict stat(const mtiaStat& s) {
    py::dict d;
    d["current"] = s.current;
    d["peak"] = s.peak;
    d["allocated"] = s.allocated;
    d["freed"] = s.freed;
    return d;
}

py::dict statArray(const mtiaStat (&a)[3]) {
    py::dict d;
    d["all"] = stat(a[mtiaStatAll]);
    d["small_pool"] = stat(a[mtiaStatSmallPool]);
    d["large_pool"] = stat(a[mtiaStatLargePool]);
    return d;
}

// PyTorch's DeviceStats as the nested dict torch.accelerator builds (pools keyed
// all/small_pool/large_pool).
py::dict memoryStats(int device) {
    const mtiaMemoryStats s = MTIAHooks::get().memoryStats(static_cast<c10::DeviceIndex>(device));
    py::dict d;
    d["allocation"] = statArray(s.allocation);
    d["segment"] = statArray(s.segment);
    d["active"] = statArray(s.active);
    d["inactive_split"] = statArray(s.inactive_split);
    d["allocated_bytes"] = statArray(s.allocated_bytes);
    d["reserved_bytes"] = statArray(s.reserved_bytes);
    d["active_bytes"] = statArray(s.active_bytes);
    d["inactive_split_bytes"] = statArray(s.inactive_split_bytes);
    d["requested_bytes"] = statArray(s.requested_bytes);
    d["num_alloc_retries"] = s.num_alloc_retries;
    d["num_ooms"] = s.num_ooms;
    d["num_sync_all_streams"] = s.num_sync_all_streams;
    d["num_device_alloc"] = s.num_device_alloc;
    d["num_device_free"] = s.num_device_free;
    d["oversize_allocations"] = stat(s.oversize_allocations);
    d["oversize_segments"] = stat(s.oversize_segments);
    d["max_split_size"] = s.max_split_size;
    return d;
}

py::dict deviceProperties(int device) {
    const mtiaDeviceProp p =
        MTIAHooks::get().getDeviceProperties(static_cast<c10::DeviceIndex>(device));
    py::dict d;
    d["name"] = std::string(p.name);
    d["total_memory"] = p.totalGlobalMem;
    d["multi_processor_count"] = p.multiProcessorCount;
    d["major"] = p.major;
    d["minor"] = p.minor;
    d["pci_bus_id"] = std::string(p.pciBusId);
    return d;
}

void recordMemoryHistory(c10::optional<std::string> enabled, const std::string& stacks,
                         size_t maxEntries) {
    // The runtime waits for provider callbacks of other threads, which take the GIL.
    py::gil_scoped_release release;
    if (enabled && (stacks == "python" || stacks == "all")) installPythonContextProvider();
    MTIAHooks::get().recordMemoryHistory(enabled, stacks, maxEntries);
}

void attachObserver(py::function observer) {
    auto held = std::make_shared<py::function>(std::move(observer));
    MTIAHooks::get().attachOutOfMemoryObserver(
        [held](int64_t dev, int64_t requested, int64_t total, int64_t free) {
            py::gil_scoped_acquire gil;
            try {
                (*held)(dev, requested, total, free);
            } catch (py::error_already_set& e) {
                e.discard_as_unraisable("torch_mtia out-of-memory observer");
            }
        });
}

}  // namespace
}  // namespace torch_mtia

PYBIND11_MODULE(_C, m) {
    using namespace torch_mtia;
    auto& hooks = MTIAHooks::get();
    m.doc() = "torch_mtia's bindings over the MTIA runtime's C ABI";

    m.def("_init", [](const std::string& kernelModule) {
        MTIAHooks::get().init();
        loadKernelModule(kernelModule.c_str());
    });
    m.def("device_count", [&hooks] { return int{hooks.deviceCount()}; });
    m.def("backward_fence_begin", &backwardFenceBegin);
    m.def("backward_fence_end", &backwardFenceEnd);
    m.def("is_available", [&hooks] { return hooks.isAvailable(); });
    m.def("current_device", [&hooks] { return int{hooks.getCurrentDevice()}; });
    m.def("set_device",
          [&hooks](int d) { hooks.setCurrentDevice(static_cast<c10::DeviceIndex>(d)); });
    m.def("exchange_device",
          [&hooks](int d) { return int{hooks.exchangeDevice(static_cast<c10::DeviceIndex>(d))}; });
    m.def("synchronize", [&hooks](int d) {
        py::gil_scoped_release release;
        hooks.deviceSynchronize(static_cast<c10::DeviceIndex>(d));
    });
    m.def("show_config", [&hooks] { return hooks.showConfig(); });
    m.def("get_device_capability",
          [&hooks](int d) { return hooks.getDeviceCapability(static_cast<c10::DeviceIndex>(d)); });
    m.def("get_device_properties", &deviceProperties);
    m.def("has_primary_context",
          [&hooks](int d) { return hooks.hasPrimaryContext(static_cast<c10::DeviceIndex>(d)); });

    m.def("current_stream", [&hooks](int d) {
        return ref(hooks.getCurrentStream(static_cast<c10::DeviceIndex>(d)));
    });
    m.def("default_stream", [&hooks](int d) {
        return ref(hooks.getDefaultStream(static_cast<c10::DeviceIndex>(d)));
    });
    m.def("set_stream", [&hooks](const StreamRef& s) { hooks.setCurrentStream(stream(s)); });
    m.def("pool_stream",
          [](int d, bool high) { return ref(poolStream(static_cast<c10::DeviceIndex>(d), high)); });
    m.def("create_stream", [](int d, int priority) {
        return ref(createStream(static_cast<c10::DeviceIndex>(d), priority));
    });
    m.def("release_stream",
          [](const StreamRef& s, int priority) { releaseStream(stream(s), priority); });
    m.def("stream_priority", [](const StreamRef& s) {
        int p = 0;
        MTIA_CHECK(mtiaStreamGetPriority(streamHandle(stream(s)), &p));
        return p;
    });
    m.def("stream_query", [](const StreamRef& s) {
        const mtiaError_t status = mtiaStreamQuery(streamHandle(stream(s)));
        if (status == mtiaErrorNotReady) return false;
        MTIA_CHECK(status);
        return true;
    });
    m.def("stream_synchronize", [](const StreamRef& s) {
        mtiaStream_t handle = streamHandle(stream(s));
        py::gil_scoped_release release;
        MTIA_CHECK(mtiaStreamSynchronize(handle));
    });
    m.def("pack_stream", [](const StreamRef& s) { return stream(s).pack(); });
    m.def("unpack_stream", [](uint64_t bits) { return ref(c10::Stream::unpack(bits)); });
    m.def("stream_priority_range", [] {
        int least = 0, greatest = 0;
        MTIA_CHECK(mtiaDeviceGetStreamPriorityRange(&least, &greatest));
        return std::make_pair(least, greatest);
    });
    m.def("sleep_on_stream", [](uint64_t us) {
        // A built-in kernel that occupies the current stream: lets tests see ordering without
        // timing.
        launchBuiltin("sleep_us", {&us}, 1);
    });

    py::class_<Event>(m, "_Event")
        .def(py::init<bool, bool>(), py::arg("enable_timing") = false, py::arg("blocking") = false)
        .def("record", &Event::record)
        .def("wait", &Event::wait)
        .def("query", &Event::query)
        .def("synchronize", &Event::synchronize, py::call_guard<py::gil_scoped_release>())
        .def("elapsed_time", &Event::elapsedTime)
        .def_property_readonly("device", &Event::device);

    m.def("fallback_counts", &fallbackCounts);
    m.def("reset_fallback_counts", &resetFallbackCounts);
    m.def("memory_stats", &memoryStats);
    m.def("reset_peak_memory_stats",
          [&hooks](int d) { hooks.resetPeakMemoryStats(static_cast<c10::DeviceIndex>(d)); });
    m.def("reset_accumulated_memory_stats", [](int d) {
        MTIA_CHECK(
            mtiaMemoryResetAccumulatedStats(resolveDevice(static_cast<c10::DeviceIndex>(d))));
    });
    m.def("empty_cache", [&hooks] {
        py::gil_scoped_release release;
        hooks.emptyCache();
    });
    m.def("mem_get_info", [](int d) {
        DeviceScope scope(resolveDevice(static_cast<c10::DeviceIndex>(d)));
        size_t free = 0, total = 0;
        MTIA_CHECK(mtiaMemGetInfo(&free, &total));
        return std::make_pair(free, total);
    });
    m.def("record_memory_history", &recordMemoryHistory, py::arg("enabled"), py::arg("stacks"),
          py::arg("max_entries"));
    m.def("memory_snapshot", [&hooks] {
        std::string bytes;
        {
            py::gil_scoped_release release;
            bytes = hooks.memorySnapshot(c10::nullopt);
        }
        return py::bytes(bytes);
    });
    m.def("dump_snapshot", [&hooks](const std::string& path) {
        py::gil_scoped_release release;
        hooks.memorySnapshot(path);
    });
    m.def("attach_out_of_memory_observer", &attachObserver);

    m.def("graph_create", [&hooks](bool keep) { return hooks.mtiagraphCreate(keep); });
    m.def("graph_destroy", [&hooks](int64_t h) {
        // mtiaGraphDestroy waits for a replay in flight (MTIAGraph.__del__ calls this).
        py::gil_scoped_release release;
        hooks.mtiagraphDestroy(h);
    });
    m.def("graph_capture_begin",
          [&hooks](int64_t h, const MempoolId& pool) { hooks.mtiagraphCaptureBegin(h, pool); });
    m.def("graph_capture_end", [&hooks](int64_t h) { hooks.mtiagraphCaptureEnd(h); });
    m.def("graph_instantiate", [&hooks](int64_t h) { hooks.mtiagraphInstantiate(h); });
    m.def("graph_replay", [&hooks](int64_t h) { hooks.mtiagraphReplay(h); });
    m.def("graph_reset", [&hooks](int64_t h) {
        py::gil_scoped_release release;
        hooks.mtiagraphReset(h);
    });
    m.def("graph_pool", [&hooks](int64_t h) { return hooks.mtiagraphPool(h); });
    m.def("graph_pool_handle", [&hooks] { return hooks.graphPoolHandle(); });
    m.def("is_current_stream_capturing", [] {
        mtiaStreamCaptureStatus status = mtiaStreamCaptureStatusNone;
        MTIA_CHECK(mtiaStreamIsCapturing(nullptr, &status));
        return status != mtiaStreamCaptureStatusNone;
    });

    addGuardProbe(m);
}
