/* A module of kernels for the simulator's unit tests, loaded with moduleLoad. */
#include <mtia/mtia_sim_kernel.h>

#include <string.h>

typedef struct TestParams {
    float a, b, c;
    uint8_t tag;
} TestParams;

/* Records the order in which blocks run: out[0] counts calls, out[1 + call] = flattened block
 * index. */
MTIA_SIM_KERNEL(test_block_order) {
    uint32_t* out;
    memcpy(&out, args[0], sizeof(out));
    const uint32_t call = out[0]++;
    out[1 + call] =
        ctx->blockIdx.x + ctx->gridDim.x * (ctx->blockIdx.y + ctx->gridDim.y * ctx->blockIdx.z);
}
MTIA_SIM_KERNEL_ARGS(test_block_order, 1, sizeof(uint32_t*));

/* Copies its by-value arguments out, to show they were copied at submit. */
MTIA_SIM_KERNEL(test_struct_arg) {
    float* out;
    TestParams p;
    uint8_t small;
    double wide;
    memcpy(&out, args[0], sizeof(out));
    memcpy(&p, args[1], sizeof(p));
    memcpy(&small, args[2], sizeof(small));
    memcpy(&wide, args[3], sizeof(wide));
    if (!ctx->isDeviceRange(ctx, out, 6 * sizeof(float))) {
        ctx->fault(ctx, "illegal address: out");
        return;
    }
    out[0] = p.a;
    out[1] = p.b;
    out[2] = p.c;
    out[3] = (float)p.tag;
    out[4] = (float)small;
    out[5] = (float)wide;
}
MTIA_SIM_KERNEL_ARGS(test_struct_arg, 4, sizeof(float*), sizeof(TestParams), sizeof(uint8_t),
                     sizeof(double));

/* out[0] = isDeviceRange(ptr, bytes) as the launching device sees it. */
MTIA_SIM_KERNEL(test_is_device_range) {
    int32_t* out;
    const void* ptr;
    uint64_t bytes;
    memcpy(&out, args[0], sizeof(out));
    memcpy(&ptr, args[1], sizeof(ptr));
    memcpy(&bytes, args[2], sizeof(bytes));
    out[0] = ctx->isDeviceRange(ctx, ptr, bytes);
}
MTIA_SIM_KERNEL_ARGS(test_is_device_range, 3, sizeof(int32_t*), sizeof(const void*),
                     sizeof(uint64_t));

/* Uses the block's shared memory: out[block] = sum of 0..n-1 computed through it, out[grid] = its
 * size. */
MTIA_SIM_KERNEL(test_shared) {
    float* out;
    memcpy(&out, args[0], sizeof(out));
    float* scratch = (float*)ctx->sharedMem;
    const uint64_t n = ctx->sharedMemSize / sizeof(float);
    float sum = 0.0f;
    uint64_t i;
    for (i = 0; i < n; ++i) scratch[i] = (float)i;
    for (i = 0; i < n; ++i) sum += scratch[i];
    out[ctx->blockIdx.x] = sum;
    out[ctx->gridDim.x] = (float)ctx->sharedMemSize;
    out[ctx->gridDim.x + 1] = (float)(ctx->blockDim.x * ctx->blockDim.y * ctx->blockDim.z);
}
MTIA_SIM_KERNEL_ARGS(test_shared, 1, sizeof(float*));

/* Reports a fault with its own message. */
MTIA_SIM_KERNEL(test_fault) {
    (void)args;
    ctx->fault(ctx, "test_fault: custom failure 42");
}
MTIA_SIM_KERNEL_ARGS(test_fault, 0, 0);

/* Does nothing (for submission costs). */
MTIA_SIM_KERNEL(test_noop) {
    (void)ctx;
    (void)args;
}
MTIA_SIM_KERNEL_ARGS(test_noop, 0, 0);

/* A kernel without its argument descriptor: the driver must refuse it. */
MTIA_SIM_KERNEL(test_missing_args) {
    (void)ctx;
    (void)args;
}

/* Checks that its arguments arrive as submitted, counts itself in counts[slot] (atomically), then
 * overwrites every argument value: a launch must get argument values of its own, so a command list
 * run many times, also concurrently, sees the submitted values every time. pad (more than the
 * inline argument storage) must hold 0, 1, ..., 15 + slot. */
typedef struct TestPad {
    uint32_t words[16];
} TestPad;
MTIA_SIM_KERNEL(test_scribble) {
    uint64_t* counts;
    uint32_t slot;
    TestPad pad;
    uint32_t i;
    memcpy(&counts, args[0], sizeof(counts));
    memcpy(&slot, args[1], sizeof(slot));
    memcpy(&pad, args[2], sizeof(pad));
    for (i = 0; i < 16; ++i) {
        if (pad.words[i] != i + slot) {
            ctx->fault(ctx, "test_scribble: its arguments were changed by an earlier launch");
            return;
        }
    }
    if (slot >= 64 || !ctx->isDeviceRange(ctx, counts + slot, sizeof(uint64_t))) {
        ctx->fault(ctx, "test_scribble: illegal address or slot");
        return;
    }
    __atomic_fetch_add(counts + slot, 1, __ATOMIC_RELAXED);
    memset(args[0], 0xff, sizeof(counts));
    memset(args[1], 0xff, sizeof(slot));
    memset(args[2], 0xff, sizeof(pad));
}
MTIA_SIM_KERNEL_ARGS(test_scribble, 3, sizeof(uint64_t*), sizeof(uint32_t), sizeof(TestPad));
