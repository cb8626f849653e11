// Launches of device kernels on the calling thread's current stream of the current device: the
// kernels of the integration's own module (kernels/*_kernels.cpp) and the runtime's built-ins.
#pragma once

#include "../kernels/kernel_params.h"

#include <mtia/mtia.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>

namespace torch_mtia {

// Loads the integration's kernel module; called once at import. Throws when it cannot be loaded.
void loadKernelModule(const char* path);

// Whether loadKernelModule succeeded.
bool kernelModuleLoaded();

// A kernel of the integration's module, found by name at its first launch and kept. Each kernel
// file's host side holds one per kernel as a function-local static:
//   static ModuleKernel kernel("mtia_torch_softmax");
//   kernel.launch(params, gridFor(rows));
// The kernel takes one argument, the params struct (copied at launch, so a graph replay sees the
// same values). Launches on the current stream of the current device; legal during capture.
class ModuleKernel {
public:
    explicit ModuleKernel(const char* name) : name_(name) {}
    template <class Params>
    void launch(const Params& params, mtiaDim3 grid) {
        launchRaw(&params, grid);
    }
    void launchRaw(const void* params, mtiaDim3 grid);

private:
    const char* name_;
    std::atomic<mtiaFunction_t> fn_{nullptr};
};

// Launches a batch holds back on this thread (PointwiseBatch, pointwise.h). Every launch through
// ModuleKernel or launchBuiltin first releases them, so that the stream receives all work in the
// order the host issued it.
class HeldLaunches {
public:
    virtual ~HeldLaunches() = default;
    // Launches what is held (on the current stream). Throws as a launch throws.
    virtual void release() = 0;
};

// The calling thread's holder of launches, or null; a holder installs itself for its lifetime.
HeldLaunches* heldLaunches();
void setHeldLaunches(HeldLaunches* held);
// Launches what the calling thread holds back, if anything. Thread safety: thread-local state only.
void releaseHeldLaunches();

// Enough blocks to spread work items over the device's engines (about 16 Ki items per block, at
// most 16 blocks), one block for small work.
mtiaDim3 gridFor(uint64_t work);

// A built-in kernel by name (mtiaGetBuiltinFunction); args point at the argument values, work is
// the element count that sizes the grid.
void launchBuiltin(const char* name, std::initializer_list<const void*> args, uint64_t work);

}  // namespace torch_mtia
