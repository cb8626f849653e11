/* libmtia loaded with dlopen, as Python loads it under PyTorch, and its first calls made from the
 * main thread and from fresh threads: each first call on a thread allocates the library's
 * thread-local block (dynamic TLS; the test runs with glibc.rtld.optional_static_tls=0 so that no
 * static surplus hides that path). With TLS descriptors (-mtls-dialect=gnu2) Debian 12's glibc 2.36
 * clobbered registers in that first access (glibc bug 31372, fixed in 2.40) and
 * mtiaGetDeviceProperties as a process's first call crashed; these calls must return their results.
 */
#include <mtia/mtia.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef mtiaError_t (*GetProps)(mtiaDeviceProp*, int);
typedef mtiaError_t (*GetCount)(int*);
typedef mtiaError_t (*Malloc)(void**, size_t);
typedef mtiaError_t (*Free)(void*);

static GetProps getProps;
static GetCount getCount;
static Malloc alloc;
static Free release;

static int firstCalls(const char* where) {
    mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
    int count = -1;
    void* p = NULL;
    mtiaError_t rc = getProps(&prop, 0);
    if (rc != mtiaSuccess || prop.name[0] == '\0' || prop.totalGlobalMem == 0) {
        fprintf(stderr, "%s: mtiaGetDeviceProperties gave %d, name \"%s\"\n", where, (int)rc,
                prop.name);
        return 1;
    }
    rc = getCount(&count);
    if (rc != mtiaSuccess || count < 1) {
        fprintf(stderr, "%s: mtiaGetDeviceCount gave %d, count %d\n", where, (int)rc, count);
        return 1;
    }
    rc = alloc(&p, 4096);
    if (rc != mtiaSuccess || p == NULL || release(p) != mtiaSuccess) {
        fprintf(stderr, "%s: mtiaMalloc/mtiaFree gave %d\n", where, (int)rc);
        return 1;
    }
    return 0;
}

static void* threadMain(void* arg) {
    static int failed = 1;
    static int passed = 0;
    (void)arg;
    return firstCalls("a new thread") ? &failed : &passed;
}

int main(int argc, char** argv) {
    void* lib;
    int i;
    if (argc != 2) {
        fprintf(stderr, "usage: capi_dlopen_test <path of libmtia.so.1>\n");
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    /* Through a union: ISO C has no conversion from void* to a function pointer. */
    {
        union {
            void* object;
            GetProps f;
        } a;
        union {
            void* object;
            GetCount f;
        } b;
        union {
            void* object;
            Malloc f;
        } c;
        union {
            void* object;
            Free f;
        } d;
        a.object = dlsym(lib, "mtiaGetDeviceProperties");
        b.object = dlsym(lib, "mtiaGetDeviceCount");
        c.object = dlsym(lib, "mtiaMalloc");
        d.object = dlsym(lib, "mtiaFree");
        if (!a.object || !b.object || !c.object || !d.object) {
            fprintf(stderr, "dlsym: %s\n", dlerror());
            return 1;
        }
        getProps = a.f;
        getCount = b.f;
        alloc = c.f;
        release = d.f;
    }
    if (firstCalls("the main thread")) return 1;
    for (i = 0; i < 4; ++i) {
        pthread_t t;
        void* result = NULL;
        if (pthread_create(&t, NULL, threadMain, NULL) != 0 || pthread_join(t, &result) != 0) {
            fprintf(stderr, "pthread_create/join failed\n");
            return 1;
        }
        if (*(int*)result != 0) return 1;
    }
    printf(
        "capi_dlopen: first calls on the main thread and 4 new threads returned their results\n");
    return 0;
}
