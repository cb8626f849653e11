/* An outside program written against the installed runtime only: the
 * <mtia/mtia.h> of the install tree and -lmtia, with names from ABI.md.
 * Lists the devices, runs y = a*x + y and a sum on device 0 with the
 * built-in kernels, and checks the numbers. Exit status 0 when all is well. */
#include <mtia/mtia.h>

#include <stdio.h>

#define N 1000

static int ok(mtiaError_t err, const char* what) {
    if (err == mtiaSuccess) return 1;
    fprintf(stderr, "consumer: %s failed: %s: %s\n", what, mtiaGetErrorName(err),
            mtiaGetLastErrorMessage());
    return 0;
}
#define CHECK(call)                                                                                \
    do {                                                                                           \
        if (!ok((call), #call)) return 1;                                                          \
    } while (0)

int main(void) {
    int count = 0;
    int dev;
    int i;
    float x[N];
    float y[N];
    float a = 2.0f;
    float sum = 0.0f;
    uint64_t n = N;
    void* dx = NULL;
    void* dy = NULL;
    mtiaFunction_t axpy = NULL;
    mtiaFunction_t reduce = NULL;
    mtiaDim3 grid = {4, 1, 1};
    mtiaDim3 block = {1, 1, 1};

    CHECK(mtiaGetDeviceCount(&count));
    if (count < 1) {
        fprintf(stderr, "consumer: no device (mtiaGetDeviceCount gave %d)\n", count);
        return 1;
    }
    for (dev = 0; dev < count; ++dev) {
        mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
        CHECK(mtiaGetDeviceProperties(&prop, dev));
        printf("device %d: %s, %llu MiB, %d engines, capability %d.%d\n", dev, prop.name,
               (unsigned long long)(prop.totalGlobalMem >> 20), (int)prop.multiProcessorCount,
               (int)prop.major, (int)prop.minor);
    }

    for (i = 0; i < N; ++i) {
        x[i] = 0.5f * (float)i;
        y[i] = 1.0f;
    }
    CHECK(mtiaMalloc(&dx, sizeof x));
    CHECK(mtiaMalloc(&dy, sizeof y));
    CHECK(mtiaMemcpy(dx, x, sizeof x, mtiaMemcpyHostToDevice));
    CHECK(mtiaMemcpy(dy, y, sizeof y, mtiaMemcpyHostToDevice));

    CHECK(mtiaGetBuiltinFunction(&axpy, "axpy_f32"));
    CHECK(mtiaGetBuiltinFunction(&reduce, "reduce_sum_f32"));
    {
        /* y = a*x + y, so y[i] = i + 1 exactly; then x[0] = sum(y) = N(N+1)/2. */
        void* axpy_args[4];
        void* reduce_args[3];
        axpy_args[0] = &dy;
        axpy_args[1] = &a;
        axpy_args[2] = &dx;
        axpy_args[3] = &n;
        reduce_args[0] = &dx;
        reduce_args[1] = &dy;
        reduce_args[2] = &n;
        CHECK(mtiaLaunchKernel(axpy, grid, block, axpy_args, 0, NULL));
        CHECK(mtiaLaunchKernel(reduce, grid, block, reduce_args, 0, NULL));
    }
    CHECK(mtiaDeviceSynchronize());
    CHECK(mtiaMemcpy(y, dy, sizeof y, mtiaMemcpyDeviceToHost));
    CHECK(mtiaMemcpy(&sum, dx, sizeof sum, mtiaMemcpyDeviceToHost));
    CHECK(mtiaFree(dx));
    CHECK(mtiaFree(dy));

    for (i = 0; i < N; ++i) {
        if (y[i] != (float)(i + 1)) {
            fprintf(stderr, "consumer: axpy_f32 gave y[%d] = %g, expected %d\n", i, (double)y[i],
                    i + 1);
            return 1;
        }
    }
    /* Every partial sum is an integer below 2^24, so any summation order is exact. */
    if (sum != (float)(N * (N + 1) / 2)) {
        fprintf(stderr, "consumer: reduce_sum_f32 gave %.1f, expected %d\n", (double)sum,
                N * (N + 1) / 2);
        return 1;
    }
    printf("consumer: %d device(s); axpy_f32 and reduce_sum_f32 on device 0 match (sum %.0f)\n",
           count, (double)sum);
    return 0;
}
