/* A kernel module for the simulated device, built as its own shared object,
 * used by the C ABI tests. */
#include <mtia/mtia_sim_kernel.h>

/* out[i] = i + base over the whole range, split across blocks. */
MTIA_SIM_KERNEL_ARGS(iota_i32, 3, sizeof(int*), sizeof(int), sizeof(uint64_t));
MTIA_SIM_KERNEL(iota_i32) {
    int* out = *(int**)args[0];
    int base = *(int*)args[1];
    uint64_t n = *(uint64_t*)args[2];
    uint64_t blocks = (uint64_t)ctx->gridDim.x * ctx->gridDim.y * ctx->gridDim.z;
    uint64_t b =
        ctx->blockIdx.x +
        (uint64_t)ctx->gridDim.x * (ctx->blockIdx.y + (uint64_t)ctx->gridDim.y * ctx->blockIdx.z);
    uint64_t per = (n + blocks - 1) / blocks, i;
    if (!ctx->isDeviceRange(ctx, out, n * sizeof(int))) {
        ctx->fault(ctx, "iota_i32: out is not device memory");
        return;
    }
    for (i = b * per; i < n && i < (b + 1) * per; ++i) out[i] = (int)i + base;
}

/* Faults the device on purpose. */
MTIA_SIM_KERNEL_ARGS(always_faults, 0, 0);
MTIA_SIM_KERNEL(always_faults) {
    (void)args;
    ctx->fault(ctx, "always_faults: fault requested by the test");
}

/* Calls a runtime entry point passed as an argument and stores its status:
 * the runtime must refuse calls from device work. */
typedef mtiaError_t (*count_fn)(int*);
MTIA_SIM_KERNEL_ARGS(calls_runtime, 2, sizeof(int*), sizeof(count_fn));
MTIA_SIM_KERNEL(calls_runtime) {
    int* status = *(int**)args[0];
    count_fn fn = *(count_fn*)args[1];
    int count = 0;
    (void)ctx;
    *status = (int)fn(&count);
}

/* A kernel without its argument descriptor: lookups must refuse it. */
MTIA_SIM_KERNEL(no_descriptor) {
    (void)ctx;
    (void)args;
}
