/* MTIA runtime C ABI: status codes, handles and the pinned value types.
 * C99-clean; includes only <stddef.h> and <stdint.h>. See docs/abi.md. */
#ifndef MTIA_TYPES_H
#define MTIA_TYPES_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define MTIA_API __declspec(dllimport)
#elif defined(__GNUC__)
#define MTIA_API __attribute__((visibility("default")))
#else
#define MTIA_API
#endif

/* Initialiser for an output struct that starts with structSize:
 * mtiaDeviceProp p = MTIA_DEVICE_PROP_INIT; zeroes everything else. */
#ifdef __cplusplus
#define MTIA_STRUCT_INIT(T)                                                                        \
    ([] {                                                                                          \
        T mtia_init_{};                                                                            \
        mtia_init_.structSize = sizeof(T);                                                         \
        return mtia_init_;                                                                         \
    }())
#else
#define MTIA_STRUCT_INIT(T)                                                                        \
    { .structSize = sizeof(T) }
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. Numbers mirror CUDA where analogous and are never renumbered. */
typedef enum mtiaError_t {
    mtiaSuccess = 0,
    mtiaErrorInvalidValue = 1,
    mtiaErrorMemoryAllocation = 2,
    mtiaErrorInitializationError = 3,
    mtiaErrorNoDevice = 100,
    mtiaErrorInvalidDevice = 101,
    mtiaErrorInvalidHandle = 400,
    mtiaErrorIllegalState = 401,
    mtiaErrorNotFound = 500,
    mtiaErrorNotReady = 600,
    mtiaErrorIllegalAddress = 700,
    mtiaErrorLaunchFailure = 719,
    mtiaErrorNotPermitted = 800,
    mtiaErrorNotSupported = 801,
    mtiaErrorStreamCaptureUnsupported = 900,
    mtiaErrorStreamCaptureInvalidated = 901,
    mtiaErrorStreamCaptureMerge = 902,
    mtiaErrorStreamCaptureUnmatched = 903,
    mtiaErrorStreamCaptureUnjoined = 904,
    mtiaErrorStreamCaptureIsolation = 905,
    mtiaErrorCapturedEvent = 907,
    mtiaErrorStreamCaptureWrongThread = 908,
    mtiaErrorGraphExecUpdateFailure = 910,
    mtiaErrorDriver = 998,
    mtiaErrorUnknown = 999,
    mtiaErrorForceInt32 = 0x7fffffff
} mtiaError_t;

/* Opaque handles. */
typedef struct mtiaStream_st* mtiaStream_t;
typedef struct mtiaEvent_st* mtiaEvent_t;
typedef struct mtiaModule_st* mtiaModule_t;
typedef struct mtiaFunction_st* mtiaFunction_t;
typedef struct mtiaGraph_st* mtiaGraph_t;

typedef struct mtiaDim3 {
    uint32_t x, y, z;
} mtiaDim3;

typedef enum mtiaMemcpyKind {
    mtiaMemcpyHostToHost = 0,
    mtiaMemcpyHostToDevice = 1,
    mtiaMemcpyDeviceToHost = 2,
    mtiaMemcpyDeviceToDevice = 3,
    mtiaMemcpyDefault = 4
} mtiaMemcpyKind;

/* Stream flags. */
#define mtiaStreamDefault 0u
#define mtiaStreamNonBlocking 1u
/* Event flags. */
#define mtiaEventDefault 0u
#define mtiaEventBlockingSync 1u
#define mtiaEventDisableTiming 2u
#define mtiaEventInterprocess 4u
/* Stream wait flags. */
#define mtiaEventWaitDefault 0u
#define mtiaEventWaitExternal 1u
/* Graph flags. */
#define mtiaGraphKeepGraph 1u
/* Init flags: none defined yet; mtiaInit rejects unknown bits. */
#define mtiaInitDefault 0u

typedef enum mtiaStreamCaptureMode {
    mtiaStreamCaptureModeGlobal = 0,
    mtiaStreamCaptureModeThreadLocal = 1,
    mtiaStreamCaptureModeRelaxed = 2
} mtiaStreamCaptureMode;

typedef enum mtiaStreamCaptureStatus {
    mtiaStreamCaptureStatusNone = 0,
    mtiaStreamCaptureStatusActive = 1,
    mtiaStreamCaptureStatusInvalidated = 2
} mtiaStreamCaptureStatus;

