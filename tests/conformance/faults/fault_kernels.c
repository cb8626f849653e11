/* Kernels that fault on purpose, for the kernel fault tests (faults_test.cpp): a loadable module in
 * both builds. Every access goes through volatile so that the compiler keeps the faulting
 * instruction as written. */
#include <mtia/mtia_sim_kernel.h>

#include <stdlib.h>

/* *(int*)args[0] = 1: a null or unmapped address faults with SIGSEGV. */
MTIA_SIM_KERNEL_ARGS(write_at, 1, sizeof(void*));
MTIA_SIM_KERNEL(write_at) {
    volatile int* p = *(volatile int**)args[0];
    (void)ctx;
    *p = 1;
}

/* *out = a / b with integers: b == 0 raises SIGFPE on x86. */
MTIA_SIM_KERNEL_ARGS(divide_i32, 3, sizeof(int*), sizeof(int), sizeof(int));
MTIA_SIM_KERNEL(divide_i32) {
    int* out = *(int**)args[0];
    volatile int a = *(int*)args[1];
    volatile int b = *(int*)args[2];
    (void)ctx;
    *out = a / b;
}

/* Calls abort(): SIGABRT. */
MTIA_SIM_KERNEL_ARGS(calls_abort, 0, 0);
MTIA_SIM_KERNEL(calls_abort) {
    (void)ctx;
    (void)args;
    abort();
}

/* out[i] = i + base for i < n, one block: the good kernel the tests check results with. */
MTIA_SIM_KERNEL_ARGS(iota_i32, 3, sizeof(int*), sizeof(int), sizeof(uint64_t));
MTIA_SIM_KERNEL(iota_i32) {
    int* out = *(int**)args[0];
    int base = *(int*)args[1];
    uint64_t n = *(uint64_t*)args[2], i;
    (void)ctx;
    for (i = 0; i < n; ++i) out[i] = (int)i + base;
}
