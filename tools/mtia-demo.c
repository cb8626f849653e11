/* The README's main job: a workload on the (simulated) device through the
 * public C ABI only. Lists devices, runs built-in kernels on two streams joined
 * by an event, times them with events, checks the numbers, prints the caching
 * allocator's statistics and shows what an out-of-memory report looks like.
 * Exit status 0 when every check passed. */
#include <mtia/mtia.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    mtiaError_t st_ = (call);                                                                        \
    if (st_ != mtiaSuccess) {                                                                        \
      fprintf(stderr, "mtia-demo: %s failed: %s\n  %s\n", #call, mtiaGetErrorName(st_), mtiaGetLastErrorMessage()); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

static int near(float a, float b) { return fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b)); }

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
    printf("  device %d: %s  bus %s  %.1f GiB  %d engines  capability %d.%d  NUMA node %d\n", dev, p.name, p.pciBusId,
           (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), p.multiProcessorCount, p.major, p.minor, p.numaNode);
  }
}

/* y = a*x + y, then sum(y), then C = A*B, all on device dev. Returns failures. */
static int run_on(int dev) {
  enum { N = 1 << 16, M = 64, K = 48, P = 32 };
  float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float));
  float *ha = malloc(M * K * sizeof(float)), *hb = malloc(K * P * sizeof(float)), *hc = malloc(M * P * sizeof(float));
  float *dx, *dy, *dsum, *da, *db, *dc;
  float a = 2.5f, sum = 0.0f;
  double expect_sum = 0.0;
  uint64_t n = N, m = M, k = K, p = P;
  mtiaFunction_t axpy, reduce, matmul;
  mtiaStream_t work, side;
  mtiaEvent_t start, end, side_done;
  float ms = 0.0f;
  int greatest = 0;
  mtiaDim3 grid = {8, 1, 1}, one = {1, 1, 1}, block = {256, 1, 1};
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

  CHECK(mtiaMalloc((void**)&dx, N * sizeof(float)));
  CHECK(mtiaMalloc((void**)&dy, N * sizeof(float)));
  CHECK(mtiaMalloc((void**)&dsum, sizeof(float)));
  CHECK(mtiaMalloc((void**)&da, M * K * sizeof(float)));
  CHECK(mtiaMalloc((void**)&db, K * P * sizeof(float)));
  CHECK(mtiaMalloc((void**)&dc, M * P * sizeof(float)));
  CHECK(mtiaMemGetInfo(&free_after, &total));
  CHECK(mtiaMemcpy(dx, hx, N * sizeof(float), mtiaMemcpyHostToDevice));
  CHECK(mtiaMemcpy(dy, hy, N * sizeof(float), mtiaMemcpyHostToDevice));
  CHECK(mtiaMemcpy(da, ha, M * K * sizeof(float), mtiaMemcpyHostToDevice));
  CHECK(mtiaMemcpy(db, hb, K * P * sizeof(float), mtiaMemcpyHostToDevice));

  CHECK(mtiaGetBuiltinFunction(&axpy, "axpy_f32"));
  CHECK(mtiaGetBuiltinFunction(&reduce, "reduce_sum_f32"));
  CHECK(mtiaGetBuiltinFunction(&matmul, "matmul_f32"));
  /* Two streams: axpy and the sum on one, the matmul on a second, high-priority stream at the same
   * time; an event joins the second back into the first before the results are copied out. */
  CHECK(mtiaDeviceGetStreamPriorityRange(NULL, &greatest));
  CHECK(mtiaStreamCreate(&work));
  CHECK(mtiaStreamCreateWithPriority(&side, mtiaStreamNonBlocking, greatest));
  CHECK(mtiaEventCreate(&start));
  CHECK(mtiaEventCreate(&end));
  CHECK(mtiaEventCreateWithFlags(&side_done, mtiaEventDisableTiming));
  {
    void* axpy_args[] = {&dy, &a, &dx, &n};
    void* reduce_args[] = {&dsum, &dy, &n};
    void* matmul_args[] = {&dc, &da, &db, &m, &p, &k};
    CHECK(mtiaEventRecord(start, work));
    CHECK(mtiaLaunchKernel(axpy, grid, block, axpy_args, 0, work));
    CHECK(mtiaLaunchKernel(reduce, one, block, reduce_args, 0, work));
    CHECK(mtiaLaunchKernel(matmul, grid, block, matmul_args, 0, side));
    CHECK(mtiaEventRecord(side_done, side));
    CHECK(mtiaStreamWaitEvent(work, side_done, mtiaEventWaitDefault));
    CHECK(mtiaEventRecord(end, work));
  }
  CHECK(mtiaMemcpyAsync(hy, dy, N * sizeof(float), mtiaMemcpyDeviceToHost, work));
  CHECK(mtiaMemcpyAsync(&sum, dsum, sizeof(float), mtiaMemcpyDeviceToHost, work));
  CHECK(mtiaMemcpyAsync(hc, dc, M * P * sizeof(float), mtiaMemcpyDeviceToHost, work));
  CHECK(mtiaStreamSynchronize(work));
  CHECK(mtiaEventElapsedTime(&ms, start, end));
  CHECK(mtiaEventDestroy(start));
  CHECK(mtiaEventDestroy(end));
  CHECK(mtiaEventDestroy(side_done));
  CHECK(mtiaStreamDestroy(side));
  CHECK(mtiaStreamDestroy(work));

  for (i = 0; i < N; ++i) {
    float want = a * ((float)(i % 97) * 0.25f) + ((float)(i % 13) - 6.0f);
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

  printf("  device %d: axpy over %d floats, sum = %.1f (expected %.1f) | %dx%d matmul on a second stream: %s; "
         "%.3f ms on the device; %zu bytes in use\n",
         dev, N, (double)sum, expect_sum, M, P, failures ? "WRONG" : "ok", (double)ms, free_before - free_after);
  CHECK(mtiaFree(dx));
  CHECK(mtiaFree(dy));
  CHECK(mtiaFree(dsum));
  CHECK(mtiaFree(da));
  CHECK(mtiaFree(db));
  CHECK(mtiaFree(dc));
  free(hx);
  free(hy);
  free(ha);
  free(hb);
  free(hc);
  return failures;
}

