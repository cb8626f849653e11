/* Pinned host memory through the C ABI: mtiaMallocHost, mtiaFreeHost, mtiaHostRecordStream, pointer
 * attributes, stream-ordered reuse, NUMA placement, the RLIMIT_MEMLOCK fallback, the background
 * thread and asynchronous copies. Streams are held back by a "gate" host function that the test
 * opens, so "not yet" is certain rather than a race against a timer.
 *
 *   capi_host_memory_test              the main checks (also run with a 2-node hwloc topology)
 *   capi_host_memory_test memlock      RLIMIT_MEMLOCK lowered: memory is reported unlocked
 *   capi_host_memory_test background   under MTIA_ALLOC_CONF=pinned_use_background_threads:True
 *   capi_host_memory_test no_devices   under MTIA_SIM_DEVICES=0 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* syscall() */

#include "capi_check.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { PAGE_GUESS = 4096 };

/* ---- A gate: a host function that holds its stream until the test opens it
 * ------------------------ A watchdog opens it after 20 s, so a call that wrongly waits for the
 * stream fails instead of hanging. */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_is_open = 1;
static int gate_watchdog_fired = 0;
static pthread_t gate_watchdog;

static void gate_fn(void* unused) {
    (void)unused;
    while (!__atomic_load_n(&gate_is_open, __ATOMIC_ACQUIRE)) sched_yield();
}

static void* gate_watch(void* unused) {
    struct timespec deadline;
    (void)unused;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 20;
    pthread_mutex_lock(&gate_mu);
    while (!__atomic_load_n(&gate_is_open, __ATOMIC_ACQUIRE)) {
        if (pthread_cond_timedwait(&gate_cv, &gate_mu, &deadline) == ETIMEDOUT) {
            gate_watchdog_fired = 1;
            __atomic_store_n(&gate_is_open, 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&gate_mu);
    return NULL;
}

static void gate_close(mtiaStream_t s) {
    __atomic_store_n(&gate_is_open, 0, __ATOMIC_RELEASE);
    CHECK_OK(mtiaLaunchHostFunc(s, gate_fn, NULL));
    CHECK_TRUE(pthread_create(&gate_watchdog, NULL, gate_watch, NULL) == 0);
}

static void gate_open(void) {
    pthread_mutex_lock(&gate_mu);
    __atomic_store_n(&gate_is_open, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    pthread_join(gate_watchdog, NULL);
    CHECK_TRUE(!gate_watchdog_fired); /* else a call waited for the gated stream */
    gate_watchdog_fired = 0;
}

/* ---- Helpers -----------------------------------------------------------------------------------
 */

static mtiaPointerAttributes attributes_of(const void* p) {
    mtiaPointerAttributes at = MTIA_POINTER_ATTRIBUTES_INIT;
    CHECK_OK(mtiaPointerGetAttributes(&at, p));
    return at;
}

/* Whether page-locking size more bytes stays under the soft RLIMIT_MEMLOCK (with the pages this
 * process may have locked already counted generously). */
static int lock_allowed(size_t size) {
    struct rlimit lim;
    if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0) return 0;
    return lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= size + ((size_t)1 << 20);
}

/* The NUMA node of the page at p (which must be ours and present), or -1 when the kernel refuses.
 */
static int node_of_page(void* p) {
    int node = -1;
    /* MPOL_F_NODE | MPOL_F_ADDR; the raw call keeps libnuma out of a test of the public API. */
    if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, p, 3UL) != 0) return -1;
    return node;
}

/* Whether this process may place memory on node: the kernel answers get_mempolicy and the node is
 * in Mems_allowed_list (ranges such as "0" or "0-1,3"). */
