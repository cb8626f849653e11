/* Built-in and module kernels through the C ABI. MTIA_TEST_KERNELS names the test module. */
#include "capi_check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static float* to_device(const float* h, uint64_t n) {
    float* d = NULL;
    if (mtiaMalloc((void**)&d, n * sizeof(float)) != mtiaSuccess) return NULL;
    if (n) mtiaMemcpy(d, h, n * sizeof(float), mtiaMemcpyHostToDevice);
    return d;
}

static int close_to(float a, float b) {
    return fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b));
}

static void launch(const char* name, void** args, uint32_t grid) {
    mtiaFunction_t fn = NULL;
    mtiaDim3 g = {grid, 1, 1}, b = {128, 1, 1};
    CHECK_OK(mtiaGetBuiltinFunction(&fn, name));
    CHECK_OK(mtiaLaunchKernel(fn, g, b, args, 0, NULL));
}

static void test_elementwise_builtins(uint32_t grid) {
    enum { N = 1000 };
    float a[N], b[N], out[N], s = 0.5f, v = 3.25f;
    uint64_t n = N;
    float *da, *db, *dout;
    int i, ok;
    for (i = 0; i < N; ++i) {
        a[i] = (float)(i % 17) - 8.0f;
        b[i] = (float)(i % 5) * 0.5f;
    }
    da = to_device(a, N);
    db = to_device(b, N);
    dout = to_device(a, N);
    {
        void* args[] = {&dout, &da, &db, &n};
        launch("add_f32", args, grid);
        CHECK_OK(mtiaMemcpy(out, dout, sizeof out, mtiaMemcpyDeviceToHost));
        for (ok = 1, i = 0; i < N; ++i) ok &= close_to(out[i], a[i] + b[i]);
        CHECK_TRUE(ok);
        launch("mul_f32", args, grid);
        CHECK_OK(mtiaMemcpy(out, dout, sizeof out, mtiaMemcpyDeviceToHost));
        for (ok = 1, i = 0; i < N; ++i) ok &= close_to(out[i], a[i] * b[i]);
        CHECK_TRUE(ok);
    }
    {
        void* args[] = {&dout, &da, &s, &n};
        launch("scale_f32", args, grid);
        CHECK_OK(mtiaMemcpy(out, dout, sizeof out, mtiaMemcpyDeviceToHost));
        for (ok = 1, i = 0; i < N; ++i) ok &= close_to(out[i], a[i] * s);
        CHECK_TRUE(ok);
    }
    {
        void* args[] = {&dout, &da, &n};
        launch("relu_f32", args, grid);
        CHECK_OK(mtiaMemcpy(out, dout, sizeof out, mtiaMemcpyDeviceToHost));
        for (ok = 1, i = 0; i < N; ++i) ok &= close_to(out[i], a[i] > 0 ? a[i] : 0.0f);
        CHECK_TRUE(ok);
        launch("copy_f32", args, grid);
        CHECK_OK(mtiaMemcpy(out, dout, sizeof out, mtiaMemcpyDeviceToHost));
        CHECK_TRUE(memcmp(out, a, sizeof a) == 0);
    }
    {
        void* args[] = {&dout, &v, &n};
        launch("fill_f32", args, grid);
        CHECK_OK(mtiaMemcpy(out, dout, sizeof out, mtiaMemcpyDeviceToHost));
        for (ok = 1, i = 0; i < N; ++i) ok &= out[i] == v;
        CHECK_TRUE(ok);
    }
    {
        void* args[] = {&dout, &s, &db, &n}; /* out = s*b + out (out holds v) */
        launch("axpy_f32", args, grid);
        CHECK_OK(mtiaMemcpy(out, dout, sizeof out, mtiaMemcpyDeviceToHost));
        for (ok = 1, i = 0; i < N; ++i) ok &= close_to(out[i], s * b[i] + v);
        CHECK_TRUE(ok);
    }
    {
        float sum = 0, want = 0;
        void* args[] = {&dout, &da, &n};
        for (i = 0; i < N; ++i) want += a[i];
        launch("reduce_sum_f32", args, grid);
        CHECK_OK(mtiaMemcpy(&sum, dout, sizeof sum, mtiaMemcpyDeviceToHost));
        CHECK_TRUE(close_to(sum, want));
    }
    CHECK_OK(mtiaFree(da));
    CHECK_OK(mtiaFree(db));
    CHECK_OK(mtiaFree(dout));
}