typedef enum mtiaHistoryMode {
    mtiaHistoryOff = 0,
    mtiaHistoryState = 1,
    mtiaHistoryAll = 2
} mtiaHistoryMode;
typedef enum mtiaStackMode {
    mtiaStacksNone = 0,
    mtiaStacksCpp = 1,
    mtiaStacksFramework = 2,
    mtiaStacksAll = 3
} mtiaStackMode;
typedef enum mtiaSnapshotFormat { mtiaSnapshotJson = 0, mtiaSnapshotPickle = 1 } mtiaSnapshotFormat;
#define mtiaSnapshotIncludeTraces 1u

typedef struct mtiaBuffer {
    void* data;
    size_t size;
} mtiaBuffer;

typedef struct mtiaMemPoolId_t {
    uint64_t first, second;
} mtiaMemPoolId_t;

typedef struct mtiaStat {
    int64_t current, peak, allocated, freed;
} mtiaStat;

/* Index into each 3-entry stat array of mtiaMemoryStats. */
#define mtiaStatAll 0
#define mtiaStatSmallPool 1
#define mtiaStatLargePool 2

typedef struct mtiaMemoryStats {
    uint32_t structSize;
    mtiaStat allocation[3], segment[3], active[3], inactive_split[3], allocated_bytes[3],
        reserved_bytes[3], active_bytes[3], inactive_split_bytes[3], requested_bytes[3];
    int64_t num_alloc_retries, num_ooms, num_sync_all_streams, num_device_alloc, num_device_free;
    mtiaStat oversize_allocations, oversize_segments;
    int64_t max_split_size;
    /* new fields are appended only */
} mtiaMemoryStats;
#define MTIA_MEMORY_STATS_INIT MTIA_STRUCT_INIT(mtiaMemoryStats)

/* Device properties. Set structSize (MTIA_DEVICE_PROP_INIT) before the call;
 * the library writes at most structSize bytes and zeroes what it does not know. */
typedef struct mtiaDeviceProp {
    uint32_t structSize;
    char name[256];
    uint8_t uuid[16];
    char pciBusId[32];
    uint64_t totalGlobalMem;
    int32_t multiProcessorCount; /* compute engines */
    int32_t major, minor;        /* capability */
    int32_t numaNode;            /* -1 when the host has no NUMA information */
    int32_t maxThreadsPerBlock;
    int32_t maxThreadsDim[3];
    int32_t maxGridSize[3];
    int32_t pciDomainID, pciBusID, pciDeviceID;
    int32_t streamPriorityLeast, streamPriorityGreatest;
    uint64_t sharedMemPerBlock;
    uint64_t allocationGranularity; /* bytes; physical allocations are multiples of it */
    /* One kernel launch's limits, checked by mtiaLaunchKernel and capture
     * (over a limit: mtiaErrorInvalidValue naming it). Inductor's combo_kernel_max_num_args and
     * max_fusion_unique_io_buffers read them. */
    int32_t maxKernelArgs;    /* arguments a kernel may take */
    int32_t maxKernelBuffers; /* distinct device allocations its top-level pointer arguments name */
    uint64_t maxKernelArgBytes; /* sum of its arguments' sizes, in bytes */
    uint64_t l2CacheSize; /* bytes of the device's last-level cache, 0 if unknown (CUDA's name) */
    /* new fields are appended only */
} mtiaDeviceProp;
#define MTIA_DEVICE_PROP_INIT MTIA_STRUCT_INIT(mtiaDeviceProp)

/* Pointer attributes: type values. */
#define mtiaMemoryTypeUnregistered 0
#define mtiaMemoryTypeHost 1
#define mtiaMemoryTypeDevice 2

typedef struct mtiaPointerAttributes {
    uint32_t structSize;
    int32_t type;   /* mtiaMemoryType* */
    int32_t device; /* -1 unless type is device */
    void* base;     /* start of the allocation the pointer lies in */
    size_t size;    /* size of that allocation */
    int32_t locked; /* 1 for host memory from mtiaMallocHost that is page-locked, else 0 */
                    /* new fields are appended only */
} mtiaPointerAttributes;
#define MTIA_POINTER_ATTRIBUTES_INIT MTIA_STRUCT_INIT(mtiaPointerAttributes)

#ifdef __cplusplus
}
#endif

#endif /* MTIA_TYPES_H */
