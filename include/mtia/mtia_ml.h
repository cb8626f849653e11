/* MTIA management library: what monitoring tools (mtia-smi) read, like NVML.
 *
 * It reads the cross-process device registry of the machine that the
 * caller's environment configures (MTIA_DRIVER and the driver's settings,
 * MTIA_SIM_* for the simulated device), and the host topology (hwloc;
 * HWLOC_XMLFILE applies). The machine and its devices come from the driver,
 * opened but never initialised, through its driver ABI 1.6 entries
 * (mtia_driver.h); with an older driver every function about the machine's
 * devices returns mtiaErrorNotSupported naming the entry it lacks, while
 * mtiamlInit and the machine list still work. It never starts devices or the
 * runtime: no address space is reserved, no engine thread runs, no process
 * slot is taken, and the registry is only ever opened read-only, so a monitor does not
 * show up in its own process list. Device indices are the machine's own,
 * MTIA_VISIBLE_DEVICES does not apply.
 *
 * Errors come back as mtiaError_t with a sentence in mtiaGetLastErrorMessage().
 * Common to every function below mtiamlInit: mtiaErrorInitializationError
 * before mtiamlInit (or after the last mtiamlShutdown), and when the registry
 * exists but cannot be read (half-created, another layout); mtiaErrorNotPermitted
 * when the registry belongs to another user or has a mode other than 0600.
 * A machine that no process has used yet has no registry: that is not an
 * error, its devices simply show no use.
 *
 * Thread safety: every function may be called from any thread; mtiamlInit and
 * mtiamlShutdown are reference counted and must pair up. Blocking: no function
 * waits for a lock held by another process, except mtiamlMachineCleanup and
 * mtiamlProcessDumpSnapshot, whose comments say how long they may block;
 * mtiamlInit and the first mtiamlDeviceGetTopology of an initialisation load
 * the host topology (milliseconds). Graph capture: no function here touches a
 * stream, so every one is legal while a capture is in progress and neither
 * joins nor invalidates it.
 *
 * C99-clean; includes only <stddef.h> and <stdint.h> (through mtia_types.h). */
#ifndef MTIA_ML_H
#define MTIA_ML_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MTIAML_MAX_DEVICES 64

typedef struct mtiamlDeviceInfo {
    uint32_t structSize; /* set by the caller (MTIAML_DEVICE_INFO_INIT) */
    int32_t index;
    char name[256];
    uint8_t uuid[16];     /* equal to mtiaDeviceProp.uuid of the same device */
    char pciBusId[32];    /* "0000:10:00.0", equal to mtiaDeviceProp.pciBusId */
    int32_t numaNode;     /* host NUMA node the device is attached to, -1 if unknown */
    int32_t processCount; /* live processes holding memory of this device */
    uint64_t memoryTotal; /* bytes */
    uint64_t memoryUsed;  /* bytes reserved by every live process of the machine */
                          /* new fields are appended only */
} mtiamlDeviceInfo;
#define MTIAML_DEVICE_INFO_INIT                                                                    \
    { sizeof(mtiamlDeviceInfo), 0, {0}, {0}, {0}, 0, 0, 0, 0 }

typedef struct mtiamlProcessInfo {
    uint32_t structSize; /* set by the caller (MTIAML_PROCESS_INFO_INIT) */
    uint32_t pid;  /* in the caller's pid namespace; 0 when the process is not visible from it */
    char name[64]; /* the process's command name (comm) */
    uint64_t memoryReserved;      /* device memory the process's caching allocator holds */
    uint64_t memoryAllocated;     /* of which handed out to the program */
    uint64_t memoryPeakReserved;  /* highest memoryReserved so far */
    uint64_t memoryPeakAllocated; /* highest memoryAllocated so far */
                                  /* new fields are appended only */
} mtiamlProcessInfo;
#define MTIAML_PROCESS_INFO_INIT                                                                   \
    { sizeof(mtiamlProcessInfo), 0, {0}, 0, 0, 0, 0 }

typedef struct mtiamlUtilization {
    uint32_t structSize; /* set by the caller (MTIAML_UTILIZATION_INIT) */
    uint32_t
        percent; /* busy share of the sampling window, summed over live processes, at most 100 */
    uint64_t busyNs; /* engine time spent on the work of every live process since it registered */
                     /* new fields are appended only */
} mtiamlUtilization;
#define MTIAML_UTILIZATION_INIT                                                                    \
    { sizeof(mtiamlUtilization), 0, 0 }

