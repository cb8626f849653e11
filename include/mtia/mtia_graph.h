/* MTIA runtime C ABI: stream capture and graphs.
 *
 * A graph object (mtiaGraph_t) is PyTorch's MTIAGraph one to one: create (with or without
 * mtiaGraphKeepGraph), capture begin with a pool id, capture end, instantiate, replay, reset, pool,
 * destroy. Work enqueued on a capturing stream is recorded as nodes instead of running; a replay
 * runs the recorded work again, with the same addresses and scalar arguments, as one unit in the
 * order of the stream it is replayed on. Allocations on a capturing stream come from the graph's
 * private pool, which keeps its memory while the graph lives.
 *
 * Capture modes (CUDA's): every thread has an interaction mode
 * (mtiaThreadExchangeStreamCaptureMode, Global for a new thread) and every capture is tagged with
 * the mode it began with. A thread calling a "potentially unsafe" function (mtiaDeviceSynchronize,
 * mtiaStreamSynchronize, mtiaStreamQuery, mtiaEventSynchronize, mtiaEventQuery, mtiaMemcpy,
 * mtiaMemset, mtiaModuleLoad, mtiaModuleUnload) is refused with mtiaErrorStreamCaptureUnsupported,
 * and the captures that caused the refusal are invalidated, when
 * - its mode is Global and it began a capture that is not Relaxed, or another thread began a Global
 *   capture on the same device;
 * - its mode is ThreadLocal and it began a capture that is not Relaxed.
 * Whatever the modes, synchronising with or querying a capturing stream, and querying or
 * synchronising an event recorded in a live capture (mtiaErrorCapturedEvent), are refused and
 * invalidate that capture; so is mtiaDeviceSynchronize on a device where the calling thread
 * captures. The caching allocator's functions are legal in every mode.
 *
 * Fork and join: mtiaEventRecord on a capturing stream records no node; it remembers the stream's
 * capture position. mtiaStreamWaitEvent on such an event makes a stream that is not capturing join
 * the capture (fork) or adds the position to a capturing stream's dependencies (join). At the end
 * every joined stream's last work must be an ancestor of (or part of) the origin stream's last
 * work, else mtiaErrorStreamCaptureUnjoined.
 */
#ifndef MTIA_GRAPH_H
#define MTIA_GRAPH_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* State of a graph object (mtiaGraphInfo.state). */
typedef enum mtiaGraphState {
    mtiaGraphStateEmpty = 0,     /* created or reset: holds nothing */
    mtiaGraphStateCapturing = 1, /* a capture into it is live (possibly invalidated) */
    mtiaGraphStateCaptured =
        2, /* holds a captured graph that is not instantiated (mtiaGraphKeepGraph) */
    mtiaGraphStateReady = 3, /* instantiated: replays */
    mtiaGraphStateFailed = 4 /* its last capture failed; holds its pool until reset or destroy */
} mtiaGraphState;

/* What mtiaGraphGetInfo reports. Set structSize (MTIA_GRAPH_INFO_INIT) before the call. */
typedef struct mtiaGraphInfo {
    uint32_t structSize;
    int32_t state;        /* mtiaGraphState */
    uint64_t numNodes;    /* nodes of the captured graph (0 while capturing: see numNodes so far) */
    uint64_t numEdges;    /* dependency edges between them */
    uint64_t captureId;   /* id of the live or last capture; 0 if none */
    int32_t device;       /* device of the capture; -1 if none */
    int32_t hasTemplate;  /* 1: the captured graph is kept and may be instantiated (again) */
    int32_t instantiated; /* 1: an executable graph exists */
    uint32_t numLanes;    /* device queues a replay uses (1 for a straight-line graph) */
    uint64_t numReplays;  /* replays launched so far */
    mtiaMemPoolId_t pool; /* the private pool; {0,0} before a capture began */
} mtiaGraphInfo;
#define MTIA_GRAPH_INFO_INIT MTIA_STRUCT_INIT(mtiaGraphInfo)

/* mtiaEventRecordWithFlags flags. */
#define mtiaEventRecordDefault 0u
#define mtiaEventRecordExternal                                                                    \
    1u /* during capture: a record node that records the event on every replay */

/* ---- Capture queries and modes --------------------------------------------- */

/** The capture status of stream (NULL: the current stream): None, Active or Invalidated. Never
 * invalidates anything. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (status NULL), mtiaErrorInvalidHandle (stream). */
MTIA_API mtiaError_t mtiaStreamIsCapturing(mtiaStream_t stream, mtiaStreamCaptureStatus* status);

/** Like mtiaStreamIsCapturing, and the id of the capture (process-unique, non-zero) when the status
 * is not None (0 otherwise); id may be NULL. Streams that joined a capture report its id.
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (status NULL), mtiaErrorInvalidHandle (stream). */
MTIA_API mtiaError_t mtiaStreamGetCaptureInfo(mtiaStream_t stream, mtiaStreamCaptureStatus* status,
                                              uint64_t* id);

