/* MTIA runtime C ABI: device memory and events shared between processes (CUDA's cudaIpc* calls).
 *
 * A handle is an opaque 64-byte value that the exporting process passes to another process of the
 * same user on the same (simulated) machine by any means (a pipe, a file, shared memory). The
 * importer opens it and gets a device pointer of its own, in its range of the same device, to the
 * same bytes: writes on either side are seen on the other once the writing work completed (order
 * them with an IPC event).
 *
 * The conventions of mtia_runtime.h hold. Beyond them:
 * - Lifetime (stricter than CUDA, where these cases are undefined): a memory handle is stale once
 * the exporter freed the allocation or exited; opening a stale handle fails with
 * mtiaErrorInvalidHandle and a message that says which. When the exporter frees an allocation that
 * live importers still have open, the free completes only when the last of them closed it or exited
 * (its memory is not reused meanwhile); such deferred frees are completed by later allocation,
 * free, memory-info, empty-cache and IPC calls of the exporter. An importer's mapping stays valid
 * when the exporter exits.
 * - Imported memory is not counted against the importer's device capacity (the exporter holds it).
 * - Reaching the exporter's memory: the importer reopens the exporter's device memory file through
 *   /proc/<pid>/fd (or pidfd_getfd), which needs the same user and ptrace read access (allowed
 * under Yama ptrace_scope 0 and 1); where that is refused, opening fails with
 * mtiaErrorNotSupported.
 * - Capture: none of these calls is legal while a capture in global mode (or this thread's relaxed
 * or thread-local capture on the device) is live: they return mtiaErrorStreamCaptureUnsupported and
 *   invalidate the capture, like the other unsafe calls of mtia_graph.h.
 * - Fork: a forked child inherits no IPC objects (CUDA supports no IPC across fork at all): a child
 * forked after the runtime was initialised cannot use the runtime at all (mtia_runtime.h: every
 * call returns mtiaErrorInitializationError there), and the parent's imports and exports are
 * unaffected.
 * - A driver older than driver ABI 1.4 shares nothing: every call returns mtiaErrorNotSupported.
 */
#ifndef MTIA_IPC_H
#define MTIA_IPC_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MTIA_IPC_HANDLE_SIZE 64

/* An exported device allocation. Opaque; copy it by value. */
typedef struct mtiaIpcMemHandle_st {
    char reserved[MTIA_IPC_HANDLE_SIZE];
} mtiaIpcMemHandle_t;

/* An exported interprocess event. Opaque; copy it by value. */
typedef struct mtiaIpcEventHandle_st {
    char reserved[MTIA_IPC_HANDLE_SIZE];
} mtiaIpcEventHandle_t;

/* mtiaIpcOpenMemHandle flags. Peer access is implied on the simulated machine; the flag is accepted
 * for source compatibility with CUDA. */
#define mtiaIpcMemLazyEnablePeerAccess 1u

/** Exports the allocation that starts at devPtr (a pointer returned by mtiaMalloc or
 * mtiaMallocAsync, not an interior one): *handle names it for other processes. Exporting the same
 * allocation again returns the same handle. Thread-safe, non-blocking, not legal during capture.
 * Errors: mtiaErrorInvalidValue (handle NULL; devPtr NULL, a host pointer, an interior pointer,
 * freed, or memory imported from another process; the message names devPtr and says which),
 * mtiaErrorNotSupported (the driver shares no memory, or the allocation lies in an expandable
 * segment), mtiaErrorMemoryAllocation (the process already exports the most allocations it may:
 * 64), mtiaErrorStreamCaptureUnsupported. */
MTIA_API mtiaError_t mtiaIpcGetMemHandle(mtiaIpcMemHandle_t* handle, void* devPtr);

