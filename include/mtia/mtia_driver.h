/* The MTIA driver ABI: the one interface through which the runtime touches a
 * device. A driver is a shared object exporting one function,
 *
 *   mtiaError_t mtiaDriverGetOps(uint32_t apiVersion, mtiaDriverOps* ops);
 *
 * The runtime passes the version it was built for and a zeroed table whose
 * structSize it set. The driver refuses another major version
 * (mtiaErrorNotSupported), writes at most ops->structSize bytes, sets
 * ops->version to the version it implements and ops->structSize to the bytes
 * it filled. The runtime refuses a table without every mandatory entry.
 *
 * Optional entries come in blocks, one per "optional" heading below (each
 * entry of 1.0 is a block of its own). One rule for every block: it is present
 * when the driver's minor version is at least the block's, the table it filled
 * reaches the block's end, and every entry of the block is set; a block with
 * some entries set and others NULL is refused when the driver is loaded (the
 * message names the first missing entry); anything past the filled table or in
 * a block newer than the driver's version is ignored. The runtime stands in
 * for absent 1.0 entries (mtiaErrorNotSupported, "" from lastErrorMessage, 0
 * from isDriverThread) and does without later blocks.
 *
 * Every entry returns mtiaSuccess or an mtiaError_t; on failure
 * lastErrorMessage() (optional) returns a thread-local description.
 * Every entry may be called from any thread unless stated. No entry may call
 * back into the runtime except through command callbacks (host functions).
 * C99-clean; includes only <stddef.h> and <stdint.h> (through mtia_types.h). */
#ifndef MTIA_DRIVER_H
#define MTIA_DRIVER_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MTIA_DRIVER_API_VERSION_MAJOR 1u
#define MTIA_DRIVER_API_VERSION_MINOR 8u
#define MTIA_DRIVER_MAKE_API_VERSION(major, minor) (((major) << 16) | (minor))
#define MTIA_DRIVER_API_VERSION                                                                    \
    MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, MTIA_DRIVER_API_VERSION_MINOR)
#define MTIA_DRIVER_API_MAJOR(version) ((version) >> 16)
#define MTIA_DRIVER_API_MINOR(version) ((version)&0xffffu)

/* The name of the one symbol a driver exports. */
#define MTIA_DRIVER_GET_OPS_SYMBOL "mtiaDriverGetOps"
/* Most arguments a kernel may take. */
#define MTIA_DRIVER_MAX_KERNEL_ARGS 32u
/* Bytes of argument values a runtime assumes a launch may carry when the driver does not say
 * (mtiaDrvDeviceInfo.maxKernelArgBytes). */
#define MTIA_DRIVER_MAX_KERNEL_ARG_BYTES 4096u

typedef struct mtiaDrvQueue_st* mtiaDrvQueue;   /* an in-order command queue of one device */
typedef struct mtiaDrvMem_st* mtiaDrvMem;       /* a physical allocation of one device */
typedef struct mtiaDrvModule_st* mtiaDrvModule; /* loaded kernels; NULL names the built-in module */
typedef struct mtiaDrvKernel_st* mtiaDrvKernel; /* a kernel of a module */
typedef struct mtiaDrvCommandList_st*
    mtiaDrvCommandList; /* validated commands run as one (since 1.2) */

typedef struct mtiaDrvIpcEvent_st*
    mtiaDrvIpcEvent; /* an exported or opened IPC event (since 1.4) */

/* Since 1.4: what a driver puts in an IPC handle; its bytes mean something to the driver only. */
#define MTIA_DRIVER_IPC_DESCRIPTOR_BYTES 40u
typedef struct mtiaDrvIpcDescriptor {
    uint8_t bytes[MTIA_DRIVER_IPC_DESCRIPTOR_BYTES];
} mtiaDrvIpcDescriptor;

