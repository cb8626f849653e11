/* MTIA runtime C ABI: memory history recording and snapshots.
 *
 * With recording on, the caching allocator remembers who allocated each live block (mode State)
 * and, in mode All, keeps a ring of its last actions: alloc, free_requested, free_completed,
 * segment_alloc, segment_free, segment_map, segment_unmap, snapshot, oom, each with address, size,
 * stream, pool id, device and a microsecond timestamp. Streams are written as their
 * mtiaStreamGetId, except a device's default stream, which is 0 (as PyTorch writes it) in trace
 * entries and segments alike. A snapshot is PyTorch 2.x's memory snapshot dict (segments with their
 * blocks, one trace per device, allocator_settings, external_annotations), in JSON or as a pickle
 * that PyTorch's memory viewer (MemoryViz.js) and torch.cuda.memory._memory_viz read; the mtia-mem
 * tool summarises, diffs and plots it.
 *
 * Stacks: C++ frames are captured as return addresses only, outside the allocator lock, and turned
 * into names when a snapshot is taken (with a cache; function names come from each module's symbol
 * table, so functions that are not exported are named too; the frame's filename is the module's
 * path and its line is 0: there is no debug-information reader). The frames start at the runtime's
 * API function (mtiaMalloc, ...); the runtime's own internals above it are left out. A framework
 * (Python) hands in a context provider that captures an opaque id per allocation and resolves it to
 * frames at snapshot time. With both, the C++ frames come first (innermost first), then the
 * framework's.
 *
 * Recording off (the default) costs one relaxed atomic load per allocation and free.
 */
#ifndef MTIA_MEMORY_HISTORY_H
#define MTIA_MEMORY_HISTORY_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Receives one frame from mtiaContextProvider.resolve; the strings are copied before it returns.
 */
typedef void (*mtiaFrameSink)(void* sink, const char* filename, int64_t line, const char* name);

/** A framework's stack provider (set structSize = sizeof(mtiaContextProvider)).
 * - capture(user): called on the allocating thread, before the allocator takes its lock, for each
 *   allocation while recording with framework stacks; returns an opaque id (0: no context).
 * - resolve(user, id, emit, sink): called while a snapshot is taken, with no allocator lock held,
 *   once per distinct live id; calls emit(sink, filename, line, name) per frame, innermost first.
 * - release(user, id): called exactly once per id capture returned (other than 0), when nothing
 *   refers to it any more (its block was freed and its trace entries left the ring, recording was
 *   turned off, or the provider was replaced), on whatever thread drops the last reference, never
 *   with an allocator lock held.
 * The callbacks may call the runtime (allocate, free) but must not call
 * mtiaMemorySetContextProvider or mtiaMemoryRecordHistory. release may be NULL. */
typedef struct mtiaContextProvider {
    uint32_t structSize;
    void* user;
    uint64_t (*capture)(void* user);
    void (*resolve)(void* user, uint64_t id, mtiaFrameSink emit, void* sink);
    void (*release)(void* user, uint64_t id);
} mtiaContextProvider;

/** Turns history recording on or off for every device of the process.
 * mode: mtiaHistoryOff (forget everything recorded: trace rings and the contexts of live blocks),
 * mtiaHistoryState (remember the allocation context of live blocks only), mtiaHistoryAll (also a
 * ring of the last maxEntries actions per device; 0 means 100000, never unbounded). stacks: which
 * frames a context holds (mtiaStacksNone, Cpp, Framework, All; Framework needs a provider, else no
 * frames). Calling it again changes the settings: a smaller ring keeps the newest entries,
 * switching stacks applies to later allocations. Blocks allocated before recording began have no
 * frames. Thread-safe, non-blocking (calls release for what it forgets), legal during capture.
 * Errors: mtiaErrorInvalidValue (mode or stacks out of range; the message names the argument),
 * mtiaErrorMemoryAllocation (host memory for the ring). */
MTIA_API mtiaError_t mtiaMemoryRecordHistory(mtiaHistoryMode mode, mtiaStackMode stacks,
                                             size_t maxEntries);

/** Sets the framework's context provider (copied; NULL removes it). While ids the current provider
 * captured are still held (recorded allocations, trace entries), replacing or removing it is
 * refused: turn recording off first, which releases them. Ids dropped but not yet released go back
 * through the current provider before the change. Thread-safe; blocks until callbacks of the
 * current provider in other threads returned, so call it without holding a lock those callbacks
 * take (Python: release the GIL); legal during capture. Errors: mtiaErrorInvalidValue
 * (provider->structSize too small, provider->capture or provider->resolve NULL),
 * mtiaErrorIllegalState (ids of the current provider are held). */
MTIA_API mtiaError_t mtiaMemorySetContextProvider(const mtiaContextProvider* provider);

/** Appends an annotation {name: key, value, stage, device, time_us} to the snapshot's
 * external_annotations, and sets the user_metadata of the calling thread's later trace entries to
 * "key=value" (stage "START"). value NULL or "" ends it: stage "END", user_metadata "" again. The
 * newest 100000 annotations are kept, whether or not recording is on. Thread-safe, non-blocking,
 * legal during capture. Errors: mtiaErrorInvalidValue (key NULL or empty). */
MTIA_API mtiaError_t mtiaMemoryAnnotate(const char* key, const char* value);

/** Takes a snapshot of every device this process has used: segments sorted by address with their
 * blocks (states active_allocated, active_pending_free, inactive; block sizes add up to the
 * segment's total_size; an expandable segment appears as one segment per mapped range), the frames
 * of each block's and segment's allocation, device_traces (one list per device; the recorded ring
 * when flags has mtiaSnapshotIncludeTraces and recording is mtiaHistoryAll, else empty lists: a
 * fast snapshot), allocator_settings and external_annotations. With recording on, a "snapshot"
 * entry (size = active bytes) is added to each device's trace first. fmt: mtiaSnapshotJson or
 * mtiaSnapshotPickle (protocol 4, only the opcodes MemoryViz.js reads). out receives malloc'd
 * bytes; free them with mtiaBufferFree. Thread-safe; blocks while copying each device's state (its
 * allocator lock) and while the provider resolves frames; legal during capture (it queries no
 * stream). Errors: mtiaErrorInvalidValue (out NULL, fmt or flags unknown),
 * mtiaErrorMemoryAllocation (host memory), mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaMemorySnapshot(mtiaSnapshotFormat fmt, unsigned int flags,
                                        mtiaBuffer* out);

/** Frees what mtiaMemorySnapshot returned and sets buf to {NULL, 0}; NULL or an empty buffer is a
 * no-op. Thread-safe, non-blocking, legal during capture. Errors: none (returns mtiaSuccess). */
MTIA_API mtiaError_t mtiaBufferFree(mtiaBuffer* buf);

/** mtiaMemorySnapshot written to the file path (created or truncated, mode 0644 less the umask).
 * Thread-safe; blocking (as mtiaMemorySnapshot, plus the write); legal during capture.
 * Errors: as mtiaMemorySnapshot, plus mtiaErrorInvalidValue (path NULL or empty, or the file cannot
 * be written: the message gives the path and the system's reason). */
MTIA_API mtiaError_t mtiaMemoryDumpSnapshot(const char* path, mtiaSnapshotFormat fmt,
                                            unsigned int flags);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_MEMORY_HISTORY_H */