/* How two devices are linked, NVML's scale: smaller is closer. */
typedef enum mtiamlLinkType {
    mtiamlLinkSelf = 0,  /* "X": the same device */
    mtiamlLinkPix = 10,  /* at most one PCIe switch between them */
    mtiamlLinkPxb = 20,  /* several PCIe bridges, no host bridge */
    mtiamlLinkPhb = 30,  /* through a PCIe host bridge */
    mtiamlLinkNode = 40, /* host bridges within one NUMA node */
    mtiamlLinkSys = 50,  /* across NUMA nodes (the inter-socket link), or unknown */
    mtiamlLinkForceInt32 = 0x7fffffff
} mtiamlLinkType;

typedef struct mtiamlTopology {
    uint32_t structSize;   /* set by the caller (MTIAML_TOPOLOGY_INIT) */
    int32_t numaNode;      /* the one nearest NUMA node, -1 when none or several */
    char cpuAffinity[256]; /* CPUs near the device, list syntax "0-3,8"; "" when unknown */
    char numaAffinity[64]; /* NUMA nodes near the device, "0"; "" when unknown */
    int32_t deviceCount;   /* entries of link that are set */
    mtiamlLinkType link[MTIAML_MAX_DEVICES]; /* link[i]: from this device to device i */
                                             /* new fields are appended only */
} mtiamlTopology;
#define MTIAML_TOPOLOGY_INIT                                                                       \
    {                                                                                              \
        sizeof(mtiamlTopology), 0, {0}, {0}, 0, {                                                  \
            mtiamlLinkSelf                                                                         \
        }                                                                                          \
    }

/* Reads the environment's machine configuration and opens its registry, if there is one, read-only.
 * Reference counted. Does not block on other processes. Errors: mtiaErrorInvalidValue (a bad
 * MTIA_SIM_* variable; the message names it), mtiaErrorNotPermitted, mtiaErrorInitializationError
 * (the registry exists but is not valid, or MTIA_DRIVER names no driver that can be loaded). */
MTIA_API mtiaError_t mtiamlInit(void);
/* Drops one reference; the last one closes the registry. Never blocks. Errors:
 * mtiaErrorInitializationError (not initialised). */
MTIA_API mtiaError_t mtiamlShutdown(void);

/* Devices of the machine. Never blocks. Errors: mtiaErrorInvalidValue (count NULL). */
MTIA_API mtiaError_t mtiamlDeviceGetCount(int32_t* count);
/* Identity and memory of device dev; memoryUsed is read without a lock, so it may mix moments when
 * processes reserve meanwhile. Writes at most info->structSize bytes. Never blocks. Errors:
 * mtiaErrorInvalidValue (info NULL or structSize too small), mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiamlDeviceGetInfo(int32_t dev, mtiamlDeviceInfo* info);
/* The live processes holding memory of device dev, in registry slot order. On entry *count is the
 * capacity of infos; on return it is the number of processes. infos NULL with *count 0 asks for the
 * number only: success, *count set, nothing written. Each entry's structSize is set by the caller,
 * the same in every entry (sizeof the struct the caller was built with): entry i is read and
 * written at i * infos[0].structSize bytes, so a program built against an older, smaller struct
 * gets its own layout. Never blocks. Errors: mtiaErrorInvalidValue (count NULL, infos NULL with a
 * nonzero *count, infos[0].structSize below 4 or another entry's different from it, or more
 * processes than *count: then *count holds the number needed and nothing else is written),
 * mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiamlDeviceGetProcesses(int32_t dev, uint32_t* count,
                                              mtiamlProcessInfo* infos);
/* Busy share of device dev from the processes' busy-time counters (engine time spent running each
 * process's commands) over a recent window, like NVML's sample period: each process checkpoints its
 * busy time at most once a second while its device works, and the window of a process runs from its
 * newest checkpoint at least half a second old to now (so the last one to two seconds of a working
 * process, also for a one-shot mtia-smi; the share of a process gone idle fades as its checkpoint
 * ages, e.g. under 3 % a minute after 100 %). Shares of all live processes are summed and capped at
 * 100; any busy time in the window shows as at least 1. Never blocks. Errors: mtiaErrorInvalidValue
 * (utilization NULL or structSize too small), mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiamlDeviceGetUtilization(int32_t dev, mtiamlUtilization* utilization);
/* Where device dev sits in the host (hwloc; simulated devices are attached to the host's NUMA nodes
 * in turn) and its link to every device of the machine. The first call after mtiamlInit loads the
 * host topology with its PCI tree (milliseconds). Errors: mtiaErrorInvalidValue (topology NULL or
 * structSize too small), mtiaErrorInvalidDevice, mtiaErrorNotSupported (the topology is unknown:
 * hwloc cannot load it, or an HWLOC_XMLFILE / HWLOC_SYNTHETIC / HWLOC_FSROOT / HWLOC_CPUID_PATH
 * setting was refused as unsafe (not a regular file, over 16 MiB or nested over 128 levels, over
 * 65536 objects, not a directory); the message names it). */
