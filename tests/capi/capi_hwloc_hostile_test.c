/* Hostile hwloc input cannot take the runtime down (issue 16, item 12). Each case runs this program
 * again as "child" in a fresh process, under a memory limit (RLIMIT_AS, left off under a sanitizer,
 * whose shadow memory needs the address space) and a time bound (alarm), with one HWLOC_* variable
 * set:
 *   - HWLOC_XMLFILE: a deeply nested file this test writes (it overflowed the stack in hwloc's
 * parser),
 *   - HWLOC_XMLFILE=/dev/zero (hwloc read it without end),
 *   - HWLOC_SYNTHETIC asking for a billion objects.
 * The child must initialise, allocate, launch a kernel and read its result, use pinned host memory,
 * report no NUMA node for its devices, and get mtiaErrorNotSupported naming the variable from the
 * topology query. The parent checks that every child exited 0 (no signal, no timeout). */
#define _POSIX_C_SOURCE 200809L

#include "capi_check.h"

#include <mtia/mtia_ml.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Defined only when a sanitizer runtime is linked in. */
extern void __asan_init(void) __attribute__((weak));
extern void __tsan_init(void) __attribute__((weak));
extern void __msan_init(void) __attribute__((weak));

static const unsigned kChildSeconds = 60;
static const rlim_t kChildAddressSpace = (rlim_t)4 << 30;

/* The workload of one child; variable is the HWLOC_* name its message must contain. */
static int child(const char* variable) {
    int count = 0;
    int dev;
    float* d = NULL;
    float host[256];
    float value = 2.5f;
    uint64_t n = 256;
    void* args[3];
    void* pinned = NULL;
    mtiaFunction_t fill = NULL;
    mtiaDim3 one = {1, 1, 1};
    mtiamlTopology topo = MTIAML_TOPOLOGY_INIT;
    size_t i;
    int same = 1;

    CHECK_OK(mtiaGetDeviceCount(&count));
    CHECK_TRUE(count >= 1);
    for (dev = 0; dev < count; ++dev) {
        mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
        CHECK_OK(mtiaGetDeviceProperties(&prop, dev));
        CHECK_TRUE(prop.numaNode == -1); /* topology unknown */
    }
    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaMalloc((void**)&d, sizeof host));
    CHECK_OK(mtiaGetBuiltinFunction(&fill, "fill_f32"));
    args[0] = &d;
    args[1] = &value;
    args[2] = &n;
    CHECK_OK(mtiaLaunchKernel(fill, one, one, args, 0, NULL));
    CHECK_OK(mtiaMemcpy(host, d, sizeof host, mtiaMemcpyDeviceToHost));
    for (i = 0; i < 256; ++i) same = same && host[i] == value;
    CHECK_TRUE(same);
    CHECK_OK(mtiaFree(d));
    CHECK_OK(mtiaMallocHost(&pinned, (size_t)1 << 20));
    memset(pinned, 1, (size_t)1 << 20);
    CHECK_OK(mtiaFreeHost(pinned));
    CHECK_OK(mtiaDeviceSynchronize());

    CHECK_OK(mtiamlInit());
    CHECK_STATUS(mtiaErrorNotSupported, mtiamlDeviceGetTopology(0, &topo));
    CHECK_MESSAGE(variable);
    CHECK_OK(mtiamlShutdown());
    return capi_summary();
}

/* Runs "self child VARIABLE" with name=value set; 1 when it exited 0 within its bounds. */
static int runCase(const char* self, const char* name, const char* value) {
    int status = 0;
    const pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        char* argv[4];
        argv[0] = (char*)self;
        argv[1] = (char*)"child";
        argv[2] = (char*)name;
        argv[3] = NULL;
        if (&__asan_init == NULL && &__tsan_init == NULL && &__msan_init == NULL) {
            struct rlimit limit;
            limit.rlim_cur = kChildAddressSpace;
            limit.rlim_max = kChildAddressSpace;
            setrlimit(RLIMIT_AS, &limit);
        }
        setenv(name, value, 1);
        alarm(kChildSeconds);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid) return 0;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "%s=%s: the child died of signal %d%s\n", name, value, WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (its time bound)" : "");
        return 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s=%s: the child exited with %d\n", name, value, WEXITSTATUS(status));
        return 0;
    }
    return 1;
}

/* A topology XML whose objects nest depth levels deep: well-formed, a few megabytes. */
static int writeDeepXml(const char* path, long depth) {
    long i;
    FILE* f = fopen(path, "w");
    if (f == NULL) return 0;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n"
          "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" "
          "nodeset=\"0x1\" "
          "complete_nodeset=\"0x1\">",
          f);
    for (i = 0; i < depth; ++i) fputs("<object type=\"Group\" cpuset=\"0x1\">", f);
    for (i = 0; i < depth; ++i) fputs("</object>", f);
    fputs("</object>\n</topology>\n", f);
    return fclose(f) == 0;
}

int main(int argc, char** argv) {
    char dir[] = "/tmp/capi_hwloc_XXXXXX";
    char deep[64];
    if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);

    CHECK_TRUE(mkdtemp(dir) != NULL);
    snprintf(deep, sizeof deep, "%s/deep.xml", dir);
    /* 100000 levels: hwloc 2.9's parser recurses once per level and overflowed an 8 MiB stack at
     * 50000. */
    CHECK_TRUE(writeDeepXml(deep, 100000));

    CHECK_TRUE(runCase(argv[0], "HWLOC_XMLFILE", deep));
    CHECK_TRUE(runCase(argv[0], "HWLOC_XMLFILE", "/dev/zero"));
    CHECK_TRUE(runCase(argv[0], "HWLOC_SYNTHETIC", "pack:1000 core:1000 pu:1000"));

    unlink(deep);
    rmdir(dir);
    return capi_summary();
}
