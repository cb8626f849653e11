#include "device_kernels.h"

#include "mtia_check.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace torch_mtia {
namespace {

std::atomic<mtiaModule_t> kernelModule{nullptr};
thread_local HeldLaunches* tHeld = nullptr;

}  // namespace

HeldLaunches* heldLaunches() {
    return tHeld;
}

void setHeldLaunches(HeldLaunches* held) {
    tHeld = held;
}

void releaseHeldLaunches() {
    if (HeldLaunches* held = tHeld) {
        tHeld = nullptr;  // its own launches go straight out
        try {
            held->release();
        } catch (...) {
            tHeld = held;
            throw;
        }
        tHeld = held;
    }
}

mtiaDim3 gridFor(uint64_t work) {
    const uint64_t blocks = std::clamp<uint64_t>(work / 16384, 1, 16);
    return {static_cast<uint32_t>(blocks), 1, 1};
}

void ModuleKernel::launchRaw(const void* params, mtiaDim3 grid) {
    releaseHeldLaunches();
    mtiaFunction_t fn = fn_.load(std::memory_order_acquire);
    if (fn == nullptr) {
        mtiaModule_t module = kernelModule.load();
        TORCH_CHECK(module != nullptr,
                    "torch_mtia: the kernel module is not loaded (import torch_mtia first)");
        MTIA_CHECK(mtiaModuleGetFunction(&fn, module, name_));
        fn_.store(fn, std::memory_order_release);  // a racing lookup stores the same handle
    }
    void* args[] = {const_cast<void*>(params)};
    MTIA_CHECK(mtiaLaunchKernel(fn, grid, mtiaDim3{1, 1, 1}, args, 0, nullptr));
}

void loadKernelModule(const char* path) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    if (kernelModule.load() != nullptr) return;
    mtiaModule_t module = nullptr;
    MTIA_CHECK(mtiaModuleLoad(&module, path));  // kept loaded for the life of the process
    mtiaFunction_t fn = nullptr;
    // The module is ours when its pointwise kernel is there (a stale or foreign file is refused).
    MTIA_CHECK(mtiaModuleGetFunction(&fn, module, "mtia_torch_pointwise"));
    kernelModule.store(module);
}

bool kernelModuleLoaded() {
    return kernelModule.load() != nullptr;
}

void launchBuiltin(const char* name, std::initializer_list<const void*> args, uint64_t work) {
    releaseHeldLaunches();
    mtiaFunction_t fn = nullptr;
    MTIA_CHECK(mtiaGetBuiltinFunction(&fn, name));
    std::vector<void*> values;
    values.reserve(args.size());
    for (const void* a : args) values.push_back(const_cast<void*>(a));
    MTIA_CHECK(mtiaLaunchKernel(fn, gridFor(work), mtiaDim3{1, 1, 1},
                                values.empty() ? nullptr : values.data(), 0, nullptr));
}

}  // namespace torch_mtia
