/* The README's main job: a workload on the (simulated) device through the
 * public C ABI only. Lists devices, runs built-in kernels on two streams joined
 * by events, times them with events, checks the numbers, captures the same
 * work into a graph and replays it (same results, faster), replays a chain of
 * 500 small launches as one graph against launching them one by one, prints the caching
 * allocator's statistics and shows what an out-of-memory report looks like.
 * Memory history is recorded throughout (with C++ stacks); with MTIA_DEMO_SNAPSHOT=PATH set, a
 * memory snapshot (pickle, PyTorch's format) is written there right after the out-of-memory report,
 * for `mtia-mem summary` and `mtia-mem plot` (scripts/demo.sh does this). With --hold (or
 * MTIA_DEMO_HOLD=1) it stays alive after the workload, holding 64 MiB on device 0, and prints its
 * pid: run two in two terminals and watch both in mtia-smi; Enter (or a signal) ends it. Exit
 * status 0 when every check passed. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <mtia/mtia.h>
#include <unistd.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        mtiaError_t st_ = (call);                                                                  \
        if (st_ != mtiaSuccess) {                                                                  \
            fprintf(stderr, "mtia-demo: %s failed: %s\n  %s\n", #call, mtiaGetErrorName(st_),      \
                    mtiaGetLastErrorMessage());                                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The functions that allocate device memory stay functions of their own (not inlined into main), so
 * that the memory snapshot names them as allocation sites. */
#define ALLOCATION_SITE __attribute__((noinline))

static int near(float a, float b) {
    return fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b));
}