static void test_matmul(void) {
    enum { M = 7, K = 5, P = 9 };
    float a[M * K], b[K * P], c[M * P];
    uint64_t m = M, n = P, k = K;
    float *da, *db, *dc;
    int i, j, l, ok = 1;
    for (i = 0; i < M * K; ++i) a[i] = (float)(i % 7) - 3.0f;
    for (i = 0; i < K * P; ++i) b[i] = (float)(i % 4) * 0.25f;
    da = to_device(a, M * K);
    db = to_device(b, K * P);
    dc = to_device(c, M * P);
    {
        void* args[] = {&dc, &da, &db, &m, &n, &k};
        launch("matmul_f32", args, 3);
    }
    CHECK_OK(mtiaMemcpy(c, dc, sizeof c, mtiaMemcpyDeviceToHost));
    for (i = 0; i < M; ++i)
        for (j = 0; j < P; ++j) {
            float want = 0;
            for (l = 0; l < K; ++l) want += a[i * K + l] * b[l * P + j];
            ok &= close_to(c[i * P + j], want);
        }
    CHECK_TRUE(ok);
    CHECK_OK(mtiaFree(da));
    CHECK_OK(mtiaFree(db));
    CHECK_OK(mtiaFree(dc));
}

static void test_launch_validation(void) {
    mtiaFunction_t fill = NULL, again = NULL;
    float* d = NULL;
    float v = 1;
    uint64_t n = 4;
    void* args[] = {&d, &v, &n};
    mtiaDim3 one = {1, 1, 1}, zero = {0, 1, 1}, big = {2048, 1, 1}, cube = {16, 16, 8};
    int local;
    CHECK_OK(mtiaGetBuiltinFunction(&fill, "fill_f32"));
    CHECK_OK(mtiaGetBuiltinFunction(&again, "fill_f32"));
    CHECK_TRUE(fill == again);
    CHECK_OK(mtiaMalloc((void**)&d, 16));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaLaunchKernel(fill, zero, one, args, 0, NULL));
    CHECK_MESSAGE("grid.x is 0");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaLaunchKernel(fill, one, zero, args, 0, NULL));
    CHECK_MESSAGE("block.x is 0");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaLaunchKernel(fill, one, big, args, 0, NULL));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaLaunchKernel(fill, one, cube, args, 0, NULL));
    CHECK_MESSAGE("2048 threads");
    CHECK_STATUS(mtiaErrorInvalidValue,
                 mtiaLaunchKernel(fill, one, one, args, (size_t)1 << 30, NULL));
    CHECK_MESSAGE("sharedMem");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaLaunchKernel(fill, one, one, NULL, 0, NULL));
    CHECK_MESSAGE("takes 3 arguments");
    CHECK_STATUS(mtiaErrorInvalidHandle, mtiaLaunchKernel(NULL, one, one, args, 0, NULL));
    CHECK_STATUS(mtiaErrorInvalidHandle,
                 mtiaLaunchKernel((mtiaFunction_t)&local, one, one, args, 0, NULL));
    CHECK_STATUS(mtiaErrorInvalidHandle,
                 mtiaLaunchKernel(fill, one, one, args, 0, (mtiaStream_t)&local));
    CHECK_MESSAGE("stream");
    CHECK_STATUS(mtiaErrorNotFound, mtiaGetBuiltinFunction(&fill, "no_such_kernel"));
    CHECK_MESSAGE("'no_such_kernel'");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaGetBuiltinFunction(NULL, "fill_f32"));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaGetBuiltinFunction(&fill, NULL));
    CHECK_OK(mtiaDeviceSynchronize());
    CHECK_OK(mtiaFree(d));
}