/** Swaps the calling thread's capture interaction mode with *mode (push/pop style: call again with
 * the returned value to restore). Thread-local, non-blocking, legal during capture. Errors:
 * mtiaErrorInvalidValue (mode NULL or not a mtiaStreamCaptureMode; nothing changes). */
MTIA_API mtiaError_t mtiaThreadExchangeStreamCaptureMode(mtiaStreamCaptureMode* mode);

/** Begins capturing stream (NULL: the current stream; a device's default stream is allowed) into a
 * new graph with a new private pool, tagged with mode; mtiaStreamEndCapture returns that graph. The
 * CUDA style of mtiaGraphCreate + mtiaGraphCaptureBegin. Thread-safe, non-blocking; legal while
 * other captures are live (not on a stream that takes part in one). Errors: mtiaErrorInvalidHandle
 * (stream), mtiaErrorInvalidValue (mode), mtiaErrorIllegalState (stream is capturing or joined to a
 * capture), mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiaStreamBeginCapture(mtiaStream_t stream, mtiaStreamCaptureMode mode);

/** Ends the capture that stream began with mtiaStreamBeginCapture and returns its graph in *graph
 * (state Captured, as if created with mtiaGraphKeepGraph; destroy it with mtiaGraphDestroy). On
 * every error but Unmatched and IllegalState, *graph is set to NULL, every stream of the capture is
 * no longer capturing and the graph's pool is released.
 * Thread-safe (see WrongThread), non-blocking; ends a capture, so legal during one.
 * Errors: mtiaErrorInvalidValue (graph NULL), mtiaErrorInvalidHandle (stream),
 * mtiaErrorIllegalState (stream is not capturing, or its capture began with mtiaGraphCaptureBegin),
 * mtiaErrorStreamCaptureUnmatched (stream joined the capture but did not begin it; nothing
 * changes), mtiaErrorStreamCaptureWrongThread (mode is not Relaxed and another thread began it),
 * mtiaErrorStreamCaptureInvalidated (an illegal call invalidated it),
 * mtiaErrorStreamCaptureUnjoined (a joined stream's work was not joined back into stream). */
MTIA_API mtiaError_t mtiaStreamEndCapture(mtiaStream_t stream, mtiaGraph_t* graph);

/** mtiaEventRecord with flags: mtiaEventRecordExternal records, during capture, a node that records
 * the event on every replay (the event is then also a fork/join point of the capture). Outside
 * capture the flag changes nothing. Thread-safe; blocking: may block when the stream's queue is
 * full (as mtiaEventRecord); legal during capture. Errors: as mtiaEventRecord, plus
 * mtiaErrorInvalidValue (unknown flag bits). */
MTIA_API mtiaError_t mtiaEventRecordWithFlags(mtiaEvent_t event, mtiaStream_t stream,
                                              unsigned int flags);

/* ---- Graph objects (PyTorch's MTIAGraph hooks) ------------------------------ */

/** Creates an empty graph object. flags: 0 or mtiaGraphKeepGraph (keep the captured graph after
 * capture end so that it can be instantiated, and re-instantiated, explicitly; without it capture
 * end instantiates at once and drops it). Thread-safe, non-blocking, legal during capture. Errors:
 * mtiaErrorInvalidValue (graph NULL, unknown flag bits). */
MTIA_API mtiaError_t mtiaGraphCreate(mtiaGraph_t* graph, unsigned int flags);

/** Routes allocations on stream (NULL: the current stream) to the private pool pool, then begins
 * capturing stream into graph with mode. pool {0,0}: a new private pool; {0,n} from
 * mtiaGraphPoolHandle: that shared pool; {n,0} from mtiaGraphGetPool: another graph's pool, which
 * must still be in use. Streams that join the capture allocate from the pool too.
 * Allowed in state Empty and Failed (a failed capture's pool is released first).
 * Thread-safe, non-blocking; legal while other captures are live (not on a stream taking part in
 * one). Errors: mtiaErrorInvalidHandle (graph, stream), mtiaErrorInvalidValue (mode; pool with both
 * halves non-zero; a pool id that is no longer in use), mtiaErrorIllegalState (graph holds a
 * captured graph and was not reset, or is capturing; stream is capturing or joined to a capture).
 */
MTIA_API mtiaError_t mtiaGraphCaptureBegin(mtiaGraph_t graph, mtiaStream_t stream,
                                           mtiaMemPoolId_t pool, mtiaStreamCaptureMode mode);

