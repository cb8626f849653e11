/* The README's main job: a workload on the (simulated) device through the
 * public C ABI only. Lists devices, runs built-in kernels on two streams joined
 * by an event, times them with events, checks the numbers.
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

int main(void) {
  int count = 0, dev, failures = 0;
  CHECK(mtiaGetDeviceCount(&count));
  list_devices(count);
  if (count == 0) {
    printf("no device: nothing to run\n");
    return 0;
  }
  for (dev = 0; dev < count; ++dev) failures += run_on(dev);
  if (failures)
    printf("mtia-demo: %d wrong values\n", failures);
  else
    printf("mtia-demo: all results correct\n");
  return failures ? 1 : 0;
}