static void list_devices(int count) {
    int dev;
    printf("MTIA runtime %d.%d.%d", MTIA_VERSION_MAJOR, MTIA_VERSION_MINOR, MTIA_VERSION_PATCH);
    {
        const char* driver = NULL;
        CHECK(mtiaDriverGetName(&driver));
        printf(", driver '%s', %d device(s)\n", driver, count);
    }
    for (dev = 0; dev < count; ++dev) {
        mtiaDeviceProp p = MTIA_DEVICE_PROP_INIT;
        CHECK(mtiaGetDeviceProperties(&p, dev));
        printf("  device %d: %s  bus %s  %.1f GiB  %d engines  capability %d.%d  NUMA node %d\n",
               dev, p.name, p.pciBusId, (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
               p.multiProcessorCount, p.major, p.minor, p.numaNode);
    }
}

/* The workload: y = y0, y = a*x + y and sum(y) on one stream, C = A*B at the same time on a second,
 * high-priority stream forked from the first and joined back into it by events. enqueue() runs it
 * eagerly and, on a capturing stream, records it into a graph. */
typedef struct Workload {
    mtiaStream_t work, side;
    mtiaEvent_t fork, side_done;
    mtiaFunction_t copy, axpy, reduce, matmul;
    float *dx, *dy, *dy0, *dsum, *da, *db, *dc;
    float a;
    uint64_t n, m, k, p;
} Workload;

static void enqueue(Workload* w) {
    mtiaDim3 grid = {8, 1, 1}, one = {1, 1, 1}, block = {256, 1, 1};
    void* copy_args[] = {&w->dy, &w->dy0, &w->n};
    void* axpy_args[] = {&w->dy, &w->a, &w->dx, &w->n};
    void* reduce_args[] = {&w->dsum, &w->dy, &w->n};
    void* matmul_args[] = {&w->dc, &w->da, &w->db, &w->m, &w->p, &w->k};
    CHECK(mtiaEventRecord(w->fork, w->work));
    CHECK(mtiaStreamWaitEvent(w->side, w->fork, mtiaEventWaitDefault));
    CHECK(mtiaLaunchKernel(w->copy, grid, block, copy_args, 0, w->work));
    CHECK(mtiaLaunchKernel(w->axpy, grid, block, axpy_args, 0, w->work));
    CHECK(mtiaLaunchKernel(w->reduce, one, block, reduce_args, 0, w->work));
    CHECK(mtiaLaunchKernel(w->matmul, grid, block, matmul_args, 0, w->side));
    CHECK(mtiaEventRecord(w->side_done, w->side));
    CHECK(mtiaStreamWaitEvent(w->work, w->side_done, mtiaEventWaitDefault));
}

/* Copies the results (y, sum, C) to the host and waits for them. */
static void read_results(const Workload* w, float* y, float* sum, float* c) {
    CHECK(mtiaMemcpyAsync(y, w->dy, w->n * sizeof(float), mtiaMemcpyDeviceToHost, w->work));
    CHECK(mtiaMemcpyAsync(sum, w->dsum, sizeof(float), mtiaMemcpyDeviceToHost, w->work));
    CHECK(mtiaMemcpyAsync(c, w->dc, w->m * w->p * sizeof(float), mtiaMemcpyDeviceToHost, w->work));
    CHECK(mtiaStreamSynchronize(w->work));
}

/* Wall time of runs runs of the workload, eager (graph NULL) or replayed, each followed by a
 * synchronize. */
static double time_runs(Workload* w, mtiaGraph_t graph, int runs) {
    struct timespec t0, t1;
    int i;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < runs; ++i) {
        if (graph)
            CHECK(mtiaGraphReplay(graph, w->work));
        else
            enqueue(w);
        CHECK(mtiaStreamSynchronize(w->work));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
}

/* Captures the workload into a graph, replays it with the outputs cleared, checks that the replay
 * computes what the eager run did (y, sum, C), then times eager runs against replays (the best of a
 * few rounds each, taken in turns, so that other work on the machine weighs on both alike).
 * Returns failures. */
static int replay_graph(int dev, Workload* w, const float* y, float sum, const float* c) {
    enum { ROUNDS = 5, RUNS = 50 };
    mtiaGraph_t graph;
    mtiaMemPoolId_t pool = {0, 0}; /* a new private pool */
    mtiaGraphInfo info = MTIA_GRAPH_INFO_INIT;
    float* gy = malloc(w->n * sizeof(float));
    float* gc = malloc(w->m * w->p * sizeof(float));
    float gsum = 0.0f;
    double eager_ms = 1e30, replay_ms = 1e30, t;
    int round, same;

    CHECK(mtiaGraphCreate(&graph, 0));
    CHECK(mtiaGraphCaptureBegin(graph, w->work, pool, mtiaStreamCaptureModeGlobal));
    enqueue(w);
    CHECK(mtiaGraphCaptureEnd(graph)); /* and instantiates it */
    CHECK(mtiaGraphGetInfo(graph, &info));

    CHECK(mtiaMemsetAsync(w->dy, 0, w->n * sizeof(float), w->work));
    CHECK(mtiaMemsetAsync(w->dsum, 0, sizeof(float), w->work));
    CHECK(mtiaMemsetAsync(w->dc, 0, w->m * w->p * sizeof(float), w->work));
    CHECK(mtiaGraphReplay(graph, w->work));
    read_results(w, gy, &gsum, gc);
    same = memcmp(gy, y, w->n * sizeof(float)) == 0 && memcmp(&gsum, &sum, sizeof(float)) == 0 &&
           memcmp(gc, c, w->m * w->p * sizeof(float)) == 0;

    for (round = 0; round < ROUNDS; ++round) {
        if ((t = time_runs(w, NULL, RUNS)) < eager_ms) eager_ms = t;
        if ((t = time_runs(w, graph, RUNS)) < replay_ms) replay_ms = t;
    }
    CHECK(mtiaGraphDestroy(graph));

    printf("  device %d: the same work as a graph of %llu nodes: replay results %s; %d runs, each "
           "+ synchronize "
           "(best of %d): eager %.2f ms, replay %.2f ms, speed-up %.2fx\n",
           dev, (unsigned long long)info.numNodes,
           same ? "equal the eager ones" : "DIFFER FROM THE EAGER ONES", RUNS, ROUNDS, eager_ms,
           replay_ms, eager_ms / replay_ms);
    free(gy);
    free(gc);
    return same ? 0 : 1;
}

/* Where graphs pay most: many small launches. A chain of STEPS axpy kernels over a short vector,
 * run eagerly and as one graph (one device submission per replay); checks that both end with the
 * same vector and prints the speed-up. Returns failures. */
ALLOCATION_SITE static int launch_bound(int dev, Workload* w) {
    enum { STEPS = 500, N = 16, ROUNDS = 5, RUNS = 20 };
    mtiaDim3 one = {1, 1, 1};
    uint64_t n = N;
    float a = 0.5f;
    float *dx = NULL, *dy = NULL, *dy0 = NULL;
    float eager_y[N], graph_y[N], ones[N];
    mtiaGraph_t graph;
    mtiaMemPoolId_t pool = {0, 0};
    double ms[2] = {1e30, 1e30};
    struct timespec t0, t1;
    int i, mode, round, run, same;
    void* copy_args[3];
    void* axpy_args[4];

    for (i = 0; i < N; ++i) ones[i] = 1.0f;
    CHECK(mtiaMalloc((void**)&dx, sizeof ones));
    CHECK(mtiaMalloc((void**)&dy, sizeof ones));
    CHECK(mtiaMalloc((void**)&dy0, sizeof ones));
    CHECK(mtiaMemcpy(dx, ones, sizeof ones, mtiaMemcpyHostToDevice));
    CHECK(mtiaMemcpy(dy0, ones, sizeof ones, mtiaMemcpyHostToDevice));
    copy_args[0] = &dy, copy_args[1] = &dy0, copy_args[2] = &n;
    axpy_args[0] = &dy, axpy_args[1] = &a, axpy_args[2] = &dx, axpy_args[3] = &n;

    CHECK(mtiaGraphCreate(&graph, 0));
    CHECK(mtiaGraphCaptureBegin(graph, w->work, pool, mtiaStreamCaptureModeGlobal));
    CHECK(mtiaLaunchKernel(w->copy, one, one, copy_args, 0, w->work));
    for (i = 0; i < STEPS; ++i) CHECK(mtiaLaunchKernel(w->axpy, one, one, axpy_args, 0, w->work));
    CHECK(mtiaGraphCaptureEnd(graph));

    for (round = 0; round < ROUNDS; ++round) {
        for (mode = 0; mode < 2; ++mode) { /* 0: eager, 1: replay */
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (run = 0; run < RUNS; ++run) {
                if (mode == 1) {
                    CHECK(mtiaGraphReplay(graph, w->work));
                } else {
                    CHECK(mtiaLaunchKernel(w->copy, one, one, copy_args, 0, w->work));
                    for (i = 0; i < STEPS; ++i)
                        CHECK(mtiaLaunchKernel(w->axpy, one, one, axpy_args, 0, w->work));
                }
                CHECK(mtiaStreamSynchronize(w->work));
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            {
                double t = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                           (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
                if (t < ms[mode]) ms[mode] = t;
            }
            CHECK(
                mtiaMemcpy(mode == 0 ? eager_y : graph_y, dy, sizeof ones, mtiaMemcpyDeviceToHost));
        }
    }
    CHECK(mtiaGraphDestroy(graph));
    same = memcmp(eager_y, graph_y, sizeof ones) == 0 && near(graph_y[0], 1.0f + 0.5f * STEPS);
    printf("  device %d: %d small launches as one graph: results %s; %d runs (best of %d): eager "
           "%.2f ms, "
           "replay %.2f ms, speed-up %.1fx\n",
           dev, STEPS + 1, same ? "equal" : "DIFFER", RUNS, ROUNDS, ms[0], ms[1], ms[0] / ms[1]);
    CHECK(mtiaFree(dx));
    CHECK(mtiaFree(dy));
    CHECK(mtiaFree(dy0));
    return same ? 0 : 1;
}

/* The workload on device dev, eagerly (timed with events, checked against the host), then as a
 * graph. Returns failures. */
ALLOCATION_SITE static int run_on(int dev) {
    enum { N = 1 << 16, M = 64, K = 48, P = 32 };
    float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float));
    float *ha = malloc(M * K * sizeof(float)), *hb = malloc(K * P * sizeof(float)),
          *hc = malloc(M * P * sizeof(float));
    Workload w;
    float sum = 0.0f;
    double expect_sum = 0.0;
    mtiaEvent_t start, end;
    float ms = 0.0f;
    int greatest = 0;
    int i, j, l, failures = 0;
    size_t free_before, free_after, total;

    CHECK(mtiaSetDevice(dev));
    CHECK(mtiaMemGetInfo(&free_before, &total));
    for (i = 0; i < N; ++i) {
        hx[i] = (float)(i % 97) * 0.25f;
        hy[i] = (float)(i % 13) - 6.0f;
    }
    for (i = 0; i < M * K; ++i) ha[i] = (float)((i * 7) % 11) - 5.0f;
    for (i = 0; i < K * P; ++i) hb[i] = (float)((i * 5) % 9) * 0.5f;

    w.a = 2.5f;
    w.n = N;
    w.m = M;
    w.k = K;
    w.p = P;
    CHECK(mtiaMalloc((void**)&w.dx, N * sizeof(float)));
    CHECK(mtiaMalloc((void**)&w.dy, N * sizeof(float)));
    CHECK(mtiaMalloc((void**)&w.dy0, N * sizeof(float)));
    CHECK(mtiaMalloc((void**)&w.dsum, sizeof(float)));
    CHECK(mtiaMalloc((void**)&w.da, M * K * sizeof(float)));
    CHECK(mtiaMalloc((void**)&w.db, K * P * sizeof(float)));
    CHECK(mtiaMalloc((void**)&w.dc, M * P * sizeof(float)));
    CHECK(mtiaMemGetInfo(&free_after, &total));
    CHECK(mtiaMemcpy(w.dx, hx, N * sizeof(float), mtiaMemcpyHostToDevice));
    CHECK(mtiaMemcpy(w.dy0, hy, N * sizeof(float), mtiaMemcpyHostToDevice));
    CHECK(mtiaMemcpy(w.da, ha, M * K * sizeof(float), mtiaMemcpyHostToDevice));
    CHECK(mtiaMemcpy(w.db, hb, K * P * sizeof(float), mtiaMemcpyHostToDevice));

    CHECK(mtiaGetBuiltinFunction(&w.copy, "copy_f32"));
    CHECK(mtiaGetBuiltinFunction(&w.axpy, "axpy_f32"));
    CHECK(mtiaGetBuiltinFunction(&w.reduce, "reduce_sum_f32"));
    CHECK(mtiaGetBuiltinFunction(&w.matmul, "matmul_f32"));
    CHECK(mtiaDeviceGetStreamPriorityRange(NULL, &greatest));
    CHECK(mtiaStreamCreate(&w.work));
    CHECK(mtiaStreamCreateWithPriority(&w.side, mtiaStreamNonBlocking, greatest));
    CHECK(mtiaEventCreate(&start));
    CHECK(mtiaEventCreate(&end));
    CHECK(mtiaEventCreateWithFlags(&w.fork, mtiaEventDisableTiming));
    CHECK(mtiaEventCreateWithFlags(&w.side_done, mtiaEventDisableTiming));
    CHECK(mtiaEventRecord(start, w.work));
    enqueue(&w);
    CHECK(mtiaEventRecord(end, w.work));
    read_results(&w, hy, &sum, hc);
    CHECK(mtiaEventElapsedTime(&ms, start, end));
    CHECK(mtiaEventDestroy(start));
    CHECK(mtiaEventDestroy(end));

    for (i = 0; i < N; ++i) {
        float want = w.a * ((float)(i % 97) * 0.25f) + ((float)(i % 13) - 6.0f);
        if (!near(hy[i], want)) ++failures;
        expect_sum += want;
    }
    if (fabs(sum - expect_sum) > 1e-3 * (1.0 + fabs(expect_sum))) ++failures;
    for (i = 0; i < M; ++i)
        for (j = 0; j < P; ++j) {
            float want = 0.0f;
            for (l = 0; l < K; ++l) want += ha[i * K + l] * hb[l * P + j];
            if (!near(hc[i * P + j], want)) ++failures;
        }

    printf("  device %d: axpy over %d floats, sum = %.1f (expected %.1f) | %dx%d matmul on a "
           "second stream: %s; "
           "%.3f ms on the device; %zu bytes in use\n",
           dev, N, (double)sum, expect_sum, M, P, failures ? "WRONG" : "ok", (double)ms,
           free_before - free_after);
    failures += replay_graph(dev, &w, hy, sum, hc);
    failures += launch_bound(dev, &w);

    CHECK(mtiaEventDestroy(w.fork));
    CHECK(mtiaEventDestroy(w.side_done));
    CHECK(mtiaStreamDestroy(w.side));
    CHECK(mtiaStreamDestroy(w.work));
    CHECK(mtiaFree(w.dx));
    CHECK(mtiaFree(w.dy));
    CHECK(mtiaFree(w.dy0));
    CHECK(mtiaFree(w.dsum));
    CHECK(mtiaFree(w.da));
    CHECK(mtiaFree(w.db));
    CHECK(mtiaFree(w.dc));
    free(hx);
    free(hy);
    free(ha);
    free(hb);
    free(hc);
    return failures;
}

static void print_row(const char* name, const mtiaStat* s, int bytes) {
    if (bytes)
        printf("  %-22s %12.2f %12.2f %14.2f %14.2f\n", name, (double)s->current / 1048576.0,
               (double)s->peak / 1048576.0, (double)s->allocated / 1048576.0,
               (double)s->freed / 1048576.0);
    else
        printf("  %-22s %12lld %12lld %14lld %14lld\n", name, (long long)s->current,
               (long long)s->peak, (long long)s->allocated, (long long)s->freed);
}

/* The caching allocator's statistics of dev, as torch.cuda.memory_summary() groups them. */
static void print_memory_stats(int dev) {
    mtiaMemoryStats st = MTIA_MEMORY_STATS_INIT;
    CHECK(mtiaMemoryGetStats(dev, &st));
    printf("memory of device %d (caching allocator; sizes in MiB)\n", dev);
    printf("  %-22s %12s %12s %14s %14s\n", "", "current", "peak", "total alloc", "total freed");
    print_row("allocated (MiB)", &st.allocated_bytes[mtiaStatAll], 1);
    print_row("reserved (MiB)", &st.reserved_bytes[mtiaStatAll], 1);
    print_row("active (MiB)", &st.active_bytes[mtiaStatAll], 1);
    print_row("inactive split (MiB)", &st.inactive_split_bytes[mtiaStatAll], 1);
    print_row("requested (MiB)", &st.requested_bytes[mtiaStatAll], 1);
    print_row("allocations", &st.allocation[mtiaStatAll], 0);
    print_row("  small pool", &st.allocation[mtiaStatSmallPool], 0);
    print_row("  large pool", &st.allocation[mtiaStatLargePool], 0);
    print_row("segments", &st.segment[mtiaStatAll], 0);
    printf("  device allocations %lld, device frees %lld, retries %lld, out-of-memory %lld\n",
           (long long)st.num_device_alloc, (long long)st.num_device_free,
           (long long)st.num_alloc_retries, (long long)st.num_ooms);
}

static void on_oom(int dev, size_t requested, size_t total, size_t free_mem, void* user) {
    (void)user;
    printf("  observer: device %d could not allocate %zu bytes (total %zu, free %zu)\n", dev,
           requested, total, free_mem);
}

/* Asks device 0 for more than it has: the observer runs, and the error says why, with the figures a
 * user needs to tell fragmentation from exhaustion. Returns 1 when the allocator did not refuse. */
/* snapshot: where to write the memory snapshot while the request that ran out is fresh (NULL: not).
 */
ALLOCATION_SITE static int show_out_of_memory(const char* snapshot) {
    size_t free_mem = 0, total = 0;
    void* keep = NULL;
    void* p = NULL;
    mtiaError_t st;
    CHECK(mtiaSetDevice(0));
    CHECK(mtiaAttachOutOfMemoryObserver(on_oom, NULL));
    CHECK(mtiaMemGetInfo(&free_mem, &total));
    CHECK(mtiaMalloc(&keep, 3u << 20));
    printf("out-of-memory report (asking device 0 for %zu bytes more than it has):\n", total);
    st = mtiaMalloc(&p, 2 * total);
    if (st != mtiaErrorMemoryAllocation) {
        printf("mtia-demo: expected mtiaErrorMemoryAllocation, got %s\n", mtiaGetErrorName(st));
        return 1;
    }
    printf("  %s: %s\n", mtiaGetErrorName(st), mtiaGetLastErrorMessage());
    if (snapshot != NULL && snapshot[0] != '\0') {
        /* What a memory debugging session looks at: the blocks still live, the trace up to the
         * failure. */
        CHECK(mtiaMemoryDumpSnapshot(snapshot, mtiaSnapshotPickle, mtiaSnapshotIncludeTraces));
        printf("memory snapshot (history with C++ stacks, taken after the out-of-memory error) "
               "written to %s\n",
               snapshot);
    }
    CHECK(mtiaFree(keep));
    return 0;
}

/* --hold: keeps 64 MiB of device 0 and waits for Enter; with stdin at its end (</dev/null, a
 * background job) it waits for a signal instead. */
ALLOCATION_SITE static void hold(void) {
    void* held = NULL;
    char line[64];
    CHECK(mtiaSetDevice(0));
    CHECK(mtiaMalloc(&held, 64u << 20));
    printf("mtia-demo: holding 64 MiB of device 0 as pid %ld; see it with mtia-smi; press Enter "
           "(or kill it) to "
           "exit\n",
           (long)getpid());
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL)
        for (;;) pause();
    CHECK(mtiaFree(held));
}

int main(int argc, char** argv) {
    int count = 0, dev, failures = 0;
    const char* snapshot = getenv("MTIA_DEMO_SNAPSHOT");
    const char* holdEnv = getenv("MTIA_DEMO_HOLD");
    int holding = holdEnv != NULL && strcmp(holdEnv, "1") == 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--hold") == 0) {
            holding = 1;
        } else {
            fprintf(stderr, "usage: mtia-demo [--hold]\n");
            return 2;
        }
    }
    /* Record what the allocator does, with who allocated what, as a memory debugging session would.
     */
    CHECK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    CHECK(mtiaGetDeviceCount(&count));
    list_devices(count);
    if (count == 0) {
        printf("no device: nothing to run\n");
        return 0;
    }
    for (dev = 0; dev < count; ++dev) failures += run_on(dev);
    print_memory_stats(0);
    failures += show_out_of_memory(snapshot);
    if (failures)
        printf("mtia-demo: %d wrong values\n", failures);
    else
        printf("mtia-demo: all results correct\n");
    if (holding) hold();
    return failures ? 1 : 0;
}
