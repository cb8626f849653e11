/* C ABI behaviour that depends on settings read once per process. Each mode
 * runs as its own test with its environment (see CMakeLists.txt/meson.build):
 *   capi_env_test MODE */
#include "capi_check.h"

#include <stdint.h>
#include <stdlib.h>

static void* alloc_on(int dev, size_t n) {
    void* p = NULL;
    mtiaSetDevice(dev);
    CHECK_OK(mtiaMalloc(&p, n));
    return p;
}

/* Runs axpy on dev over n floats in d; returns the launch status. */
static mtiaError_t axpy(float* d, uint64_t n) {
    mtiaFunction_t fn = NULL;
    float a = 2;
    void* args[] = {&d, &a, &d, &n};
    mtiaDim3 one = {1, 1, 1};
    if (mtiaGetBuiltinFunction(&fn, "axpy_f32") != mtiaSuccess) return mtiaErrorUnknown;
    return mtiaLaunchKernel(fn, one, one, args, 0, NULL);
}

/* After a sticky fault on device `bad`, device `good` must still work. */
static void check_sticky(int bad, int good) {
    float v = 1, out = 0;
    void* p = NULL;
    float* g;
    mtiaSetDevice(bad);
    CHECK_STATUS(mtiaErrorLaunchFailure, mtiaDeviceSynchronize());
    CHECK_STATUS(mtiaErrorLaunchFailure, mtiaDeviceSynchronize()); /* sticky */
    CHECK_STATUS(mtiaErrorLaunchFailure, mtiaMalloc(&p, 16));
    CHECK_STATUS(mtiaErrorLaunchFailure, axpy(NULL, 0));
    g = (float*)alloc_on(good, sizeof(float));
    CHECK_OK(mtiaMemcpy(g, &v, sizeof v, mtiaMemcpyHostToDevice));
    CHECK_OK(axpy(g, 1));
    CHECK_OK(mtiaMemcpy(&out, g, sizeof out, mtiaMemcpyDeviceToHost));
    CHECK_TRUE(out == 3.0f);
    CHECK_OK(mtiaDeviceSynchronize());
    CHECK_OK(mtiaFree(g));
}

static void faults_alloc(void) { /* MTIA_SIM_FAULTS=alloc=2,alloc=3,alloc=5 */
    void *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    mtiaMemoryStats st = MTIA_MEMORY_STATS_INIT;
    CHECK_OK(mtiaMalloc(&a, 100)); /* device allocation 1 */
    /* 2 fails, the out-of-memory ladder frees what it can (nothing: a is live) and 3 fails too. */
    CHECK_STATUS(mtiaErrorMemoryAllocation, mtiaMalloc(&b, 4u << 20));
    CHECK_MESSAGE("out of memory on device 0: tried to allocate 4.00 MiB");
    CHECK_MESSAGE("injected");
    CHECK_TRUE(b == NULL);
    CHECK_OK(mtiaMalloc(&c, 4u << 20));  /* not sticky: 4 succeeds */
    CHECK_OK(mtiaMalloc(&d, 30u << 20)); /* 5 fails, the ladder's retry (6) succeeds */
    CHECK_OK(mtiaMemoryGetStats(0, &st));
    CHECK_TRUE(st.num_alloc_retries == 2 && st.num_ooms == 1);
    CHECK_TRUE(st.num_device_alloc == 3 && st.segment[mtiaStatAll].current == 3);
    CHECK_OK(mtiaFree(a));
    CHECK_OK(mtiaFree(c));
    CHECK_OK(mtiaFree(d));
}

static void faults_kernel(void) { /* MTIA_SIM_FAULTS=kernel=axpy_f32@2 */
    float* d = (float*)alloc_on(0, 64 * sizeof(float));
    CHECK_OK(mtiaMemset(d, 0, 64 * sizeof(float)));
    CHECK_OK(axpy(d, 64));
    CHECK_OK(mtiaDeviceSynchronize());
    CHECK_OK(axpy(d, 64)); /* queued; the fault shows at the next synchronising call */
    check_sticky(0, 1);
    mtiaSetDevice(0);
    CHECK_STATUS(mtiaErrorLaunchFailure, mtiaMemset(d, 0, 4));
    CHECK_MESSAGE("axpy_f32");
    CHECK_OK(mtiaFree(d)); /* stream-ordered: goes back to the cache without touching the device */
    CHECK_STATUS(mtiaErrorLaunchFailure,
                 mtiaMalloc((void**)&d, 4));                /* new allocations see the fault */
    CHECK_STATUS(mtiaErrorLaunchFailure, mtiaEmptyCache()); /* frees the cache, reports the fault */
    CHECK_MESSAGE("its cache was freed all the same");
}

static void module_fault(void) {
    const char* path = getenv("MTIA_TEST_KERNELS");
    mtiaModule_t mod = NULL;
    mtiaFunction_t fn = NULL;
    mtiaDim3 one = {1, 1, 1};
    CHECK_TRUE(path != NULL);
    if (!path) return;
    CHECK_OK(mtiaModuleLoad(&mod, path));
    CHECK_OK(mtiaModuleGetFunction(&fn, mod, "always_faults"));
    mtiaSetDevice(1);
    CHECK_OK(mtiaLaunchKernel(fn, one, one, NULL, 0, NULL));
    check_sticky(1, 0);
    CHECK_OK(mtiaModuleUnload(mod));
}

