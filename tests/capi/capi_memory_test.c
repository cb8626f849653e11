/* Device memory through the C ABI: allocation, copies, fills, pointer attributes, bad input. */
#include "capi_check.h"

#include <stdint.h>
#include <stdlib.h>

static void test_alloc_copy_roundtrip(void) {
    enum { N = 4096 };
    unsigned char host[N], back[N];
    void *a = NULL, *b = NULL, *zero = (void*)1;
    size_t free0, free1, total;
    int i;
    for (i = 0; i < N; ++i) host[i] = (unsigned char)(i * 7);
    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaMemGetInfo(&free0, &total));
    CHECK_OK(mtiaMalloc(&a, N));
    CHECK_OK(mtiaMalloc(&b, N));
    CHECK_TRUE(a != NULL && b != NULL && a != b);
    CHECK_OK(mtiaMemGetInfo(&free1, &total));
    CHECK_TRUE(free1 < free0);
    CHECK_OK(mtiaMalloc(&zero, 0));
    CHECK_TRUE(zero == NULL);

    CHECK_OK(mtiaMemcpy(a, host, N, mtiaMemcpyHostToDevice));
    CHECK_OK(mtiaMemcpy(b, a, N, mtiaMemcpyDeviceToDevice));
    memset(back, 0, N);
    CHECK_OK(mtiaMemcpy(back, b, N, mtiaMemcpyDeviceToHost));
    CHECK_TRUE(memcmp(host, back, N) == 0);
    /* Default infers the direction; interior pointers and partial ranges work. */
    CHECK_OK(mtiaMemset((char*)a + 100, 0x5A, 50));
    CHECK_OK(mtiaMemcpy(back, a, N, mtiaMemcpyDefault));
    CHECK_TRUE(back[99] == host[99] && back[100] == 0x5A && back[149] == 0x5A &&
               back[150] == host[150]);
    CHECK_OK(mtiaMemcpy(back, host, N, mtiaMemcpyHostToHost));
    CHECK_OK(mtiaMemcpy(back, host, 0, (mtiaMemcpyKind)0));

    CHECK_OK(mtiaFree(a));
    CHECK_OK(mtiaFree(b));
    CHECK_OK(mtiaFree(NULL));
    CHECK_OK(mtiaMemGetInfo(&free1, &total));
    CHECK_TRUE(free1 < free0); /* the caching allocator keeps freed memory */
    CHECK_OK(mtiaEmptyCache());
    CHECK_OK(mtiaMemGetInfo(&free1, &total));
    CHECK_TRUE(free1 == free0);
}

static void test_cross_device_copy(void) {
    int v = 1234567, out = 0;
    void *d0 = NULL, *d1 = NULL;
    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaMalloc(&d0, sizeof v));
    CHECK_OK(mtiaSetDevice(1));
    CHECK_OK(mtiaMalloc(&d1, sizeof v));
    CHECK_OK(mtiaMemcpy(d0, &v, sizeof v, mtiaMemcpyHostToDevice));
    CHECK_OK(mtiaMemcpy(d1, d0, sizeof v, mtiaMemcpyDeviceToDevice));
    CHECK_OK(mtiaMemcpy(&out, d1, sizeof v, mtiaMemcpyDeviceToHost));
    CHECK_TRUE(out == v);
    CHECK_OK(mtiaFree(d0)); /* freed from another current device: the pointer says which */
    CHECK_OK(mtiaFree(d1));
    CHECK_OK(mtiaSetDevice(0));
}

static void test_pointer_attributes(void) {
    mtiaPointerAttributes at = MTIA_POINTER_ATTRIBUTES_INIT;
    int host = 0;
    char* d = NULL;
    CHECK_OK(mtiaSetDevice(1));
    CHECK_OK(mtiaMalloc((void**)&d, 1000));
    CHECK_OK(mtiaPointerGetAttributes(&at, d + 999));
    CHECK_TRUE(at.type == mtiaMemoryTypeDevice && at.device == 1 && at.base == d &&
               at.size == 1000);
    CHECK_OK(mtiaPointerGetAttributes(&at, &host));
    CHECK_TRUE(at.type == mtiaMemoryTypeUnregistered && at.device == -1 && at.base == NULL);
    CHECK_OK(mtiaPointerGetAttributes(&at, NULL));
    CHECK_TRUE(at.type == mtiaMemoryTypeUnregistered);
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaPointerGetAttributes(NULL, d));
    at.structSize = 0;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaPointerGetAttributes(&at, d));
    CHECK_OK(mtiaFree(d));
    at.structSize = sizeof at;
    CHECK_OK(mtiaPointerGetAttributes(&at, d));
    CHECK_TRUE(at.type == mtiaMemoryTypeUnregistered); /* freed memory is no longer device memory */
    CHECK_OK(mtiaSetDevice(0));
}

