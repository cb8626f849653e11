// torch_mtia._C: what the package adds to PyTorch's own torch.mtia bindings (torch._C._mtia_*,
// which reach MTIAHooks). Streams travel as torch.Stream (c10::Stream of MTIA) through PyTorch's
// casters.
#include "autograd_exit.h"
#include "device_kernels.h"
#include "dist_python.h"
#include "fallback_counts.h"
#include "hooks.h"
#include "mtia_check.h"
#include "streams.h"

#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/extension.h>

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
    using namespace torch_mtia;
    m.doc() = "torch_mtia's bindings over the MTIA runtime's C ABI (beside torch._C._mtia_*)";

    m.def("_set_kernel_module", [](const std::string& path) { MTIAHooks::setKernelModule(path); });
    m.def("_hooks_are_ours",
          [] { return dynamic_cast<const MTIAHooks*>(&at::detail::getMTIAHooks()) != nullptr; });
    m.def("show_config", [] { return MTIAHooks::get().showConfig(); });
    m.def("has_primary_context", [](int d) {
        return MTIAHooks::get().hasPrimaryContext(static_cast<c10::DeviceIndex>(d));
    });

    // One generator object per device, for torch.mtia.default_generators (through the hook).
    m.def("_default_generators", [] {
        const int count = MTIAHooks::get().deviceCount();
        py::tuple result(count);
        for (int i = 0; i < count; ++i) {
            PyObject* g = THPGenerator_initDefaultGenerator(
                MTIAHooks::get().getDefaultGenerator(static_cast<c10::DeviceIndex>(i)));
            if (g == nullptr) throw py::error_already_set();
            result[i] = py::reinterpret_steal<py::object>(g);
        }
        return result;
    });

    m.def("stream_priority", [](const c10::Stream& s) {
        int p = 0;
        MTIA_CHECK(mtiaStreamGetPriority(streamHandle(s), &p));
        return p;
    });
    m.def("stream_priority_range", [] {
        int least = 0, greatest = 0;
        MTIA_CHECK(mtiaDeviceGetStreamPriorityRange(&least, &greatest));
        return std::make_pair(least, greatest);
    });
    m.def("is_current_stream_capturing", [] {
        mtiaStreamCaptureStatus status = mtiaStreamCaptureStatusNone;
        MTIA_CHECK(mtiaStreamIsCapturing(nullptr, &status));
        return status != mtiaStreamCaptureStatusNone;
    });
    m.def("sleep_on_stream", [](uint64_t us) {
        // A built-in kernel that occupies the current stream: lets tests see ordering without
        // timing.
        launchBuiltin("sleep_us", {&us}, 1);
    });

    m.def("_drain_autograd_threads", &drainAutogradThreads);  // Note [autograd threads at exit]

    m.def("fallback_counts", &fallbackCounts);
    m.def("reset_fallback_counts", &resetFallbackCounts);

    m.def("reset_accumulated_memory_stats", [](int d) {
        MTIA_CHECK(
            mtiaMemoryResetAccumulatedStats(resolveDevice(static_cast<c10::DeviceIndex>(d))));
    });
    m.def("mem_get_info", [](int d) {
        DeviceScope scope(resolveDevice(static_cast<c10::DeviceIndex>(d)));
        size_t free = 0, total = 0;
        MTIA_CHECK(mtiaMemGetInfo(&free, &total));
        return std::make_pair(free, total);
    });
    m.def("dump_snapshot", [](const std::string& path) {
        py::reinterpret_steal<py::object>(MTIAHooks::get().memorySnapshot(path));
    });

    // MTIAGraph's lifetime: PyTorch 2.13's _MTIAGraph never calls mtiagraphDestroy; torch_mtia
    // ties the handle to the Python object and destroys the graph with it.
    m.def("_graph_last_created", [] { return MTIAHooks::lastCreatedGraph(); });
    m.def("_graph_destroy", [](int64_t h) { MTIAHooks::get().mtiagraphDestroy(h); });
    m.def("_live_graphs", [] { return MTIAHooks::get().liveGraphs(); });

    // torch_mtia.distributed's backend, where this PyTorch has torch.distributed.
    if (py::module_::import("torch.distributed").attr("is_available")().cast<bool>()) {
        dist::bindDistributed(m);
    }
}