/** Ends graph's capture. Without mtiaGraphKeepGraph the captured graph is instantiated and dropped
 * (state Ready); with it, it is kept (state Captured). Every stream of the capture is no longer
 * capturing afterwards, whatever the result; on failure the graph's state is Failed and it keeps
 * its pool until mtiaGraphReset or mtiaGraphDestroy. An empty capture succeeds (a warning is
 * logged). Thread-safe (see WrongThread), non-blocking; ends a capture, so legal during one.
 * Errors: mtiaErrorInvalidHandle (graph), mtiaErrorIllegalState (graph is not capturing),
 * mtiaErrorStreamCaptureWrongThread, mtiaErrorStreamCaptureInvalidated,
 * mtiaErrorStreamCaptureUnjoined (as mtiaStreamEndCapture), errors of mtiaGraphInstantiate. */
MTIA_API mtiaError_t mtiaGraphCaptureEnd(mtiaGraph_t graph);

/** Validates, orders and precomputes everything a replay needs. A graph with mtiaGraphKeepGraph may
 * be instantiated again (the previous executable is dropped; a replay in flight still completes).
 * Thread-safe, non-blocking, legal during capture (it enqueues nothing).
 * Errors: mtiaErrorInvalidHandle (graph), mtiaErrorIllegalState (no successful capture; already
 * instantiated without mtiaGraphKeepGraph), mtiaErrorInvalidValue (a node the device refuses,
 * named). A graph keeps the modules of its kernels loaded, so instantiating after mtiaModuleUnload
 * succeeds and replays run those kernels. */
MTIA_API mtiaError_t mtiaGraphInstantiate(mtiaGraph_t graph);

/** Launches graph on stream (NULL: the current stream of the graph's device) as one unit: it starts
 * after the work queued on stream before it, and work queued on stream afterwards waits for all of
 * it. Independent branches run concurrently on the device's engines. Replays of one graph never
 * overlap, whatever streams they are launched on. Instantiates first if needed
 * (mtiaGraphKeepGraph). Thread-safe; blocking: may block when the stream's queue is full (a replay
 * takes one queue entry per step of each stream it uses plus a wait per stream it joins: one for a
 * graph whose nodes form one chain, see mtia_runtime.h); while a replay waits for room, other calls
 * on the same graph wait for it; legal during capture on streams that do not take part in it.
 * Errors: mtiaErrorInvalidHandle (graph, stream), mtiaErrorIllegalState (no successful capture),
 * mtiaErrorInvalidValue (stream of another device), mtiaErrorStreamCaptureUnsupported (stream is
 * capturing; its capture is invalidated), mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaGraphReplay(mtiaGraph_t graph, mtiaStream_t stream);

/** Returns graph to Empty: ends a live capture (its streams stop capturing), drops the captured and
 * the instantiated graph and releases graph's use of its private pool, whose memory goes back to
 * the device once no block allocated from it is live and no other graph uses it. Idempotent. Blocks
 * until a replay in flight completed (blocking). Thread-safe, legal during capture (of this graph:
 * it ends it; of others: they are not disturbed). Errors: mtiaErrorInvalidHandle (graph). */
MTIA_API mtiaError_t mtiaGraphReset(mtiaGraph_t graph);

/** The id of graph's private pool, to share it with a later capture. Thread-safe, non-blocking,
 * legal during capture. Errors: mtiaErrorInvalidValue (pool NULL), mtiaErrorInvalidHandle (graph),
 * mtiaErrorIllegalState (no successful capture). */
MTIA_API mtiaError_t mtiaGraphGetPool(mtiaGraph_t graph, mtiaMemPoolId_t* pool);

/** Resets graph (see mtiaGraphReset) and destroys the handle. Accepts every state (never captured,
 * capturing, invalidated, failed, reset, replaying) from any thread and never fails for a live
 * handle. NULL is mtiaSuccess. Graphs never destroyed are listed in a warning at process exit.
 * Blocks until a replay in flight completed. Thread-safe, legal during capture.
 * Errors: mtiaErrorInvalidHandle (stale or foreign handle). */
MTIA_API mtiaError_t mtiaGraphDestroy(mtiaGraph_t graph);

/** Writes graph's captured graph (kept or instantiated) to dotPath as Graphviz DOT: every node with
 * its kind and parameters, every edge. Thread-safe, blocking (file I/O), legal during capture.
 * Errors: mtiaErrorInvalidValue (dotPath NULL, or the file cannot be written: the message says
 * why), mtiaErrorInvalidHandle (graph), mtiaErrorIllegalState (nothing captured). */
MTIA_API mtiaError_t mtiaGraphDebugDump(mtiaGraph_t graph, const char* dotPath);

/** Node and edge counts, state, pool and replay count of graph (mtiaGraphInfo). Writes at most
 * info->structSize bytes. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (info NULL or structSize 0), mtiaErrorInvalidHandle (graph). */
MTIA_API mtiaError_t mtiaGraphGetInfo(mtiaGraph_t graph, mtiaGraphInfo* info);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_GRAPH_H */