typedef struct mtiaDrvDeviceInfo {
    uint32_t structSize;
    char name[256];
    uint8_t uuid[16];
    char pciBusId[32]; /* "0000:11:00.0" */
    uint64_t totalMemory;
    int32_t engines; /* compute queues that run concurrently */
    int32_t major, minor;
    int32_t numaNode; /* host NUMA node nearest the device, -1 if unknown */
    int32_t maxThreadsPerBlock;
    int32_t maxThreadsDim[3];
    int32_t maxGridSize[3];
    int32_t pciDomain, pciBus, pciDevice;
    int32_t priorityLeast, priorityGreatest; /* lower number = higher priority */
    uint64_t sharedMemPerBlock;
    uint64_t allocationGranularity; /* physical allocations and mappings are multiples of it */
    uint64_t vaBase, vaSize;        /* the device's reserved virtual range, as integers */
    int32_t canAccessPeers;         /* 1: kernels may access other devices' memory once enabled */
    int32_t reserved0;
    /* Appended (no version of their own): a runtime reads them only when the structSize the driver
     * filled reaches them, and 0 means "not stated". Without them it assumes
     * MTIA_DRIVER_MAX_KERNEL_ARGS arguments and buffers, MTIA_DRIVER_MAX_KERNEL_ARG_BYTES bytes and
     * no known cache. */
    int32_t maxKernelArgs;    /* arguments one launch may carry (<= MTIA_DRIVER_MAX_KERNEL_ARGS) */
    int32_t maxKernelBuffers; /* distinct device allocations one launch's pointer arguments name */
    uint64_t maxKernelArgBytes; /* sum of one launch's argument sizes */
    uint64_t l2CacheSize; /* bytes of the last-level cache kernels run through, 0 if unknown */
} mtiaDrvDeviceInfo;

typedef enum mtiaDrvCommandType {
    mtiaDrvCmdKernel = 1, /* run kernel once per block of grid */
    mtiaDrvCmdCopy =
        2, /* copy size bytes; overlapping ranges are refused (mtiaErrorInvalidValue) */
    mtiaDrvCmdFill = 3,     /* set size bytes to value */
    mtiaDrvCmdHostFunc = 4, /* call fn(userData) on a driver thread, in queue order */
    mtiaDrvCmdWait = 5,     /* later commands wait until queue has completed command number value */
    mtiaDrvCmdTimestamp = 6, /* write the completion time (clockNow's clock, ns) to *out */
    mtiaDrvCmdList = 7,      /* since 1.2: run a command list's commands in order, as one command */
    mtiaDrvCmdForceInt32 = 0x7fffffff
} mtiaDrvCommandType;

typedef struct mtiaDrvCommand {
    mtiaDrvCommandType type;
    uint32_t reserved;
    union {
        struct {
            mtiaDrvKernel kernel;
            mtiaDim3 grid, block;
            uint64_t sharedMem;
            void** args; /* args[i] points at argument i; values are copied during submit */
        } kernel;
        struct {
            void* dst;
            const void* src;
            uint64_t size;
        } copy;
        struct {
            void* dst;
            uint64_t size;
            uint32_t value; /* low byte used */
        } fill;
        struct {
            void (*fn)(void* userData);
            void* userData;
        } hostFunc;
        struct {
            mtiaDrvQueue
                queue; /* any queue of any device of this driver, alive until the wait is done */
            uint64_t
                value; /* a command number already returned by queueSubmit on that queue (a larger
                          one is mtiaErrorInvalidValue, which also rules out cycles of waits) */
        } wait;
        struct {
            uint64_t* out; /* must stay valid until the command completes */
        } timestamp;
        struct {
            mtiaDrvCommandList list; /* from commandListCreate, for a queue of the list's device */
        } list;
    } u;
} mtiaDrvCommand;

/* Since 1.6: a machine as its configuration describes it (machineGetSpec), before any device
 * starts. Two processes with equal specs use the same machine, which is what the cross-process
 * registry of monitoring tools (mtia_ml.h) is named after. */
typedef struct mtiaDrvMachineSpec {
    uint32_t structSize; /* set by the caller; the driver writes at most this many bytes */
    int32_t devices;     /* devices of the machine */
    int32_t engines;     /* compute engines of each device */
    uint32_t reserved0;
    uint64_t memoryBytes; /* memory of each device */
    char machine[256]; /* the machine's name, NUL-terminated; "" for the default one (the simulator:
                          MTIA_SIM_MACHINE) */
} mtiaDrvMachineSpec;

/* queueWait flags */
#define MTIA_DRV_WAIT_SPIN 0u  /* poll, then yield, then sleep */
#define MTIA_DRV_WAIT_SLEEP 1u /* sleep until woken (blocking sync) */