/** Maps the allocation handle names (exported by another process) into this process: *devPtr is a
 * device pointer of the exporter's device. Opening the same handle again returns the same pointer
 * and counts one more open. flags: 0 or mtiaIpcMemLazyEnablePeerAccess. Thread-safe; does not wait
 * for device work; not legal during capture. Errors: mtiaErrorInvalidValue (devPtr NULL, unknown
 * flag bits, or the handle was exported by this very process: open it in another one),
 * mtiaErrorInvalidHandle (not a handle: bad magic, version or kind; another simulated machine's;
 * stale: the allocation was freed or the exporter exited; the message says which),
 * mtiaErrorNotPermitted (another user's handle), mtiaErrorInvalidDevice (the exporter's device is
 * hidden here by MTIA_VISIBLE_DEVICES), mtiaErrorNotSupported (the driver shares no memory, or the
 * exporter's memory cannot be reached), mtiaErrorMemoryAllocation (no address range, or
 * the process already has the most imports open: 64), mtiaErrorStreamCaptureUnsupported. */
MTIA_API mtiaError_t mtiaIpcOpenMemHandle(void** devPtr, mtiaIpcMemHandle_t handle,
                                          unsigned int flags);

/** Drops one open of a pointer mtiaIpcOpenMemHandle returned; the last one unmaps it (work still
 * using it must have completed). Thread-safe, non-blocking, not legal during capture. Errors:
 * mtiaErrorInvalidValue (devPtr is not an open IPC mapping), mtiaErrorNotSupported,
 * mtiaErrorStreamCaptureUnsupported. */
MTIA_API mtiaError_t mtiaIpcCloseMemHandle(void* devPtr);

/** Exports an event created with mtiaEventInterprocess | mtiaEventDisableTiming: *handle names it
 * for other processes, who see its records made from then on (and a pending record made before).
 * Exporting it again returns the same handle. Destroying the event makes importers' waits fail
 * instead of hang. Thread-safe, non-blocking, not legal during capture. Errors:
 * mtiaErrorInvalidValue (handle NULL, or the event lacks mtiaEventInterprocess, or was itself
 * opened from a handle), mtiaErrorInvalidHandle (event), mtiaErrorNotSupported,
 * mtiaErrorMemoryAllocation (the process already exports the most events it may: 64),
 * mtiaErrorStreamCaptureUnsupported. */
MTIA_API mtiaError_t mtiaIpcGetEventHandle(mtiaIpcEventHandle_t* handle, mtiaEvent_t event);

/** Opens an event exported by another process: *event behaves like a local event with
 * mtiaEventDisableTiming for mtiaEventQuery, mtiaEventSynchronize and mtiaStreamWaitEvent, which
 * see the exporter's latest record as of the call; destroy it with mtiaEventDestroy. Unlike CUDA,
 * recording it (mtiaEventRecord, mtiaEventRecordWithFlags, during capture or not) is refused with
 * mtiaErrorNotSupported: only the exporter records. When the exporter destroyed the event or exited
 * (even after its last record completed), query, synchronize and mtiaStreamWaitEvent return
 * mtiaErrorInvalidHandle, and a stream already waiting for it goes on (the wait ends; it never
 * hangs). A capturing stream cannot wait for it (a graph cannot wait for another process's
 * records): mtiaStreamWaitEvent returns mtiaErrorStreamCaptureUnsupported and invalidates the
 * capture. Thread-safe, non-blocking, not legal during capture. Errors: mtiaErrorInvalidValue
 * (event NULL, or the handle was exported by this process), mtiaErrorInvalidHandle (not a handle,
 * another machine's, or stale), mtiaErrorNotPermitted (another user's), mtiaErrorInvalidDevice (the
 * exporter's device is hidden here by MTIA_VISIBLE_DEVICES), mtiaErrorNotSupported,
 * mtiaErrorStreamCaptureUnsupported. */
MTIA_API mtiaError_t mtiaIpcOpenEventHandle(mtiaEvent_t* event, mtiaIpcEventHandle_t handle);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_IPC_H */