MTIA_API mtiaError_t mtiamlDeviceGetTopology(int32_t dev, mtiamlTopology* topology);

/* Other simulated machines of this user (mtia-smi --all-machines). */

/* Takes the list of this user's machines that have a registry (some process used them), sorted by
 * registry name, and returns its length; the indices below refer to the latest list. Never blocks.
 * Errors: mtiaErrorInvalidValue (count NULL). */
MTIA_API mtiaError_t mtiamlMachineGetCount(uint32_t* count);
/* Machine index's configuration as its registry records it, NUL-terminated:
 * "devices=2 memory=17179869184 engines=4 machine=NAME". Never blocks. Errors:
 * mtiaErrorInvalidValue (text NULL or size too small: nothing is written), mtiaErrorNotFound (index
 * beyond the list), mtiaErrorNotPermitted, mtiaErrorInitializationError (the registry cannot be
 * read). */
MTIA_API mtiaError_t mtiamlMachineGetDescription(uint32_t index, char* text, size_t size);
/* Makes every mtiamlDevice* call answer for machine index instead of the environment's, until the
 * last mtiamlShutdown. Never blocks. Errors: those of mtiamlMachineGetDescription, and
 * mtiaErrorInitializationError when the recorded configuration cannot be read back. */
MTIA_API mtiaError_t mtiamlMachineSelect(uint32_t index);

/* Housekeeping and requests to live processes (mtia-smi cleanup, mtia-smi mem snapshot). */

/* The machine mtiamlDevice* calls answer for now (the environment's, or the one mtiamlMachineSelect
 * chose), where a machine index is expected. */
#define MTIAML_MACHINE_CURRENT 0xffffffffu

typedef struct mtiamlCleanupInfo {
    uint32_t structSize;    /* set by the caller (MTIAML_CLEANUP_INFO_INIT) */
    uint32_t reapedSlots;   /* slots of dead processes freed */
    uint32_t liveProcesses; /* processes still registered */
    int32_t removed;        /* 1: the registry and its lock file were removed (nobody used them) */
    char registry[128];     /* the registry object's name */
                            /* new fields are appended only */
} mtiamlCleanupInfo;
#define MTIAML_CLEANUP_INFO_INIT                                                                   \
    {                                                                                              \
        sizeof(mtiamlCleanupInfo), 0, 0, 0, {                                                      \
            0                                                                                      \
        }                                                                                          \
    }

/* Frees the slots of dead processes in machine index's registry (index of the latest
 * mtiamlMachineGetCount list, or MTIAML_MACHINE_CURRENT), then removes the registry object and its
 * lock file when no live process has it open: never one a process is registering with (the
 * registry's creation lock orders the two). A removed machine disappears from the next
 * mtiamlMachineGetCount. Blocks while another process holds the registry's creation lock (at most 5
 * s). Errors: mtiaErrorInvalidValue (info NULL or structSize too small), mtiaErrorNotFound (no such
 * machine, or no registry: no process has used it), mtiaErrorNotPermitted (a registry of another
 * user or mode), mtiaErrorInitializationError (the registry cannot be read, or its lock stayed
 * held). */
MTIA_API mtiaError_t mtiamlMachineCleanup(uint32_t index, mtiamlCleanupInfo* info);

/* Asks the live process pid (in the caller's pid namespace) using a simulated machine of this user
 * to write its memory snapshot (mtiaMemoryDumpSnapshot with traces: they are there only when the
 * process records history) and moves it to path: JSON when path ends in ".json", else pickle. The
 * process serves the request on a thread of its own that sleeps until asked (no signal); it writes
 * the file into a private directory of the user (mode 0700, file mode 0600), from which it is moved
 * (or copied) to path. Blocks up to timeoutMs for the answer, polling (2 s more when the process
 * finishes just as time runs out). A process serves one request at a time: another tool's request
 * to it goes first (its time counts). A request not answered in time is withdrawn: the process
 * drops the file it may still be writing for it, so nothing is left in the private directory.
 * Errors: mtiaErrorInvalidValue (path NULL or empty, pid 0, or path cannot be written: the message
 * names it), mtiaErrorNotFound (no such process uses a machine of this user, or it exited before
 * answering), mtiaErrorNotPermitted (the process belongs to another user), mtiaErrorNotReady (no
 * answer within timeoutMs; a status: no message is recorded), mtiaErrorNotSupported (its runtime
 * cannot write snapshots), mtiaErrorUnknown (it failed to write the snapshot). */
MTIA_API mtiaError_t mtiamlProcessDumpSnapshot(uint32_t pid, const char* path, uint32_t timeoutMs);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_ML_H */
