#include "core/api_guard.hpp"
#include "graph/capture.hpp"
#include "runtime/context/benchmark.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

#include <cstddef>

using mtia::apiCall;
using mtia::requireNonNull;
using mtia::Runtime;

extern "C" {

MTIA_API mtiaError_t mtiaModuleLoad(mtiaModule_t* module, const char* path) {
    return apiCall("mtiaModuleLoad", [&] {
        requireNonNull(module, "module");
        requireNonNull(path, "path");
        // dlopen("") would hand back the main program, whose symbols are no module of kernels.
        if (*path == '\0')
            mtia::fail(mtiaErrorInvalidValue,
                       "path is empty (expected the file name of a kernel module)");
        if (mtia::graph::CaptureTable::anyActive())
            mtia::graph::CaptureTable::instance().checkUnsafe(-1, "mtiaModuleLoad");
        *module = Runtime::instance().kernels().loadModule(path);
    });
}

MTIA_API mtiaError_t mtiaModuleUnload(mtiaModule_t module) {
    return apiCall("mtiaModuleUnload", [&] {
        if (module == nullptr) return;
        if (mtia::graph::CaptureTable::anyActive())
            mtia::graph::CaptureTable::instance().checkUnsafe(-1, "mtiaModuleUnload");
        Runtime::instance().kernels().unloadModule(module);
    });
}

MTIA_API mtiaError_t mtiaModuleGetFunction(mtiaFunction_t* fn, mtiaModule_t module,
                                           const char* name) {
    return apiCall("mtiaModuleGetFunction", [&] {
        requireNonNull(fn, "fn");
        requireNonNull(name, "name");
        *fn = Runtime::instance().kernels().moduleFunction(module, name);
    });
}

MTIA_API mtiaError_t mtiaGetBuiltinFunction(mtiaFunction_t* fn, const char* name) {
    return apiCall("mtiaGetBuiltinFunction", [&] {
        requireNonNull(fn, "fn");
        requireNonNull(name, "name");
        *fn = Runtime::instance().kernels().builtinFunction(name);
    });
}

MTIA_API mtiaError_t mtiaLaunchKernel(mtiaFunction_t fn, mtiaDim3 grid, mtiaDim3 block, void** args,
                                      size_t sharedMem, mtiaStream_t stream) {
    return apiCall("mtiaLaunchKernel", [&] {
        Runtime& rt = Runtime::instance();
        auto f = rt.kernels().borrowFunction(fn);
        auto s = rt.borrowStream(stream);
        rt.kernels().launch(*f, rt.device(s->device()), grid, block, args, sharedMem, *s);
    });
}

MTIA_API mtiaError_t mtiaBenchmarkKernel(mtiaFunction_t f, mtiaDim3 grid, mtiaDim3 block,
                                         void** args, size_t sharedMem, mtiaStream_t stream,
                                         const mtiaBenchmarkOptions* options, float* timesMs) {
    return apiCall("mtiaBenchmarkKernel", [&] {
        requireNonNull(options, "options");
        // warmup and repetitions are required; later fields read as 0 from an older caller's
        // struct.
        constexpr size_t kRequired = offsetof(mtiaBenchmarkOptions, flushCache);
        if (options->structSize < kRequired)
            mtia::fail(mtiaErrorInvalidValue,
                       "options->structSize is {}; at least {} (use MTIA_BENCHMARK_OPTIONS_INIT)",
                       options->structSize, kRequired);
        mtia::BenchmarkPlan plan;
        plan.warmup = options->warmup;
        plan.repetitions = options->repetitions;
        plan.flushCache =
            options->structSize >= offsetof(mtiaBenchmarkOptions, flushCache) + sizeof(uint32_t) &&
            options->flushCache != 0;
        if (plan.repetitions == 0)
            mtia::fail(mtiaErrorInvalidValue,
                       "options->repetitions is 0 (at least one timed launch is needed)");
        requireNonNull(timesMs, "timesMs");
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::Function> fn = rt.kernels().function(f, "f");
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        mtia::benchmarkKernel(rt, *fn, *s, grid, block, args, sharedMem, plan, timesMs);
    });
}

}  // extern "C"