static void test_bad_input(void) {
    char host[64];
    char* d = NULL;
    void* p = NULL;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMalloc(NULL, 16));
    CHECK_MESSAGE("mtiaMalloc: ptr is NULL");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMalloc(&p, SIZE_MAX));
    CHECK_MESSAGE("too large");
    CHECK_STATUS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, (size_t)1 << 50));
    CHECK_MESSAGE("out of memory on device 0");
    CHECK_TRUE(p == NULL);

    CHECK_OK(mtiaMalloc((void**)&d, 64));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFree(d + 1));
    CHECK_MESSAGE("points inside the allocation");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFree(host));
    CHECK_MESSAGE("not device memory");

    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(d, host, 65, mtiaMemcpyHostToDevice));
    CHECK_MESSAGE("dst range of 65 bytes");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(host, d + 60, 8, mtiaMemcpyDeviceToHost));
    CHECK_MESSAGE("src range of 8 bytes");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(host, host + 32, 8, mtiaMemcpyHostToDevice));
    CHECK_MESSAGE("dst");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(d, host, 8, mtiaMemcpyDeviceToHost));
    CHECK_MESSAGE("is device memory of device 0");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(host, d, 8, mtiaMemcpyHostToHost));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(d, host, 8, (mtiaMemcpyKind)9));
    CHECK_MESSAGE("kind 9");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(NULL, host, 8, mtiaMemcpyDefault));
    CHECK_MESSAGE("dst is NULL");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(d, d + 4, 8, mtiaMemcpyDeviceToDevice));
    CHECK_MESSAGE("overlap");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemset(host, 0, 8));
    CHECK_MESSAGE("not device memory");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemset(d, 0, 65));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemset(NULL, 0, 8));
    CHECK_OK(mtiaFree(d));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaFree(d));
    CHECK_MESSAGE("already freed");
}

static void test_many_allocations(void) {
    enum { K = 200 };
    void* ptrs[K];
    int i, ok = 1;
    for (i = 0; i < K; ++i)
        if (mtiaMalloc(&ptrs[i], (size_t)(i + 1) * 1000) != mtiaSuccess) ok = 0;
    CHECK_TRUE(ok);
    for (i = 0; i < K; i += 2)
        if (mtiaFree(ptrs[i]) != mtiaSuccess) ok = 0;
    for (i = 1; i < K; i += 2)
        if (mtiaFree(ptrs[i]) != mtiaSuccess) ok = 0;
    CHECK_TRUE(ok);
}

/* Argument errors are refused at the call (InvalidValue naming the argument), not passed on to
 * fault the device for good: a pointer inside a device's address range that lies in no allocation,
 * and a fill of another device's memory on a stream whose device has no peer access to it. What is
 * legal stays legal: the fill with peer access, copies between devices on any stream. */
static void test_argument_errors_are_not_device_faults(void) {
    enum { BIG = 64 << 20 };
    unsigned char host[64];
    void *d0 = NULL, *d1 = NULL, *gone = NULL;
    mtiaStream_t s1 = NULL;
    int i, all = 1;
    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaMalloc(&d0, sizeof host));
    /* Freed and handed back to the device: inside device 0's range, allocated by nobody, not
     * mapped. */
    CHECK_OK(mtiaMalloc(&gone, BIG));
    CHECK_OK(mtiaFree(gone));
    CHECK_OK(mtiaEmptyCache());
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(host, gone, sizeof host, mtiaMemcpyDefault));
    CHECK_MESSAGE("src");
    CHECK_MESSAGE("not in any live allocation");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(gone, host, sizeof host, mtiaMemcpyDefault));
    CHECK_MESSAGE("dst");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemcpy(host, gone, sizeof host, mtiaMemcpyHostToHost));
    CHECK_STATUS(mtiaErrorInvalidValue,
                 mtiaMemcpy(gone, host, sizeof host, mtiaMemcpyHostToDevice));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemset(gone, 0, sizeof host));
    CHECK_MESSAGE("ptr");
    CHECK_OK(mtiaDeviceSynchronize()); /* no sticky fault */

    CHECK_OK(mtiaSetDevice(1));
    CHECK_OK(mtiaStreamCreate(&s1));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemsetAsync(d0, 0x11, sizeof host, s1));
    CHECK_MESSAGE("ptr");
    CHECK_MESSAGE("peer access");
    CHECK_OK(mtiaDeviceEnablePeerAccess(0, 0));
    CHECK_OK(mtiaMemsetAsync(d0, 0x11, sizeof host, s1));
    CHECK_OK(mtiaStreamSynchronize(s1));
    CHECK_OK(mtiaDeviceDisablePeerAccess(0));
    CHECK_OK(mtiaMalloc(&d1, sizeof host));
    CHECK_OK(mtiaMemcpyAsync(d1, d0, sizeof host, mtiaMemcpyDefault,
                             s1)); /* a peer copy: legal without access */
    CHECK_OK(mtiaStreamSynchronize(s1));
    CHECK_OK(mtiaMemcpy(host, d1, sizeof host, mtiaMemcpyDefault));
    for (i = 0; i < (int)sizeof host; ++i) all = all && host[i] == 0x11;
    CHECK_TRUE(all);
    CHECK_OK(mtiaDeviceSynchronize());
    CHECK_OK(mtiaStreamDestroy(s1));
    CHECK_OK(mtiaFree(d1));
    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaDeviceSynchronize());
    CHECK_OK(mtiaFree(d0));
}

int main(void) {
    test_alloc_copy_roundtrip();
    test_cross_device_copy();
    test_pointer_attributes();
    test_bad_input();
    test_many_allocations();
    test_argument_errors_are_not_device_faults();
    return capi_summary();
}