static int host_has_node(int node) {
    FILE* f;
    char line[512];
    int found = 0, mode = 0;
    if (node < 0 || syscall(SYS_get_mempolicy, &mode, NULL, 0UL, NULL, 0UL) != 0) return 0;
    f = fopen("/proc/self/status", "r");
    if (f == NULL) return 0;
    while (fgets(line, sizeof line, f) != NULL) {
        const char* s;
        if (strncmp(line, "Mems_allowed_list:", 18) != 0) continue;
        s = line + 18;
        while (*s != '\0' && *s != '\n') {
            char* end;
            long lo, hi;
            while (*s == ' ' || *s == '\t' || *s == ',') ++s;
            lo = strtol(s, &end, 10);
            if (end == s) break;
            hi = lo;
            s = end;
            if (*s == '-') {
                hi = strtol(s + 1, &end, 10);
                s = end;
            }
            if (node >= lo && node <= hi) found = 1;
        }
    }
    fclose(f);
    return found;
}

/* Runs fn, returns how many bytes it wrote to stderr (fd 2), or -1 when that cannot be captured. */
static long stderr_bytes_of(void (*fn)(void*), void* arg) {
    FILE* capture = tmpfile();
    int saved;
    long n;
    if (capture == NULL) return -1;
    fflush(stderr);
    saved = dup(2);
    dup2(fileno(capture), 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fseek(capture, 0, SEEK_END);
    n = ftell(capture);
    fclose(capture);
    return n;
}

/* ---- Main checks --------------------------------------------------------------------------------
 */

static void test_bad_arguments(void) {
    void *p = (void*)1, *q = NULL, *d = NULL;
    int local = 0;
    mtiaStream_t s = NULL;

    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMallocHost(NULL, 16));
    CHECK_MESSAGE("mtiaMallocHost");
    CHECK_MESSAGE("ptr is NULL");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMallocHost(&p, SIZE_MAX));
    CHECK_MESSAGE("size");
    CHECK_OK(mtiaMallocHost(&p, 0));
    CHECK_TRUE(p == NULL);
    CHECK_OK(mtiaFreeHost(NULL));

    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFreeHost(&local));
    CHECK_MESSAGE("not memory from mtiaMallocHost");
    CHECK_OK(mtiaMalloc(&d, 256));
    CHECK_STATUS(mtiaErrorInvalidValue,
                 mtiaFreeHost(d)); /* device memory is not pinned host memory */
    CHECK_MESSAGE("not memory from mtiaMallocHost");
    CHECK_OK(mtiaMallocHost(&p, 100));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFree(p)); /* nor the other way round */
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFreeHost((char*)p + 1));
    CHECK_MESSAGE("inside");
    CHECK_OK(mtiaFreeHost(p));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFreeHost(p));
    CHECK_MESSAGE("already freed");

    CHECK_STATUS(mtiaErrorInvalidValue, mtiaHostRecordStream(NULL, NULL));
    CHECK_MESSAGE("hostPtr is NULL");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaHostRecordStream(&local, NULL));
    CHECK_MESSAGE("hostPtr");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaHostRecordStream(p, NULL)); /* freed */
    CHECK_MESSAGE("freed");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaHostRecordStream(d, NULL));
    CHECK_OK(mtiaMallocHost(&q, 100));
    CHECK_STATUS(mtiaErrorInvalidHandle, mtiaHostRecordStream(q, (mtiaStream_t)&local));
    CHECK_OK(mtiaStreamCreate(&s));
    CHECK_OK(mtiaStreamDestroy(s));
    CHECK_STATUS(mtiaErrorInvalidHandle, mtiaHostRecordStream(q, s)); /* destroyed */
    CHECK_OK(mtiaHostRecordStream(q, NULL));                          /* the current stream */
    CHECK_OK(mtiaHostRecordStream((char*)q + 99, NULL)); /* interior pointers resolve */
    CHECK_STATUS(mtiaErrorInvalidValue,
                 mtiaHostRecordStream((char*)q + 100, NULL)); /* past its end */
    CHECK_OK(mtiaFreeHost(q));
    CHECK_OK(mtiaFree(d));
}

