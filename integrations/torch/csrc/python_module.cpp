// torch_mtia._C: what the package adds to PyTorch's own torch.mtia bindings (torch._C._mtia_*,
// which reach MTIAHooks). Streams travel as torch.Stream (c10::Stream of MTIA) through PyTorch's
// casters.
#include "autograd_exit.h"
#include "device_kernels.h"
#include "dist_python.h"
#include "fallback_counts.h"
#include "gemm_configs.h"
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

    // The device GEMM's configurations (gemm_configs.h; torch_mtia.gemm_tuning wraps these).
    // A configuration is the tuple (blocks, split_cols, tile_m, tile_n, tile_k), a shape class
    // (dtype name, log2 buckets of m, n, k, batch).
    using ConfigTuple = std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t>;
    auto toConfig = [](const ConfigTuple& c) {
        return GemmConfig{std::get<0>(c), std::get<1>(c), std::get<2>(c), std::get<3>(c),
                          std::get<4>(c)};
    };
    auto fromConfig = [](const GemmConfig& c) {
        return ConfigTuple{c.blocks, c.splitCols, c.tileM, c.tileN, c.tileK};
    };
    m.def("_gemm_shape_class",
          [](at::ScalarType dtype, int64_t m, int64_t n, int64_t k, int64_t batch) {
              TORCH_CHECK(m >= 0 && n >= 0 && k >= 0 && batch >= 0,
                          "_gemm_shape_class: sizes must be >= 0");
              return gemmShapeClass(dtype, m, n, k, batch);
          });
    m.def("_set_gemm_configs",
          [toConfig](const std::vector<std::pair<GemmShapeClass, ConfigTuple>>& entries) {
              std::vector<std::pair<GemmShapeClass, GemmConfig>> table;
              for (const auto& [cls, c] : entries) table.emplace_back(cls, toConfig(c));
              setGemmConfigs(table);
          });
    m.def("_gemm_configs", [fromConfig] {
        std::vector<std::pair<GemmShapeClass, ConfigTuple>> out;
        for (const auto& [cls, c] : gemmConfigs()) out.emplace_back(cls, fromConfig(c));
        return out;
    });
    m.def("_choose_gemm_config",
          [fromConfig](at::ScalarType dtype, int64_t m, int64_t n, int64_t k, int64_t batch) {
              return fromConfig(chooseGemmConfig(dtype, m, n, k, batch));
          });
    m.def("_set_gemm_config_override", [toConfig](const std::optional<ConfigTuple>& c) {
        setGemmConfigOverride(c ? std::optional<GemmConfig>(toConfig(*c)) : std::nullopt);
    });
    m.def("_gemm_params", [toConfig](const at::Tensor& a, const at::Tensor& b,
                                     const at::Tensor& out, const ConfigTuple& config) {
        const GemmParams r = gemmParams(a, b, out, toConfig(config));
        return py::make_tuple(py::bytes(r.bytes), r.pointerOffsets, r.blocks);
    });

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
