/* A second, minimal driver built outside the runtime as its own shared
 * object, against <mtia/mtia_driver.h> alone: proves the driver ABI from the
 * outside. One device with host memory; commands run synchronously at submit.
 * Build variants (-D) make it break the contract in specific ways:
 *   MINIMAL_WRONG_MAJOR     claims driver ABI 2.0
 *   MINIMAL_MISSING_SUBMIT  leaves the mandatory queueSubmit out */
#define _GNU_SOURCE
#include <mtia/mtia_driver.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define GRANULE (64u * 1024u)
#define CAPACITY (256u * 1024u * 1024u)

struct mtiaDrvMem_st {
    uint64_t size;
};
struct mtiaDrvQueue_st {
    uint64_t seq;
};

static char* g_base;
static uint64_t g_next; /* bump allocator over the reserved range */
static uint64_t g_used;
static const char* g_message = "";

static mtiaError_t fail_with(mtiaError_t e, const char* msg) {
    g_message = msg;
    return e;
}

static mtiaError_t m_init(uint32_t flags) {
    (void)flags;
    g_base =
        mmap(NULL, 4ull * CAPACITY, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return g_base == MAP_FAILED ? fail_with(mtiaErrorInitializationError, "minimal: cannot reserve")
                                : mtiaSuccess;
}
static const char* m_name(void) {
    return "minimal";
}
static const char* m_message(void) {
    return g_message;
}
static mtiaError_t m_count(int32_t* n) {
    if (!n) return fail_with(mtiaErrorInvalidValue, "minimal: count is NULL");
    *n = 1;
    return mtiaSuccess;
}
static mtiaError_t m_info(int32_t dev, mtiaDrvDeviceInfo* info) {
    mtiaDrvDeviceInfo i;
    if (dev != 0) return fail_with(mtiaErrorInvalidDevice, "minimal: no such device");
    memset(&i, 0, sizeof i);
    i.structSize = sizeof i;
    strcpy(i.name, "Minimal Test Device");
    strcpy(i.pciBusId, "0000:42:00.0");
    i.uuid[0] = 0x42;
    i.totalMemory = CAPACITY;
    i.engines = 1;
    i.numaNode = -1;
    i.maxThreadsPerBlock = 1;
    i.maxThreadsDim[0] = i.maxThreadsDim[1] = i.maxThreadsDim[2] = 1;
    i.maxGridSize[0] = i.maxGridSize[1] = i.maxGridSize[2] = 1;
    i.pciBus = 0x42;
    i.allocationGranularity = GRANULE;
    i.vaBase = (uint64_t)(uintptr_t)g_base;
    i.vaSize = 4ull * CAPACITY;
    memcpy(info, &i, info->structSize < sizeof i ? info->structSize : sizeof i);
    return mtiaSuccess;
}
static mtiaError_t m_status(int32_t dev) {
    return dev == 0 ? mtiaSuccess : mtiaErrorInvalidDevice;
}
static mtiaError_t m_sync(int32_t dev) {
    return dev == 0 ? mtiaSuccess : mtiaErrorInvalidDevice;
}
static mtiaError_t m_meminfo(int32_t dev, uint64_t* free_bytes, uint64_t* total) {
    (void)dev;
    *free_bytes = CAPACITY - g_used;
    *total = CAPACITY;
    return mtiaSuccess;
}
static mtiaError_t m_va_reserve(int32_t dev, uint64_t size, uint64_t align, void** va) {
    (void)dev;
    (void)align;
    if (g_next + size > 4ull * CAPACITY)
        return fail_with(mtiaErrorMemoryAllocation, "minimal: out of addresses");
    *va = g_base + g_next;
    g_next += size;
    return mtiaSuccess;
}
static mtiaError_t m_va_release(int32_t dev, void* va, uint64_t size) {
    (void)dev;
    (void)va;
    (void)size;
    return mtiaSuccess;
}
static mtiaError_t m_mem_create(int32_t dev, uint64_t size, mtiaDrvMem* mem) {
    (void)dev;
    if (g_used + size > CAPACITY)
        return fail_with(mtiaErrorMemoryAllocation, "minimal: capacity exceeded");
    *mem = malloc(sizeof **mem);
    if (!*mem) return mtiaErrorMemoryAllocation;
    (*mem)->size = size;
    g_used += size;
    return mtiaSuccess;
}
static mtiaError_t m_mem_release(mtiaDrvMem mem) {
    g_used -= mem->size;
    free(mem);
    return mtiaSuccess;
}
static mtiaError_t m_map(void* va, uint64_t size, mtiaDrvMem mem, uint64_t off) {
    (void)mem;
    (void)off;
    return mprotect(va, size, PROT_READ | PROT_WRITE) == 0 ? mtiaSuccess : mtiaErrorInvalidValue;
}
static mtiaError_t m_unmap(void* va, uint64_t size) {
    madvise(va, size, MADV_DONTNEED);
    return mprotect(va, size, PROT_NONE) == 0 ? mtiaSuccess : mtiaErrorInvalidValue;
}
static mtiaError_t m_queue_create(int32_t dev, int32_t prio, uint32_t flags, mtiaDrvQueue* q) {
    (void)dev;
    (void)prio;
    (void)flags;
    *q = calloc(1, sizeof **q);
    return *q ? mtiaSuccess : mtiaErrorMemoryAllocation;
}
static mtiaError_t m_queue_destroy(mtiaDrvQueue q) {
    free(q);
    return mtiaSuccess;
}
static mtiaError_t m_submit(mtiaDrvQueue q, const mtiaDrvCommand* c, uint64_t* seq) {
    struct timespec ts;
    switch (c->type) {
    case mtiaDrvCmdCopy: memcpy(c->u.copy.dst, c->u.copy.src, c->u.copy.size); break;
    case mtiaDrvCmdFill:
        memset(c->u.fill.dst, (int)(c->u.fill.value & 0xff), c->u.fill.size);
        break;
    case mtiaDrvCmdHostFunc: c->u.hostFunc.fn(c->u.hostFunc.userData); break;
    case mtiaDrvCmdWait: break;
    case mtiaDrvCmdTimestamp:
        clock_gettime(CLOCK_MONOTONIC, &ts);
        *c->u.timestamp.out = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        break;
    default: return fail_with(mtiaErrorNotSupported, "minimal: kernels are not supported");
    }
    *seq = ++q->seq;
    return mtiaSuccess;
}
static mtiaError_t m_query(mtiaDrvQueue q, uint64_t* done) {
    *done = q->seq;
    return mtiaSuccess;
}
static mtiaError_t m_wait(mtiaDrvQueue q, uint64_t seq, uint32_t flags) {
    (void)q;
    (void)seq;
    (void)flags;
    return mtiaSuccess;
}

__attribute__((visibility("default"))) mtiaError_t mtiaDriverGetOps(uint32_t apiVersion,
                                                                    mtiaDriverOps* ops) {
    mtiaDriverOps o;
    size_t n;
    if (MTIA_DRIVER_API_MAJOR(apiVersion) != MTIA_DRIVER_API_VERSION_MAJOR)
        return mtiaErrorNotSupported;
    if (!ops) return mtiaErrorInvalidValue;
    memset(&o, 0, sizeof o);
#ifdef MINIMAL_WRONG_MAJOR
    o.version = MTIA_DRIVER_MAKE_API_VERSION(2u, 0u);
#else
    o.version = MTIA_DRIVER_API_VERSION;
#endif
    /* Fill only the mandatory part plus the message, as a driver of an older minor version would.
     */
    o.structSize =
        (uint32_t)(offsetof(mtiaDriverOps, lastErrorMessage) + sizeof(o.lastErrorMessage));
    o.init = m_init;
    o.getName = m_name;
    o.deviceGetCount = m_count;
    o.deviceGetInfo = m_info;
    o.deviceGetStatus = m_status;
    o.deviceSynchronize = m_sync;
    o.memGetInfo = m_meminfo;
    o.vaReserve = m_va_reserve;
    o.vaRelease = m_va_release;
    o.memCreate = m_mem_create;
    o.memRelease = m_mem_release;
    o.memMap = m_map;
    o.memUnmap = m_unmap;
    o.queueCreate = m_queue_create;
    o.queueDestroy = m_queue_destroy;
#ifndef MINIMAL_MISSING_SUBMIT
    o.queueSubmit = m_submit;
#else
    (void)m_submit;
#endif
    o.queueQuery = m_query;
    o.queueWait = m_wait;
    o.lastErrorMessage = m_message;
    n = ops->structSize < o.structSize ? ops->structSize : o.structSize;
    memcpy(ops, &o, n);
    ops->structSize = (uint32_t)n;
    return mtiaSuccess;
}