static void test_reuse(void) {
    unsigned char *p = NULL, *q = NULL, *r = NULL;
    int i, ok = 1;
    CHECK_OK(mtiaMallocHost((void**)&p, 1000));
    for (i = 0; i < 1000; ++i) p[i] = (unsigned char)i;
    CHECK_OK(mtiaFreeHost(p));
    CHECK_OK(mtiaMallocHost((void**)&q, 1000));
    CHECK_TRUE(q == p); /* the freed block serves the next request of its size */
    CHECK_OK(mtiaMallocHost((void**)&r, 1000));
    CHECK_TRUE(r != NULL && r != q);
    for (i = 0; i < 1000; ++i) r[i] = 0xEE;
    for (i = 0; i < 1000; ++i) ok &= q[i] == (unsigned char)i;
    CHECK_TRUE(ok); /* live blocks never overlap */
    CHECK_OK(mtiaFreeHost(q));
    CHECK_OK(mtiaFreeHost(r));
}

/* A block recorded for a stream is not handed out again until the work queued there before the free
 * has finished; then the next request gets it. */
static void test_recorded_stream_delays_reuse(void) {
    mtiaStream_t s = NULL;
    char *p = NULL, *q = NULL, *r = NULL;
    CHECK_OK(mtiaStreamCreate(&s));
    CHECK_OK(mtiaMallocHost((void**)&p, 3000));
    CHECK_OK(mtiaHostRecordStream(p + 10, s));
    gate_close(s);
    CHECK_OK(mtiaFreeHost(p));
    CHECK_OK(mtiaMallocHost((void**)&q, 3000));
    CHECK_TRUE(q != NULL && q != p);
    CHECK_STATUS(mtiaErrorNotReady,
                 mtiaStreamQuery(s)); /* the gate held: the check above was "before" */
    gate_open();
    CHECK_OK(mtiaStreamSynchronize(s));
    CHECK_OK(mtiaMallocHost((void**)&r, 3000));
    CHECK_TRUE(r == p);
    CHECK_OK(mtiaFreeHost(q));
    CHECK_OK(mtiaFreeHost(r));
    CHECK_OK(mtiaStreamDestroy(s));
}

static void test_pointer_attributes(void) {
    mtiaPointerAttributes at;
    char *p = NULL, *d = NULL;
    CHECK_OK(mtiaMallocHost((void**)&p, 1000));
    at = attributes_of(p + 999);
    CHECK_TRUE(at.type == mtiaMemoryTypeHost && at.device == -1 && at.base == p && at.size == 1000);
    if (lock_allowed(PAGE_GUESS)) CHECK_TRUE(at.locked == 1);
    at = attributes_of(p);
    CHECK_TRUE(at.type == mtiaMemoryTypeHost && at.base == p);
    at = attributes_of(p + 1000); /* past the allocation */
    CHECK_TRUE(at.type == mtiaMemoryTypeUnregistered && at.base == NULL && at.locked == 0);

    /* A caller built against the struct before 'locked' existed gets nothing written there. */
    at.structSize = (uint32_t)offsetof(mtiaPointerAttributes, locked);
    at.locked = 42;
    CHECK_OK(mtiaPointerGetAttributes(&at, p));
    CHECK_TRUE(at.type == mtiaMemoryTypeHost && at.size == 1000 && at.locked == 42);

    CHECK_OK(mtiaMalloc((void**)&d, 64));
    at = attributes_of(d);
    CHECK_TRUE(at.type == mtiaMemoryTypeDevice && at.locked == 0);
    CHECK_OK(mtiaFree(d));
    CHECK_OK(mtiaFreeHost(p));
    at = attributes_of(p);
    CHECK_TRUE(at.type ==
               mtiaMemoryTypeUnregistered); /* freed (cached) memory is no longer pinned memory */
}

struct placement {
    int device;
    char* block;
    mtiaError_t status;
};

static void allocate_for_placement(void* arg) {
    struct placement* pl = (struct placement*)arg;
    pl->status = mtiaMallocHost((void**)&pl->block, 5 * PAGE_GUESS);
}

/* The device's node when this host has it (checked page by page), silently nothing otherwise: with
 * the 2-node hwloc fixture the second device reports node 1, which a 1-node host lacks. */
