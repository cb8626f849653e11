/* The management library (mtia_ml.h) from C: errors before init, device identity equal to
 * mtiaGetDeviceProperties, this process's memory in the process list, utilisation, cleanup of a
 * machine in use (kept), a snapshot of this process asked through the registry, the topology's self
 * links, reference-counted init; the process list written at the caller's stride (a program built
 * against an older, smaller mtiamlProcessInfo) with a second process, this program run as "hold",
 * holding memory. */
#define _POSIX_C_SOURCE 200809L

#include "capi_check.h"

#include <mtia/mtia_ml.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const size_t kHeldBytes = (size_t)32 << 20;

/* mtiamlProcessInfo as a program built before the peak fields were appended sees it. */
typedef struct OldProcessInfo {
    uint32_t structSize;
    uint32_t pid;
    char name[64];
    uint64_t memoryReserved;
    uint64_t memoryAllocated;
} OldProcessInfo;

/* "hold": allocate on device 0, say so with one byte on stdout, hold until stdin closes. */
static int hold(void) {
    void* ptr = NULL;
    char byte = 'r';
    if (mtiaSetDevice(0) != mtiaSuccess || mtiaMalloc(&ptr, kHeldBytes) != mtiaSuccess) return 1;
    if (write(STDOUT_FILENO, &byte, 1) != 1) return 1;
    while (read(STDIN_FILENO, &byte, 1) > 0) {}
    return mtiaFree(ptr) == mtiaSuccess ? 0 : 1;
}

typedef struct Holder {
    pid_t pid;
    int toChild;
} Holder;

/* Runs this program as "hold" (a fresh process through exec) and waits until it holds its memory.
 */
static Holder startHolder(void) {
    Holder h = {-1, -1};
    int in[2], out[2];
    char byte = 0;
    if (pipe(in) != 0 || pipe(out) != 0) return h;
    h.pid = fork();
    if (h.pid == 0) {
        char* argv[] = {(char*)"capi_ml_test", (char*)"hold", NULL};
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(in[1]);
        close(out[0]);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    h.toChild = in[1];
    if (h.pid < 0 || read(out[0], &byte, 1) != 1 || byte != 'r') h.pid = -1;
    close(out[0]);
    return h;
}

static int stopHolder(Holder h) {
    int status = 0;
    close(h.toChild);
    if (h.pid <= 0 || waitpid(h.pid, &status, 0) != h.pid) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Two processes hold memory of device 0: the list is written at the caller's structSize apart,
 * nothing past the entries it fills; the NULL query gives the count; entries of different sizes are
 * refused. */
static void checkCallerStride(void) {
    OldProcessInfo old[3];
    mtiamlProcessInfo current[2] = {MTIAML_PROCESS_INFO_INIT, MTIAML_PROCESS_INFO_INIT};
    unsigned char untouched[sizeof(OldProcessInfo)];
    uint32_t n = 0;
    uint32_t i;
    int sawSelf = 0, sawHolder = 0;
    void* ptr = NULL;
    Holder h;

    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaMalloc(&ptr, kHeldBytes));
    h = startHolder();
    CHECK_TRUE(h.pid > 0);

    n = 0;
    CHECK_OK(mtiamlDeviceGetProcesses(0, &n, NULL));
    CHECK_TRUE(n == 2);

    memset(old, 0xAB, sizeof old);
    memset(untouched, 0xAB, sizeof untouched);
    for (i = 0; i < 3; ++i) old[i].structSize = sizeof(OldProcessInfo);
    n = 3;
    CHECK_OK(mtiamlDeviceGetProcesses(0, &n, (mtiamlProcessInfo*)(void*)old));
    CHECK_TRUE(n == 2);
    for (i = 0; i < 2; ++i) {
        CHECK_TRUE(old[i].structSize == sizeof(OldProcessInfo));
        CHECK_TRUE(old[i].memoryReserved >= kHeldBytes &&
                   old[i].memoryReserved < ((uint64_t)1 << 40));
        CHECK_TRUE(old[i].memoryAllocated >= kHeldBytes &&
                   old[i].memoryAllocated <= old[i].memoryReserved);
        CHECK_TRUE(memchr(old[i].name, '\0', sizeof old[i].name) != NULL && old[i].name[0] != '\0');
        if (old[i].pid == (uint32_t)getpid()) sawSelf = 1;
        if (h.pid > 0 && old[i].pid == (uint32_t)h.pid) sawHolder = 1;
    }
    CHECK_TRUE(sawSelf && sawHolder);
    /* The third entry, beyond what was filled, keeps every byte but its structSize. */
    CHECK_TRUE(memcmp((const char*)&old[2] + sizeof(uint32_t), untouched + sizeof(uint32_t),
                      sizeof(OldProcessInfo) - sizeof(uint32_t)) == 0);

    /* The current struct still works, and one array holds one struct size. */
    n = 2;
    CHECK_OK(mtiamlDeviceGetProcesses(0, &n, current));
    CHECK_TRUE(n == 2 && current[0].memoryPeakAllocated >= kHeldBytes &&
               current[1].memoryPeakAllocated >= kHeldBytes);
    current[1].structSize = sizeof(OldProcessInfo);
    n = 2;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetProcesses(0, &n, current));
    CHECK_MESSAGE("infos[1].structSize");
    current[0].structSize = 2;
    current[1].structSize = 2;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetProcesses(0, &n, current));
    CHECK_MESSAGE("infos[0].structSize");
    /* A garbage size is refused before entry 1 is looked for that far away (it would lie 4 GiB
     * off). */
    current[0].structSize = 0xFFFFFFFFu;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetProcesses(0, &n, current));
    CHECK_MESSAGE("at most 4096 bytes");

    CHECK_TRUE(stopHolder(h));
    CHECK_OK(mtiaFree(ptr));
}

