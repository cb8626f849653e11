// Launches of device kernels on the calling thread's current stream of the current device: the
// runtime's built-ins (f32, contiguous) and the strided elementwise kernel of the integration's own
// kernel module (kernels/elementwise_kernels.cpp).
#pragma once

#include "../kernels/kernel_params.h"

#include <cstdint>
#include <initializer_list>

namespace torch_mtia {

// Loads the integration's kernel module; called once at import. Throws when it cannot be loaded.
void loadKernelModule(const char* path);

// Whether loadKernelModule succeeded.
bool kernelModuleLoaded();

void launchElementwise(const mtiaTorchElementwise& params);

// A built-in kernel by name (mtiaGetBuiltinFunction); args point at the argument values, work is
// the element count that sizes the grid.
void launchBuiltin(const char* name, std::initializer_list<const void*> args, uint64_t work);

}  // namespace torch_mtia
