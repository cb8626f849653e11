#include "core/api_guard.hpp"
#include "graph/capture.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

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

}  // extern "C"