static void host_pointer_fault(void) {
    float host[4] = {0};
    mtiaSetDevice(0);
    CHECK_OK(axpy(host, 4)); /* the device finds out when it runs the kernel */
    CHECK_STATUS(mtiaErrorLaunchFailure, mtiaDeviceSynchronize());
    CHECK_MESSAGE("illegal address");
    check_sticky(0, 1);
}

static void no_devices(void) { /* MTIA_SIM_DEVICES=0 */
    int count = -1, dev = -1, a = 1, b = 0;
    void* p = NULL;
    mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
    CHECK_OK(mtiaGetDeviceCount(&count));
    CHECK_TRUE(count == 0);
    CHECK_OK(mtiaInit(0));
    CHECK_STATUS(mtiaErrorNoDevice, mtiaSetDevice(0));
    CHECK_STATUS(mtiaErrorNoDevice, mtiaGetDevice(&dev));
    CHECK_STATUS(mtiaErrorNoDevice, mtiaMalloc(&p, 16));
    CHECK_STATUS(mtiaErrorNoDevice, mtiaGetDeviceProperties(&prop, 0));
    CHECK_STATUS(mtiaErrorNoDevice, mtiaDeviceSynchronize());
    CHECK_OK(mtiaMemcpy(&b, &a, sizeof a, mtiaMemcpyHostToHost));
    CHECK_TRUE(b == 1);
}

static void init_fails(const char* needle) {
    int count = -1;
    void* p = NULL;
    CHECK_OK(mtiaGetDeviceCount(&count)); /* never fails */
    CHECK_TRUE(count == 0);
    CHECK_STATUS(mtiaErrorInitializationError, mtiaInit(0));
    CHECK_MESSAGE(needle);
    CHECK_STATUS(mtiaErrorInitializationError, mtiaMalloc(&p, 16));
    CHECK_MESSAGE(needle);
    CHECK_STATUS(mtiaErrorInitializationError, mtiaSetDevice(0));
}

static void visible_devices(void) { /* MTIA_SIM_DEVICES=3 MTIA_VISIBLE_DEVICES=2,0 */
    int count = 0;
    mtiaDeviceProp p0 = MTIA_DEVICE_PROP_INIT, p1 = MTIA_DEVICE_PROP_INIT;
    CHECK_OK(mtiaGetDeviceCount(&count));
    CHECK_TRUE(count == 2);
    CHECK_OK(mtiaGetDeviceProperties(&p0, 0));
    CHECK_OK(mtiaGetDeviceProperties(&p1, 1));
    CHECK_TRUE(p0.pciBusID == p1.pciBusID + 2); /* runtime 0 is driver device 2 */
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaSetDevice(2));
}

static void small_memory(void) { /* MTIA_SIM_MEMORY=64MiB */
    size_t free_mem = 0, total = 0;
    void *p[4] = {NULL, NULL, NULL, NULL}, *big = NULL;
    int i;
    CHECK_OK(mtiaMemGetInfo(&free_mem, &total));
    CHECK_TRUE(total == 64u << 20);
    CHECK_STATUS(mtiaErrorMemoryAllocation, mtiaMalloc(&big, (64u << 20) + 1));
    CHECK_MESSAGE("out of memory");
    for (i = 0; i < 3; ++i) CHECK_OK(mtiaMalloc(&p[i], 20u << 20));
    CHECK_STATUS(mtiaErrorMemoryAllocation, mtiaMalloc(&p[3], 20u << 20));
    CHECK_OK(mtiaFree(p[0]));
    CHECK_OK(mtiaMalloc(&p[3], 20u << 20)); /* freed memory is usable again */
    for (i = 1; i < 4; ++i) CHECK_OK(mtiaFree(p[i]));
    CHECK_OK(mtiaMemGetInfo(&free_mem, &total));
    CHECK_TRUE(free_mem == 4u << 20); /* cached until emptied */
    CHECK_OK(mtiaEmptyCache());
    CHECK_OK(mtiaMemGetInfo(&free_mem, &total));
    CHECK_TRUE(free_mem == total);
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "faults_alloc") == 0)
        faults_alloc();
    else if (strcmp(mode, "faults_kernel") == 0)
        faults_kernel();
    else if (strcmp(mode, "module_fault") == 0)
        module_fault();
    else if (strcmp(mode, "host_pointer_fault") == 0)
        host_pointer_fault();
    else if (strcmp(mode, "no_devices") == 0)
        no_devices();
    else if (strcmp(mode, "bad_sim_memory") == 0)
        init_fails("MTIA_SIM_MEMORY");
    else if (strcmp(mode, "bad_log_level") == 0)
        init_fails("MTIA_LOG_LEVEL='loud'");
    else if (strcmp(mode, "bad_driver") == 0)
        init_fails("MTIA_DRIVER='nosuch'");
    else if (strcmp(mode, "bad_visible_devices") == 0)
        init_fails("MTIA_VISIBLE_DEVICES lists device 5");
    else if (strcmp(mode, "visible_devices") == 0)
        visible_devices();
    else if (strcmp(mode, "small_memory") == 0)
        small_memory();
    else {
        fprintf(stderr, "capi_env_test: unknown mode '%s'\n", mode);
        return 2;
    }
    return capi_summary();
}
