/* A driver that stands in front of another one and counts: it loads the
 * driver module named by MTIA_COUNTING_DRIVER_TARGET (a path, e.g. the
 * simulator's mtia_driver_sim.so), hands the runtime that driver's own ops
 * table, and routes through counters the entries that ask how far work is
 * (queueQuery, queueGetCounts, queueWait, deviceSynchronize) and those that
 * give memory back (memRelease, memUnmap, vaRelease). Tests read the counts
 * with dlopen(path, RTLD_NOLOAD) and dlsym("countingDriverCounts").
 * Built against <mtia/mtia_driver.h> alone, like minimal_driver.c. */
#define _GNU_SOURCE
#include <mtia/mtia_driver.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* The order countingDriverCounts writes them in. */
enum {
    COUNT_QUEUE_QUERY,
    COUNT_QUEUE_GET_COUNTS,
    COUNT_QUEUE_WAIT,
    COUNT_DEVICE_SYNCHRONIZE,
    COUNT_MEM_RELEASE,
    COUNT_MEM_UNMAP,
    COUNT_VA_RELEASE,
    COUNT_N
};

static _Atomic uint64_t g_counts[COUNT_N];
static mtiaDriverOps
    g_real; /* the target's table; written once, before the runtime calls anything */
static mtiaDriverGetOpsFn g_real_get_ops;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void count(int which) {
    atomic_fetch_add_explicit(&g_counts[which], 1, memory_order_relaxed);
}

static mtiaError_t c_queue_query(mtiaDrvQueue q, uint64_t* completed) {
    count(COUNT_QUEUE_QUERY);
    return g_real.queueQuery(q, completed);
}
static mtiaError_t c_queue_get_counts(mtiaDrvQueue q, uint64_t* submitted, uint64_t* completed) {
    count(COUNT_QUEUE_GET_COUNTS);
    return g_real.queueGetCounts(q, submitted, completed);
}
static mtiaError_t c_queue_wait(mtiaDrvQueue q, uint64_t seq, uint32_t flags) {
    count(COUNT_QUEUE_WAIT);
    return g_real.queueWait(q, seq, flags);
}
static mtiaError_t c_device_synchronize(int32_t dev) {
    count(COUNT_DEVICE_SYNCHRONIZE);
    return g_real.deviceSynchronize(dev);
}
static mtiaError_t c_mem_release(mtiaDrvMem mem) {
    count(COUNT_MEM_RELEASE);
    return g_real.memRelease(mem);
}
static mtiaError_t c_mem_unmap(void* va, uint64_t size) {
    count(COUNT_MEM_UNMAP);
    return g_real.memUnmap(va, size);
}
static mtiaError_t c_va_release(int32_t dev, void* va, uint64_t size) {
    count(COUNT_VA_RELEASE);
    return g_real.vaRelease(dev, va, size);
}

/* Copies of the counters in the order of the enum above (7 entries). */
EXPORT void countingDriverCounts(uint64_t out[7]) {
    for (int i = 0; i < COUNT_N; ++i)
        out[i] = atomic_load_explicit(&g_counts[i], memory_order_relaxed);
}

static void load_target(void) {
    const char* path = getenv("MTIA_COUNTING_DRIVER_TARGET");
    if (path == NULL || path[0] == '\0') return;
    /* RTLD_NODELETE: the target owns threads and mappings for the whole process. */
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == NULL) return;
    void* sym = dlsym(handle, MTIA_DRIVER_GET_OPS_SYMBOL);
    if (sym != NULL) memcpy(&g_real_get_ops, &sym, sizeof g_real_get_ops);
}

EXPORT mtiaError_t mtiaDriverGetOps(uint32_t apiVersion, mtiaDriverOps* ops) {
    mtiaDriverOps mine;
    mtiaError_t st;
    size_t n;
    if (ops == NULL) return mtiaErrorInvalidValue;
    pthread_once(&g_once, load_target);
    /* No target: the runtime reports that this driver refused to start. */
    if (g_real_get_ops == NULL) return mtiaErrorInitializationError;
    memset(&mine, 0, sizeof mine);
    mine.structSize = sizeof mine;
    st = g_real_get_ops(apiVersion, &mine);
    if (st != mtiaSuccess) return st;
    if (mine.structSize > sizeof mine) mine.structSize = sizeof mine;
    g_real = mine;
    /* Everything else is the target's own entry; an entry it leaves out stays out (the loader
     * judges). */
#define COUNTED(field, fn)                                                                         \
    if (mine.field != NULL) mine.field = fn
    COUNTED(queueQuery, c_queue_query);
    COUNTED(queueGetCounts, c_queue_get_counts);
    COUNTED(queueWait, c_queue_wait);
    COUNTED(deviceSynchronize, c_device_synchronize);
    COUNTED(memRelease, c_mem_release);
    COUNTED(memUnmap, c_mem_unmap);
    COUNTED(vaRelease, c_va_release);
#undef COUNTED
    n = ops->structSize < mine.structSize ? ops->structSize : mine.structSize;
    memcpy(ops, &mine, n);
    ops->structSize = (uint32_t)n;
    return mtiaSuccess;
}