static void print_row(const char* name, const mtiaStat* s, int bytes) {
  if (bytes)
    printf("  %-22s %12.2f %12.2f %14.2f %14.2f\n", name, (double)s->current / 1048576.0, (double)s->peak / 1048576.0,
           (double)s->allocated / 1048576.0, (double)s->freed / 1048576.0);
  else
    printf("  %-22s %12lld %12lld %14lld %14lld\n", name, (long long)s->current, (long long)s->peak,
           (long long)s->allocated, (long long)s->freed);
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
         (long long)st.num_device_alloc, (long long)st.num_device_free, (long long)st.num_alloc_retries,
         (long long)st.num_ooms);
}

static void on_oom(int dev, size_t requested, size_t total, size_t free_mem, void* user) {
  (void)user;
  printf("  observer: device %d could not allocate %zu bytes (total %zu, free %zu)\n", dev, requested, total, free_mem);
}

/* Asks device 0 for more than it has: the observer runs, and the error says why, with the figures a user
 * needs to tell fragmentation from exhaustion. Returns 1 when the allocator did not refuse. */
static int show_out_of_memory(void) {
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
  CHECK(mtiaFree(keep));
  return 0;
}

int main(void) {
  int count = 0, dev, failures = 0;
  CHECK(mtiaGetDeviceCount(&count));
  list_devices(count);
  if (count == 0) {
    printf("no device: nothing to run\n");
    return 0;
  }
  for (dev = 0; dev < count; ++dev) failures += run_on(dev);
  print_memory_stats(0);
  failures += show_out_of_memory();
  if (failures)
    printf("mtia-demo: %d wrong values\n", failures);
  else
    printf("mtia-demo: all results correct\n");
  return failures ? 1 : 0;
}