int main(int argc, char** argv) {
    int32_t count = -1;
    int32_t dev;
    uint32_t n;
    mtiamlDeviceInfo info = MTIAML_DEVICE_INFO_INIT;
    mtiamlProcessInfo procs[4] = {MTIAML_PROCESS_INFO_INIT, MTIAML_PROCESS_INFO_INIT,
                                  MTIAML_PROCESS_INFO_INIT, MTIAML_PROCESS_INFO_INIT};
    mtiamlUtilization util = MTIAML_UTILIZATION_INIT;
    mtiamlTopology topo = MTIAML_TOPOLOGY_INIT;
    mtiamlCleanupInfo cleanup = MTIAML_CLEANUP_INFO_INIT;
    char snapshot[64];
    void* ptr = NULL;
    const size_t bytes = (size_t)64 << 20;

    if (argc > 1 && strcmp(argv[1], "hold") == 0) return hold();
    CHECK_STATUS(mtiaErrorInitializationError, mtiamlDeviceGetCount(&count));
    CHECK_STATUS(mtiaErrorInitializationError, mtiamlShutdown());
    CHECK_OK(mtiamlInit());
    CHECK_OK(mtiamlInit()); /* reference counted */
    CHECK_OK(mtiamlDeviceGetCount(&count));
    CHECK_TRUE(count == 2);
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetCount(NULL));
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetInfo(count, &info));
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetInfo(-1, &info));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetInfo(0, NULL));

    /* Nothing of this machine is in use yet: no processes, nothing used. */
    n = 4;
    CHECK_OK(mtiamlDeviceGetProcesses(0, &n, procs));
    CHECK_TRUE(n == 0);
    CHECK_OK(mtiamlDeviceGetInfo(0, &info));
    CHECK_TRUE(info.memoryUsed == 0);

    for (dev = 0; dev < count; ++dev) {
        mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
        mtiamlDeviceInfo mine = MTIAML_DEVICE_INFO_INIT;
        CHECK_OK(mtiamlDeviceGetInfo(dev, &mine));
        CHECK_OK(mtiaGetDeviceProperties(&prop, dev));
        CHECK_TRUE(mine.index == dev);
        CHECK_TRUE(strcmp(mine.name, prop.name) == 0);
        CHECK_TRUE(memcmp(mine.uuid, prop.uuid, sizeof mine.uuid) == 0);
        CHECK_TRUE(strcmp(mine.pciBusId, prop.pciBusId) == 0);
        CHECK_TRUE(mine.numaNode == prop.numaNode);
        CHECK_TRUE(mine.memoryTotal == prop.totalGlobalMem);
    }

    /* This process's memory, as another process would see it. */
    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaMalloc(&ptr, bytes));
    n = 4;
    CHECK_OK(mtiamlDeviceGetProcesses(0, &n, procs));
    CHECK_TRUE(n == 1);
    CHECK_TRUE(procs[0].pid == (uint32_t)getpid());
    CHECK_TRUE(procs[0].memoryReserved >= bytes);
    CHECK_TRUE(procs[0].memoryAllocated >= bytes);
    CHECK_TRUE(procs[0].memoryPeakAllocated >= bytes);
    CHECK_TRUE(procs[0].name[0] != '\0');
    CHECK_OK(mtiamlDeviceGetInfo(0, &info));
    CHECK_TRUE(info.memoryUsed >= bytes);
    CHECK_TRUE(info.processCount == 1);
    n = 0; /* the query for the count */
    CHECK_OK(mtiamlDeviceGetProcesses(0, &n, NULL));
    CHECK_TRUE(n == 1);
    n = 0; /* an array too small: the count needed, and an error */
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetProcesses(0, &n, procs));
    CHECK_TRUE(n == 1);
    n = 4;
    CHECK_OK(mtiamlDeviceGetProcesses(1, &n, procs));
    CHECK_TRUE(n == 0);
    CHECK_OK(mtiaFree(ptr));
    checkCallerStride();

    /* Utilisation: this process's copies ran on device 0's engines; nothing ran on device 1. */
    CHECK_OK(mtiamlDeviceGetUtilization(0, &util));
    CHECK_TRUE(util.percent <= 100);
    CHECK_OK(mtiamlDeviceGetUtilization(1, &util));
    CHECK_TRUE(util.percent == 0 && util.busyNs == 0);
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetUtilization(7, &util));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetUtilization(0, NULL));
    CHECK_MESSAGE("utilization");
    util.structSize = 0;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetUtilization(0, &util));
    util.structSize = sizeof util;

    /* Cleanup of this machine: this process is alive, so the registry stays. */
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, NULL));
    CHECK_MESSAGE("info");
    cleanup.structSize = 2;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, &cleanup));
    cleanup.structSize = sizeof cleanup;
    CHECK_STATUS(mtiaErrorNotFound, mtiamlMachineCleanup(4000000, &cleanup));
    CHECK_OK(mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, &cleanup));
    CHECK_TRUE(cleanup.removed == 0 && cleanup.liveProcesses >= 1 && cleanup.registry[0] != '\0');

    /* A snapshot of this very process, asked through its registry slot: its request thread serves
     * it. */
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlProcessDumpSnapshot((uint32_t)getpid(), NULL, 1000));
    CHECK_MESSAGE("path");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlProcessDumpSnapshot((uint32_t)getpid(), "", 1000));
    CHECK_MESSAGE("path");
    CHECK_STATUS(mtiaErrorInvalidValue, mtiamlProcessDumpSnapshot(0, "x.json", 1000));
    CHECK_MESSAGE("pid");
    snprintf(snapshot, sizeof snapshot, "/tmp/capi_ml_%ld.json", (long)getpid());
    CHECK_OK(mtiamlProcessDumpSnapshot((uint32_t)getpid(), snapshot, 10000));
    CHECK_TRUE(access(snapshot, R_OK) == 0);
    unlink(snapshot);

    CHECK_OK(mtiamlDeviceGetTopology(1, &topo));
    CHECK_TRUE(topo.deviceCount == count);
    CHECK_TRUE(topo.link[1] == mtiamlLinkSelf);
    CHECK_TRUE(topo.link[0] != mtiamlLinkSelf);
    CHECK_TRUE(topo.cpuAffinity[0] != '\0');
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetTopology(2, &topo));

    CHECK_OK(mtiamlShutdown());
    CHECK_OK(mtiamlDeviceGetCount(&count)); /* one reference left */
    CHECK_OK(mtiamlShutdown());
    CHECK_STATUS(mtiaErrorInitializationError, mtiamlDeviceGetCount(&count));
    return capi_summary();
}