static void test_placement(void) {
    int count = 0, dev;
    CHECK_OK(mtiaGetDeviceCount(&count));
    for (dev = 0; dev < count; ++dev) {
        mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
        struct placement pl;
        long printed;
        size_t off;
        CHECK_OK(mtiaSetDevice(dev));
        CHECK_OK(mtiaGetDeviceProperties(&prop, dev));
        pl.device = dev;
        pl.block = NULL;
        pl.status = mtiaErrorUnknown;
        printed = stderr_bytes_of(allocate_for_placement, &pl);
        CHECK_OK(pl.status);
        CHECK_TRUE(printed == 0); /* libnuma must never print, whatever node the device reports */
        if (pl.status != mtiaSuccess) continue;
        memset(pl.block, 1, 5 * PAGE_GUESS);
        if (host_has_node(prop.numaNode)) {
            for (off = 0; off < 5 * PAGE_GUESS; off += PAGE_GUESS)
                CHECK_TRUE(node_of_page(pl.block + off) == prop.numaNode);
        }
        CHECK_OK(mtiaFreeHost(pl.block));
    }
    CHECK_OK(mtiaSetDevice(0));
}

enum { N = 64 * 1024 };

/* Copies from and to pinned memory only queue; the data is there once the stream is synchronized.
 */
static void test_async_copies(void) {
    mtiaStream_t s = NULL;
    unsigned char *src = NULL, *dst = NULL, *again = NULL, *pageable;
    void* dev = NULL;
    mtiaFunction_t sleep_fn = NULL;
    uint64_t us = 300000;
    void* args[1];
    int i, ok;
    CHECK_OK(mtiaStreamCreate(&s));
    CHECK_OK(mtiaMalloc(&dev, N));
    CHECK_OK(mtiaMallocHost((void**)&src, N));
    CHECK_OK(mtiaMallocHost((void**)&dst, N));
    for (i = 0; i < N; ++i) src[i] = (unsigned char)(i * 13);
    memset(dst, 0, N);

    /* Behind a gate: both copies return while the stream cannot run them. */
    gate_close(s);
    CHECK_OK(mtiaMemcpyAsync(dev, src, N, mtiaMemcpyHostToDevice, s));
    CHECK_OK(mtiaMemcpyAsync(dst, dev, N, mtiaMemcpyDeviceToHost, s));
    CHECK_STATUS(mtiaErrorNotReady, mtiaStreamQuery(s));
    CHECK_TRUE(dst[1] == 0 && dst[N - 1] == 0); /* queued, not run */
    gate_open();
    CHECK_OK(mtiaStreamSynchronize(s));
    ok = 1;
    for (i = 0; i < N; ++i) ok &= dst[i] == (unsigned char)(i * 13);
    CHECK_TRUE(ok);

    /* Behind a sleep_us kernel: the copy returns before the kernel finished. */
    memset(dst, 0, N);
    CHECK_OK(mtiaGetBuiltinFunction(&sleep_fn, "sleep_us"));
    args[0] = &us;
    {
        mtiaDim3 one = {1, 1, 1};
        CHECK_OK(mtiaLaunchKernel(sleep_fn, one, one, args, 0, s));
    }
    CHECK_OK(mtiaMemcpyAsync(dst, dev, N, mtiaMemcpyDefault, s));
    CHECK_STATUS(mtiaErrorNotReady, mtiaStreamQuery(s));
    CHECK_OK(mtiaStreamSynchronize(s));
    CHECK_TRUE(dst[7] == (unsigned char)(7 * 13) && dst[N - 1] == (unsigned char)((N - 1) * 13));

    /* Pageable memory, by contrast, is copied before the call returns. */
    pageable = (unsigned char*)malloc(N);
    CHECK_TRUE(pageable != NULL);
    if (pageable != NULL) {
        mtiaDim3 one = {1, 1, 1};
        us = 20000;
        CHECK_OK(mtiaLaunchKernel(sleep_fn, one, one, args, 0, s));
        CHECK_OK(mtiaMemcpyAsync(pageable, dev, N, mtiaMemcpyDeviceToHost, s));
        CHECK_OK(mtiaStreamQuery(s));
        CHECK_TRUE(pageable[N - 1] == (unsigned char)((N - 1) * 13));
        free(pageable);
    }

    /* A range running past the pinned allocation is not pinned: copied before returning. */
    {
        unsigned char* small = NULL;
        mtiaDim3 one = {1, 1, 1};
        CHECK_OK(mtiaMallocHost((void**)&small, 100));
        CHECK_OK(mtiaLaunchKernel(sleep_fn, one, one, args, 0, s));
        CHECK_OK(mtiaMemcpyAsync(small, dev, 200, mtiaMemcpyDeviceToHost, s));
        CHECK_OK(mtiaStreamQuery(s));
        CHECK_OK(mtiaFreeHost(small));
    }

    /* The copy's stream is recorded for the pinned block: freed at once, it is not handed out again
     * while the copy is still queued. */
    gate_close(s);
    CHECK_OK(mtiaMemcpyAsync(dst, dev, N, mtiaMemcpyDeviceToHost, s));
    CHECK_OK(mtiaFreeHost(dst));
    CHECK_OK(mtiaMallocHost((void**)&again, N));
    CHECK_TRUE(again != dst);
    gate_open();
    CHECK_OK(mtiaStreamSynchronize(s));
    CHECK_OK(mtiaFreeHost(again));
    CHECK_OK(mtiaMallocHost((void**)&again, N)); /* the copy finished: the block comes back */
    CHECK_TRUE(again == dst);
    CHECK_OK(mtiaFreeHost(again));

    CHECK_OK(mtiaFreeHost(src));
    CHECK_OK(mtiaFree(dev));
    CHECK_OK(mtiaStreamDestroy(s));
}