typedef struct mtiaDriverOps {
    uint32_t version;    /* MTIA_DRIVER_API_VERSION the driver implements */
    uint32_t structSize; /* bytes of this table the driver filled */

    /* ---- mandatory ---- */
    /* Reads the driver's configuration and finds devices. Called once, before anything else; starts
     * no device. Errors: mtiaErrorInvalidValue (bad configuration), mtiaErrorInitializationError.
     */
    mtiaError_t (*init)(uint32_t flags);
    /* A short static name ("sim"). */
    const char* (*getName)(void);
    mtiaError_t (*deviceGetCount)(int32_t* count);
    /* Writes at most info->structSize bytes and sets structSize to the bytes written. */
    mtiaError_t (*deviceGetInfo)(int32_t dev, mtiaDrvDeviceInfo* info);
    /* The device's sticky fault, else mtiaSuccess: mtiaErrorIllegalAddress once a kernel faulted on
     * memory (since 1.8; the simulator: SIGSEGV or SIGBUS in a kernel), mtiaErrorLaunchFailure
     * once a command faulted otherwise. queueSubmit, queueWait and deviceSynchronize return the
     * same code for the fault (the runtime accepts either wherever a sticky fault is reported).
     * After a fault, commands still queued on the device complete without running (host functions
     * included, so they must not be relied on for cleanup); timestamps are still written. */
    mtiaError_t (*deviceGetStatus)(int32_t dev);
    /* Blocks until every command submitted to the device (destroyed queues too) completed.
     * From a driver thread with the device's work pending: mtiaErrorNotPermitted (it would wait on
     * itself); the same holds for queueWait. */
    mtiaError_t (*deviceSynchronize)(int32_t dev);
    /* free: what every user of the device leaves unallocated. */
    mtiaError_t (*memGetInfo)(int32_t dev, uint64_t* free, uint64_t* total);
    /* Reserves size bytes of the device's virtual range (no access until mapped).
     * size and alignment (0 = granularity; else a power of two) are multiples of the granularity.
     */
    mtiaError_t (*vaReserve)(int32_t dev, uint64_t size, uint64_t alignment, void** va);
    /* Releases a reservation made by vaReserve; the whole range must be unmapped. */
    mtiaError_t (*vaRelease)(int32_t dev, void* va, uint64_t size);
    /* Creates size bytes (a multiple of the granularity) of physical memory.
     * Errors: mtiaErrorMemoryAllocation when the device's capacity would be exceeded. */
    mtiaError_t (*memCreate)(int32_t dev, uint64_t size, mtiaDrvMem* mem);
    /* Releases physical memory; mappings of it must be gone. */
    mtiaError_t (*memRelease)(mtiaDrvMem mem);
    /* Maps [offset, offset+size) of mem at va, inside a reservation of mem's device. */
    mtiaError_t (*memMap)(void* va, uint64_t size, mtiaDrvMem mem, uint64_t offset);
    /* Unmaps a mapped range; the addresses stay reserved. */
    mtiaError_t (*memUnmap)(void* va, uint64_t size);
    /* Creates an in-order queue; priority is clamped into [priorityGreatest, priorityLeast]. flags:
     * 0. */
    mtiaError_t (*queueCreate)(int32_t dev, int32_t priority, uint32_t flags, mtiaDrvQueue* queue);
    /* Releases the handle at once; submitted commands still run, and the queue stays valid as a
     * wait target of commands already submitted. */
    mtiaError_t (*queueDestroy)(mtiaDrvQueue queue);
    /* Appends a command; *seq receives its number (1, 2, ... per queue). Commands of one queue run
     * in order, each after the previous completed; queues run concurrently. May block: a driver may
     * bound the commands a queue holds that have not completed, and then makes a submitting thread
     * wait for room (the simulator: MTIA_SIM_QUEUE_DEPTH, default 1024; it never makes a thread
     * running one of its host functions wait, and a sticky fault ends the wait with
     * the sticky fault's code). Since 1.1 the driver validates kernel launches itself: grid, block,
     * threads per block and sharedMem within the limits deviceGetInfo reports, args and each
     * args[i] non-NULL for a kernel with arguments; the runtime then checks them only after a
     * refusal, to name the argument at fault (for 1.0 drivers it checks before submitting). Errors:
     * mtiaErrorLaunchFailure or mtiaErrorIllegalAddress (sticky device fault),
     * mtiaErrorInvalidValue (malformed command). */
    mtiaError_t (*queueSubmit)(mtiaDrvQueue queue, const mtiaDrvCommand* cmd, uint64_t* seq);
    /* The number of the last completed command (commands complete in order). Never blocks. */
    mtiaError_t (*queueQuery)(mtiaDrvQueue queue, uint64_t* completed);
    /* Blocks until command seq completed; returns the device's sticky fault if any. */
    mtiaError_t (*queueWait)(mtiaDrvQueue queue, uint64_t seq, uint32_t flags);

    /* ---- optional (mtiaErrorNotSupported when absent) ---- */
    /* Thread-local detail about this thread's last failed call; never NULL. */
    const char* (*lastErrorMessage)(void);
    /* Current time of the clock timestamps use, in ns. */
    mtiaError_t (*clockNow)(uint64_t* ns);
    /* Loads a module of kernels. Errors: mtiaErrorNotFound (cannot load path). */
    mtiaError_t (*moduleLoad)(const char* path, mtiaDrvModule* module);
    /* Drops the handle; kernels already submitted still run. */
    mtiaError_t (*moduleUnload)(mtiaDrvModule module);
    /* Finds a kernel; module NULL = the built-in module. Errors: mtiaErrorNotFound. */
    mtiaError_t (*moduleGetKernel)(mtiaDrvModule module, const char* name, mtiaDrvKernel* kernel);
    /* Argument count and sizes (argSizes has MTIA_DRIVER_MAX_KERNEL_ARGS entries). */
    mtiaError_t (*kernelGetInfo)(mtiaDrvKernel kernel, uint32_t* numArgs, uint32_t* argSizes);
    /* Lets kernels of dev access peer's memory (enable 1) or not (0). */
    mtiaError_t (*deviceSetPeerAccess)(int32_t dev, int32_t peer, int32_t enable);
    /* 1 when the calling thread is one of the driver's execution threads (running a kernel or host
     * function), else 0. The runtime refuses to be re-entered from such threads. Must be cheap. */
    int32_t (*isDriverThread)(void);

    /* ---- optional, since 1.1 ---- */
    /* The numbers of the last command submitted to the queue so far and of the last completed one,
     * read together. Never blocks. Must be cheap: with it the runtime keeps no submission count of
     * its own, so concurrent submitters share no counter above the driver. */
    mtiaError_t (*queueGetCounts)(mtiaDrvQueue queue, uint64_t* submitted, uint64_t* completed);

    /* ---- optional, since 1.2 (both or neither) ---- */
    /* Validates count (> 0) commands for device dev as queueSubmit would, and copies them (kernel
     * argument values included) into a list that queueSubmit runs as one mtiaDrvCmdList command, on
     * any queue of dev, any number of times, also concurrently. The commands run in order, each
     * after the previous one finished; the list command completes after the last one. A device
     * fault stops the rest of the list (as for later commands of the queue). Allowed types: kernel,
     * copy, fill, host function, timestamp; module kernels keep their modules loaded while the list
     * lives. Errors: mtiaErrorInvalidValue (count 0, a wait or list command, or a command
     * queueSubmit would refuse; the message gives its index), mtiaErrorInvalidHandle (a kernel of
     * no loaded module), mtiaErrorInvalidDevice (dev). */
    mtiaError_t (*commandListCreate)(int32_t dev, const mtiaDrvCommand* cmds, uint64_t count,
                                     mtiaDrvCommandList* list);
    /* Drops the handle; submitted runs of the list still complete. */
    mtiaError_t (*commandListDestroy)(mtiaDrvCommandList list);

    /* ---- optional, since 1.3 ---- */
    /* The runtime's allocator reports the bytes it has handed out on dev after each change, so that
     * the driver can publish them (and their peak) to monitoring tools of other processes. Called
     * on every allocation and free, under the allocator's lock: must be cheap and must not call the
     * runtime. Errors are ignored by the runtime (mtiaErrorInvalidDevice, mtiaErrorNotSupported).
     */
    mtiaError_t (*memReportAllocated)(int32_t dev, uint64_t allocatedBytes);

    /* ---- optional, since 1.4 (all or none): interprocess memory and events ---- */
    /* Exports [offset, offset+size) of mem (granule multiples) to other processes of the same user
     * and machine: *desc names it. Errors: mtiaErrorInvalidHandle (mem), mtiaErrorInvalidValue
     * (range), mtiaErrorMemoryAllocation (the process's table of exports is full). */
    mtiaError_t (*ipcMemExport)(mtiaDrvMem mem, uint64_t offset, uint64_t size,
                                mtiaDrvIpcDescriptor* desc);
    /* The exporter gives an export up: no new opens from now on. *openers receives how many live
     * processes still have it open; the memory must stay allocated until a later call reports 0
     * (then the export is gone, and further calls return mtiaErrorInvalidValue). Never blocks. */
    mtiaError_t (*ipcMemRevoke)(const mtiaDrvIpcDescriptor* desc, uint32_t* openers);
    /* Maps an export of another process into this process's range of the same device: *va, *dev. A
     * second open of the same export returns the same address (reference counted). Imported memory
     * is not charged to the importer's capacity. flags: 0. Errors: mtiaErrorInvalidHandle (not a
     * descriptor of this driver and machine, stale: freed or its exporter exited; the message says
     * which), mtiaErrorNotPermitted (another user's), mtiaErrorInvalidValue (exported by this
     * process), mtiaErrorMemoryAllocation (no addresses, or the table of imports is full),
     * mtiaErrorNotSupported (the exporter's memory cannot be reached, e.g. /proc refused). */
    mtiaError_t (*ipcMemOpen)(const mtiaDrvIpcDescriptor* desc, uint32_t flags, void** va,
                              int32_t* dev);
    /* Drops one open of the mapping at va; the last one unmaps it. Errors: mtiaErrorInvalidValue
     * (va is not an open import). */
    mtiaError_t (*ipcMemClose)(void* va);
    /* An interprocess event on dev: *desc names it for other processes. Errors:
     * mtiaErrorInvalidDevice, mtiaErrorMemoryAllocation (table full). */
    mtiaError_t (*ipcEventExport)(int32_t dev, mtiaDrvIpcDescriptor* desc, mtiaDrvIpcEvent* event);
    /* Opens another process's event. Errors: those of ipcMemOpen about descriptors. */
    mtiaError_t (*ipcEventOpen)(const mtiaDrvIpcDescriptor* desc, mtiaDrvIpcEvent* event,
                                int32_t* dev);
    /* Exporter: marks the event destroyed (importers' waits fail) and frees it; importer: frees the
     * handle. Never blocks. */
    mtiaError_t (*ipcEventClose)(mtiaDrvIpcEvent event);
    /* Exporter only: a new record; *ticket receives its number (1, 2, ...). Never blocks. */
    mtiaError_t (*ipcEventRecord)(mtiaDrvIpcEvent event, uint64_t* ticket);
    /* Exporter only: record ticket's work completed (wakes the waiters). Never blocks. */
    mtiaError_t (*ipcEventComplete)(mtiaDrvIpcEvent event, uint64_t ticket);
    /* The latest record's ticket (0: never recorded). Never blocks. */
    mtiaError_t (*ipcEventLatest)(mtiaDrvIpcEvent event, uint64_t* ticket);
    /* Waits until record ticket completed: mtiaSuccess; timeoutNs 0 polls (mtiaErrorNotReady when
     * not yet), UINT64_MAX waits for ever. Errors: mtiaErrorInvalidHandle (the exporter destroyed
     * the event or exited: the wait ends instead of hanging). */
    mtiaError_t (*ipcEventWait)(mtiaDrvIpcEvent event, uint64_t ticket, uint64_t timeoutNs);

    /* ---- optional, since 1.5 ---- */
    /* The bytes mapped at va, an open import (what the exporter exported), so that the runtime can
     * check a handle's range against them. Never blocks. Errors: mtiaErrorInvalidValue (va is not
     * an open import). */
    mtiaError_t (*ipcMemSize)(void* va, uint64_t* size);

    /* ---- optional, since 1.6 (both or neither): the machine described without starting it ---- */
    /* What the management library (mtia_ml.h) reads instead of initialising the driver. Both
     * entries may be called before init, without it, and concurrently with it or with each other;
     * they start no device, reserve no memory, create no thread and never block on another process.
     */
    /* The machine this process's configuration (its environment) describes, read anew on every
     * call. Writes at most spec->structSize bytes and sets structSize to the bytes written. Errors:
     * mtiaErrorInvalidValue (spec NULL, structSize short of the 1.6 struct, or a bad configuration:
     * the message names the setting and the value). */
    mtiaError_t (*machineGetSpec)(mtiaDrvMachineSpec* spec);
    /* Describes device dev of machine spec (from machineGetSpec, or a spec another process
     * recorded) as deviceGetInfo would describe it once that machine is initialised: identity
     * (name, uuid, pciBusId, the PCI numbers), totalMemory, engines, version, numaNode and launch
     * limits; vaBase and vaSize stay 0. Writes at most info->structSize bytes and sets structSize
     * to the bytes written. May read the host topology on its first call (milliseconds). Errors:
     * mtiaErrorInvalidValue (spec or info NULL, a spec the driver cannot have described),
     * mtiaErrorInvalidDevice (dev outside 0..spec->devices-1). */
    mtiaError_t (*machineDescribeDevice)(const mtiaDrvMachineSpec* spec, int32_t dev,
                                         mtiaDrvDeviceInfo* info);

    /* ---- optional, since 1.7 (both or neither): shared words in place of two calls that the
     * runtime makes on every allocation ---- */
    /* The address of dev's sticky-fault word, valid while the driver is loaded: 0 while
     * deviceGetStatus(dev) returns mtiaSuccess, nonzero once it would fail; a fault is sticky, so
     * the word returns to 0 only when deviceReset (1.8) clears the fault. The runtime reads it with
     * an acquire load (__atomic_load_n) instead of calling deviceGetStatus, and calls
     * deviceGetStatus for the error and its message once it is nonzero. Thread-safe, does not
     * block. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (word NULL). */
    mtiaError_t (*deviceGetFaultWord)(int32_t dev, const uint32_t** word);
    /* Where the runtime publishes what memReportAllocated reports, without the call: *allocated and
     * *peak point to the 64-bit words the driver shares with monitoring tools for this process and
     * dev, or both are NULL while the driver has nowhere to publish yet (before the process's first
     * memCreate): the runtime then calls memReportAllocated and asks again after its next device
     * allocation. The runtime stores with atomic release stores (__atomic_store_n), *allocated on
     * every change and *peak when *allocated exceeds it, one thread at a time per device (under its
     * allocator's lock). Valid while the driver is loaded, in this process (a forked child's
     * runtime does not run). Thread-safe, does not block. Errors: mtiaErrorInvalidDevice,
     * mtiaErrorInvalidValue (allocated or peak NULL). */
    mtiaError_t (*memGetAllocatedWords)(int32_t dev, uint64_t** allocated, uint64_t** peak);

    /* ---- optional, since 1.8: device reset (the runtime's mtiaDeviceReset) ---- */
    /* Waits until every command this process submitted to dev completed (on a faulted device
     * queued commands complete without running, so the queues drain at once; kernels and host
     * functions running now are waited for), then clears dev's sticky fault (deviceGetStatus
     * returns mtiaSuccess again and the fault word returns to 0) and its peer access (as if
     * deviceSetPeerAccess(dev, peer, 0) for every peer). Queues, memory, modules and lists stay as
     * they are: the runtime destroys or releases what it owns first (the device is then as
     * freshly started, with no memory of this process). Commands submitted concurrently with the
     * reset are the caller's race. Without this block the runtime cannot clear a fault
     * (mtiaDeviceReset answers mtiaErrorNotSupported on a faulted device). Blocking. Errors:
     * mtiaErrorInvalidDevice, mtiaErrorNotPermitted (called from a driver thread). */
    mtiaError_t (*deviceReset)(int32_t dev);
} mtiaDriverOps;

typedef mtiaError_t (*mtiaDriverGetOpsFn)(uint32_t apiVersion, mtiaDriverOps* ops);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_DRIVER_H */
