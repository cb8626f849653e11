/* Kernels for torch_mtia.autotune's tests and benchmark (tests/torch/test_autotune.py,
 * bench/autotune_bench.py): candidates that take a known time, write where their arguments point,
 * fault, hang or abort. A module of the simulated device (<mtia/mtia_sim_kernel.h>). */
/* clock_gettime under strict ISO C (the Meson build compiles with -std=c11). */
#define _POSIX_C_SOURCE 200809L

#include <mtia/mtia_sim_kernel.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t nowNs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Busy for `us` microseconds of wall time per block (a compute-bound candidate of known cost). */
MTIA_SIM_KERNEL_ARGS(spin_us, 1, sizeof(uint64_t));
MTIA_SIM_KERNEL(spin_us) {
    uint64_t us;
    (void)ctx;
    memcpy(&us, args[0], sizeof us);
    const uint64_t end = nowNs() + us * 1000u;
    while (nowNs() < end) {}
}

/* Takes `us` microseconds per block without using the host's CPU, as a real device's kernel
 * would (the engine sleeps). */
MTIA_SIM_KERNEL_ARGS(sleep_us, 1, sizeof(uint64_t));
MTIA_SIM_KERNEL(sleep_us) {
    uint64_t us;
    struct timespec until;
    (void)ctx;
    memcpy(&us, args[0], sizeof us);
    const uint64_t end = nowNs() + us * 1000u;
    until.tv_sec = (time_t)(end / 1000000000u);
    until.tv_nsec = (long)(end % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != 0) {}
}

/* *dst = value, dst a pointer argument (autotune.ptr). */
MTIA_SIM_KERNEL_ARGS(write_u64, 2, sizeof(uint64_t*), sizeof(uint64_t));
MTIA_SIM_KERNEL(write_u64) {
    uint64_t* dst;
    uint64_t value;
    memcpy(&dst, args[0], sizeof dst);
    memcpy(&value, args[1], sizeof value);
    if (!ctx->isDeviceRange(ctx, dst, sizeof value)) {
        ctx->fault(ctx, "write_u64: dst is not device memory");
        return;
    }
    *dst = value;
}

/* The same through one by-value struct whose pointer fields the caller relocates
 * (autotune.struct): dst[0] = value, other[0] = ~value. */
typedef struct WriteParams {
    uint64_t value;
    uint64_t* dst;
    uint64_t* other;
} WriteParams;
MTIA_SIM_KERNEL_ARGS(write_struct, 1, sizeof(WriteParams));
MTIA_SIM_KERNEL(write_struct) {
    WriteParams p;
    memcpy(&p, args[0], sizeof p);
    if (!ctx->isDeviceRange(ctx, p.dst, sizeof(uint64_t)) ||
        !ctx->isDeviceRange(ctx, p.other, sizeof(uint64_t))) {
        ctx->fault(ctx, "write_struct: dst or other is not device memory");
        return;
    }
    *p.dst = p.value;
    *p.other = ~p.value;
}

/* Reports a device fault the way well-behaved kernels do (a sticky mtiaErrorLaunchFailure). */
MTIA_SIM_KERNEL_ARGS(reports_fault, 0, 0);
MTIA_SIM_KERNEL(reports_fault) {
    (void)args;
    ctx->fault(ctx, "reports_fault: fault requested by the test");
}

/* Writes through a null pointer (SIGSEGV in the engine: an illegal address). */
MTIA_SIM_KERNEL_ARGS(null_write, 0, 0);
MTIA_SIM_KERNEL(null_write) {
    (void)ctx;
    (void)args;
    *(volatile int*)(uintptr_t)0 = 1;
}

/* Never returns. */
MTIA_SIM_KERNEL_ARGS(hang, 0, 0);
MTIA_SIM_KERNEL(hang) {
    volatile int forever = 1;
    (void)ctx;
    (void)args;
    while (forever) {}
}

/* Calls abort (SIGABRT in the engine). */
MTIA_SIM_KERNEL_ARGS(aborts, 0, 0);
MTIA_SIM_KERNEL(aborts) {
    (void)ctx;
    (void)args;
    abort();
}

/* Ends its process with SIGKILL, which no runtime can turn into a device error: the pool's restart
 * path whatever the runtime does with faults. */
MTIA_SIM_KERNEL_ARGS(kills_process, 0, 0);
MTIA_SIM_KERNEL(kills_process) {
    (void)ctx;
    (void)args;
    raise(SIGKILL);
}