/* ---- Modes
 * --------------------------------------------------------------------------------------- */

/* RLIMIT_MEMLOCK lowered before the first call: blocks are reported unlocked, and locked again once
 * the limit leaves room. */
static void memlock(void) {
    struct rlimit saved, lowered;
    mtiaPointerAttributes at;
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK_TRUE(getrlimit(RLIMIT_MEMLOCK, &saved) == 0);
    lowered = saved;
    lowered.rlim_cur = 0;
    CHECK_TRUE(setrlimit(RLIMIT_MEMLOCK, &lowered) == 0);
    CHECK_OK(mtiaMallocHost(&a, 100));
    at = attributes_of(a);
    CHECK_TRUE(at.type == mtiaMemoryTypeHost && at.locked == 0);
    memset(a, 3, 100); /* unlocked memory works all the same */

    /* Room for one page: the next one-page block is locked, the one after is not. */
    lowered.rlim_cur = (rlim_t)sysconf(_SC_PAGESIZE);
    CHECK_TRUE(setrlimit(RLIMIT_MEMLOCK, &lowered) == 0);
    CHECK_OK(mtiaMallocHost(&b, 100));
    CHECK_TRUE(attributes_of(b).locked == 1);
    CHECK_OK(mtiaMallocHost(&c, 100));
    CHECK_TRUE(attributes_of(c).locked == 0);
    CHECK_OK(mtiaFreeHost(a));
    CHECK_OK(mtiaFreeHost(b));
    CHECK_OK(mtiaFreeHost(c));

    /* Room for two pages: the cached locked page of b leaves room for one more only, until
     * mtiaEmptyCache returns it to the OS. */
    lowered.rlim_cur = (rlim_t)(2 * sysconf(_SC_PAGESIZE));
    CHECK_TRUE(setrlimit(RLIMIT_MEMLOCK, &lowered) == 0);
    CHECK_OK(mtiaMallocHost(&a, (size_t)sysconf(_SC_PAGESIZE) + 1)); /* a two-page block */
    CHECK_TRUE(attributes_of(a).locked == 0);
    CHECK_OK(mtiaFreeHost(a));
    CHECK_OK(mtiaEmptyCache());
    CHECK_OK(mtiaMallocHost(&a, (size_t)sysconf(_SC_PAGESIZE) + 1));
    CHECK_TRUE(attributes_of(a).locked == 1);
    CHECK_OK(mtiaFreeHost(a));
    CHECK_TRUE(setrlimit(RLIMIT_MEMLOCK, &saved) == 0);
}

/* Whether the freed block p (whose streams have finished) is handed out again within 20 s, polling
 * every millisecond: with the background thread on, allocations do not look at pending blocks, the
 * thread caches p in its own time. Misses stay allocated until the end, so that once p is cached it
 * is the only free block of its class. Frees everything it allocated. */