static void test_module(const char* path) {
    mtiaModule_t mod = NULL;
    mtiaFunction_t iota = NULL, calls = NULL, nodesc = NULL;
    int *d = NULL, *st = NULL, out[100], status = -1, base = 10, i, ok = 1;
    uint64_t n = 100;
    mtiaDim3 grid = {7, 1, 1}, one = {1, 1, 1};
    mtiaError_t (*count_fn)(int*) = mtiaGetDeviceCount;
    CHECK_STATUS(mtiaErrorNotFound, mtiaModuleLoad(&mod, "/nonexistent/module.so"));
    CHECK_MESSAGE("/nonexistent/module.so");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaModuleLoad(NULL, path));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaModuleLoad(&mod, NULL));
    CHECK_STATUS(mtiaErrorInvalidValue,
                 mtiaModuleLoad(&mod, "")); /* dlopen("") would give the main program */
    CHECK_MESSAGE("path is empty");
    CHECK_OK(mtiaModuleLoad(&mod, path));
    CHECK_OK(mtiaModuleGetFunction(&iota, mod, "iota_i32"));
    CHECK_OK(mtiaModuleGetFunction(&nodesc, mod, "iota_i32"));
    CHECK_TRUE(nodesc == iota); /* one handle per kernel, however often it is looked up */
    CHECK_STATUS(mtiaErrorNotFound, mtiaModuleGetFunction(&nodesc, mod, "no_descriptor"));
    CHECK_STATUS(mtiaErrorNotFound, mtiaModuleGetFunction(&nodesc, mod, "missing"));
    CHECK_STATUS(mtiaErrorInvalidHandle,
                 mtiaModuleGetFunction(&nodesc, (mtiaModule_t)&ok, "iota_i32"));
    CHECK_OK(mtiaMalloc((void**)&d, sizeof out));
    {
        void* args[] = {&d, &base, &n};
        CHECK_OK(mtiaLaunchKernel(iota, grid, one, args, 0, NULL));
    }
    CHECK_OK(mtiaMemcpy(out, d, sizeof out, mtiaMemcpyDeviceToHost));
    for (i = 0; i < 100; ++i) ok &= out[i] == i + 10;
    CHECK_TRUE(ok);

    /* Device work may not call back into the runtime. */
    CHECK_OK(mtiaModuleGetFunction(&calls, mod, "calls_runtime"));
    CHECK_OK(mtiaMalloc((void**)&st, sizeof(int)));
    {
        void* args[] = {&st, &count_fn};
        CHECK_OK(mtiaLaunchKernel(calls, one, one, args, 0, NULL));
    }
    CHECK_OK(mtiaMemcpy(&status, st, sizeof status, mtiaMemcpyDeviceToHost));
    CHECK_TRUE(status == mtiaErrorNotPermitted);

    /* A graph keeps the modules of its kernels: instantiated after the unload, it still runs them.
     */
    {
        mtiaStream_t s = NULL;
        mtiaGraph_t g = NULL;
        mtiaMemPoolId_t pool = {0, 0};
        int gbase = 50;
        void* args[] = {&d, &gbase, &n};
        CHECK_OK(mtiaStreamCreate(&s));
        CHECK_OK(mtiaGraphCreate(&g, mtiaGraphKeepGraph));
        CHECK_OK(mtiaGraphCaptureBegin(g, s, pool, mtiaStreamCaptureModeGlobal));
        CHECK_OK(mtiaLaunchKernel(iota, grid, one, args, 0, s));
        CHECK_OK(mtiaGraphCaptureEnd(g));
        CHECK_OK(mtiaModuleUnload(mod));
        CHECK_OK(mtiaGraphInstantiate(g));
        CHECK_OK(mtiaGraphReplay(g, s));
        CHECK_OK(mtiaStreamSynchronize(s));
        CHECK_OK(mtiaMemcpy(out, d, sizeof out, mtiaMemcpyDeviceToHost));
        for (i = 0, ok = 1; i < 100; ++i) ok &= out[i] == i + 50;
        CHECK_TRUE(ok);
        CHECK_OK(mtiaGraphDestroy(g));
        CHECK_OK(mtiaStreamDestroy(s));
    }
    CHECK_STATUS(mtiaErrorInvalidHandle, mtiaModuleUnload(mod));
    {
        void* args[] = {&d, &base, &n};
        CHECK_STATUS(mtiaErrorInvalidHandle, mtiaLaunchKernel(iota, grid, one, args, 0, NULL));
        CHECK_MESSAGE("not a live function");
    }
    CHECK_OK(mtiaModuleUnload(NULL));
    CHECK_OK(mtiaFree(d));
    CHECK_OK(mtiaFree(st));
}

int main(void) {
    const char* module = getenv("MTIA_TEST_KERNELS");
    CHECK_OK(mtiaSetDevice(0));
    test_elementwise_builtins(1);
    test_elementwise_builtins(16);
    test_elementwise_builtins(4096); /* more blocks than elements */
    CHECK_OK(mtiaSetDevice(1));
    test_elementwise_builtins(3);
    test_matmul();
    test_launch_validation();
    CHECK_TRUE(module != NULL);
    if (module) test_module(module);
    return capi_summary();
}
