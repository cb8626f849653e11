/* Kernels for the simulated MTIA device. The simulated device runs kernels as
 * host code: a module is a shared object that exports, per kernel,
 *
 *   void NAME(const mtiaKernelContext* ctx, void** args);   -- the kernel
 *   const mtiaSimKernelArgs NAME_mtia_args;                 -- its argument sizes
 *
 * MTIA_SIM_KERNEL_ARGS() defines the second. The device calls the kernel once
 * per block of the launch grid, on an engine thread; args[i] points at a copy
 * of argument i taken at launch. A kernel must not call the runtime (it gets
 * mtiaErrorNotPermitted) and reports bad input through ctx->fault.
 * C99-clean; includes only <stddef.h> and <stdint.h>. */
#ifndef MTIA_SIM_KERNEL_H
#define MTIA_SIM_KERNEL_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MTIA_SIM_MAX_KERNEL_ARGS 32u
#define MTIA_SIM_KERNEL_ARGS_SUFFIX "_mtia_args"

typedef struct mtiaKernelContext {
    uint32_t structSize;
    int32_t device;
    mtiaDim3 gridDim, blockDim, blockIdx;
    void* sharedMem; /* sharedMemSize bytes private to this block */
    uint64_t sharedMemSize;
    /* Faults the launch: the device records a sticky mtiaErrorLaunchFailure with message. */
    void (*fault)(const struct mtiaKernelContext* ctx, const char* message);
    /* 1 when [ptr, ptr + bytes) is mapped device memory this device may access, else 0;
     * bytes == 0 asks whether ptr itself is mapped. */
    int (*isDeviceRange)(const struct mtiaKernelContext* ctx, const void* ptr, uint64_t bytes);
    void* driverData; /* the driver's; do not touch */
} mtiaKernelContext;

typedef void (*mtiaSimKernelFn)(const mtiaKernelContext* ctx, void** args);

typedef struct mtiaSimKernelArgs {
    uint32_t structSize;
    uint32_t count;
    uint32_t sizes[MTIA_SIM_MAX_KERNEL_ARGS];
} mtiaSimKernelArgs;

#if defined(__GNUC__)
#define MTIA_SIM_EXPORT __attribute__((visibility("default")))
#else
#define MTIA_SIM_EXPORT
#endif
#ifdef __cplusplus
#define MTIA_SIM_EXTERN extern "C"
#else
#define MTIA_SIM_EXTERN
#endif

/* Declares kernel name's arguments: MTIA_SIM_KERNEL_ARGS(my_axpy, 3, sizeof(float*), sizeof(float),
 * sizeof(uint64_t)); for a kernel without arguments: MTIA_SIM_KERNEL_ARGS(name, 0, 0). */
#define MTIA_SIM_KERNEL_ARGS(name, count, ...)                                                     \
    MTIA_SIM_EXTERN MTIA_SIM_EXPORT const mtiaSimKernelArgs name##_mtia_args = {                   \
        sizeof(mtiaSimKernelArgs), (count), {__VA_ARGS__}}

/* Declares a kernel with the signature the device calls. */
#define MTIA_SIM_KERNEL(name)                                                                      \
    MTIA_SIM_EXTERN MTIA_SIM_EXPORT void name(const mtiaKernelContext* ctx, void** args)

#ifdef __cplusplus
}
#endif

#endif /* MTIA_SIM_KERNEL_H */