static int comes_back(void* p, size_t size) {
    enum { MAX_MISSES = 4096 };
    static void* misses[MAX_MISSES];
    int n = 0, found = 0, i;
    struct timespec ms = {0, 1000000};
    while (!found && n < MAX_MISSES) {
        void* q = NULL;
        if (mtiaMallocHost(&q, size) != mtiaSuccess) break;
        if (q == p) {
            found = 1;
            CHECK_OK(mtiaFreeHost(q));
        } else {
            misses[n++] = q;
            nanosleep(&ms, NULL);
        }
    }
    for (i = 0; i < n; ++i) CHECK_OK(mtiaFreeHost(misses[i]));
    return found;
}

/* With pinned_use_background_threads the background thread makes a finished block reusable without
 * any allocation asking. */
static void background(void) {
    mtiaStream_t s = NULL;
    char *p = NULL, *q = NULL;
    CHECK_OK(mtiaStreamCreate(&s));
    CHECK_OK(mtiaMallocHost((void**)&p, 3000));
    CHECK_OK(mtiaHostRecordStream(p, s));
    gate_close(s);
    CHECK_OK(mtiaFreeHost(p));
    CHECK_OK(mtiaMallocHost((void**)&q, 3000));
    CHECK_TRUE(q != p);
    CHECK_OK(mtiaFreeHost(q));
    gate_open();
    CHECK_OK(mtiaStreamSynchronize(s));
    CHECK_TRUE(comes_back(p, 3000));
    CHECK_OK(mtiaStreamDestroy(s));
}

/* pinned_use_background_threads switched on and off through mtiaAllocatorSetConfig: a finished
 * block comes back either way; with the thread off, at the very next allocation. */
static void test_background_setting(void) {
    mtiaStream_t s = NULL;
    char *p = NULL, *q = NULL;
    CHECK_OK(mtiaStreamCreate(&s));
    CHECK_OK(mtiaAllocatorSetConfig("pinned_use_background_threads:True"));
    CHECK_OK(mtiaMallocHost((void**)&p, 6000));
    CHECK_OK(mtiaHostRecordStream(p, s));
    gate_close(s);
    CHECK_OK(mtiaFreeHost(p));
    CHECK_OK(mtiaMallocHost((void**)&q, 6000));
    CHECK_TRUE(q != p);
    CHECK_OK(mtiaFreeHost(q));
    gate_open();
    CHECK_OK(mtiaStreamSynchronize(s));
    CHECK_TRUE(comes_back(p, 6000));

    CHECK_OK(mtiaAllocatorSetConfig("pinned_use_background_threads:False"));
    CHECK_OK(mtiaMallocHost((void**)&p, 6000));
    CHECK_OK(mtiaHostRecordStream(p, s));
    gate_close(s);
    CHECK_OK(mtiaFreeHost(p));
    gate_open();
    CHECK_OK(mtiaStreamSynchronize(s));
    CHECK_OK(mtiaMallocHost((void**)&q, 6000));
    CHECK_TRUE(q == p);
    CHECK_OK(mtiaFreeHost(q));
    CHECK_OK(mtiaStreamDestroy(s));
}

static void no_devices(void) {
    void* p = (void*)1;
    int local = 0;
    CHECK_STATUS(mtiaErrorNoDevice, mtiaMallocHost(&p, 100));
    CHECK_TRUE(p == (void*)1);
    CHECK_OK(mtiaFreeHost(NULL));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFreeHost(&local));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaHostRecordStream(&local, NULL));
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "") == 0) {
        test_bad_arguments();
        test_reuse();
        test_recorded_stream_delays_reuse();
        test_pointer_attributes();
        test_placement();
        test_async_copies();
        test_background_setting();
    } else if (strcmp(mode, "memlock") == 0) {
        memlock();
    } else if (strcmp(mode, "background") == 0) {
        background();
    } else if (strcmp(mode, "no_devices") == 0) {
        no_devices();
    } else {
        fprintf(stderr, "capi_host_memory_test: unknown mode '%s'\n", mode);
        return 2;
    }
    return capi_summary();
}
