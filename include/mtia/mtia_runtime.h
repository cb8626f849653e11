/* MTIA runtime C ABI: errors, version and init, devices, streams, events, kernels, memory.
 *
 * Conventions that hold for every function below (docs/abi.md):
 * - Returns an mtiaError_t; results come back through out-parameters, which
 *   are written only on success. No exception crosses the boundary.
 * - Thread safety: callable from any thread concurrently unless stated.
 * - Every entry point initialises the runtime lazily. If initialisation
 *   failed (bad MTIA_* setting, driver refused), every call except the error
 *   and version functions and mtiaGetDeviceCount returns
 *   mtiaErrorInitializationError, and mtiaGetLastErrorMessage() says why.
 * - Fork: as in CUDA, a child forked from a process that had initialised the
 *   runtime cannot use it (the devices, memory, streams and queued work are
 *   the parent's). There every call behaves as after a failed initialisation:
 *   it returns mtiaErrorInitializationError at once, never blocks, and the
 *   message says so; mtiaGetDeviceCount reports 0 devices. A child forked
 *   before the first call, or one that execs, initialises a runtime of its
 *   own. The management functions of mtia_ml.h keep working in the child.
 * - Called from a host function or kernel running on a device, every call
 *   except the error functions returns mtiaErrorNotPermitted.
 * - A failed call sets the thread's last-error message (names the call and
 *   the argument); success leaves it alone.
 * - "Capture": whether the call is legal while a stream is capturing a graph.
 * - Launch queues are bounded, as CUDA's are: a stream holds at most a fixed
 *   number of commands that have not finished (the simulator:
 *   MTIA_SIM_QUEUE_DEPTH, default 1024). A call that queues work (kernels,
 *   async copies and fills, event records and waits, host functions, graph
 *   replays) and finds its stream's queue full blocks until there is room;
 *   such calls say "blocking: may block when the stream's queue is full".
 *   A graph replay takes one entry per step of each stream it uses, plus
 *   one wait per stream it joins (one entry for a graph whose nodes form
 *   one chain). Nothing blocks during
 *   capture (nothing is queued), and a sticky device fault ends the wait
 *   with mtiaErrorLaunchFailure.
 * - Sticky faults: once a command faults, its device runs nothing more and
 *   every call that reports the device's state fails with the fault's code
 *   until mtiaDeviceReset: mtiaErrorIllegalAddress for a kernel's memory
 *   fault (the simulator: SIGSEGV or SIGBUS raised by a kernel; the message
 *   gives the address and whether it is device memory), else
 *   mtiaErrorLaunchFailure (SIGFPE, SIGILL, abort() in a kernel, a fault the
 *   kernel reported, an exception, a bad copy). Where "mtiaErrorLaunchFailure
 *   (sticky fault)" is listed below, either code may come. Other devices are
 *   not affected.
 */
#ifndef MTIA_RUNTIME_H
#define MTIA_RUNTIME_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Errors ---------------------------------------------------------------- */

/** Symbolic name of a status ("mtiaErrorInvalidValue"); "unrecognized error code" for unknown
 * values. Never fails; returns a static string. Thread-safe, non-blocking, legal during capture. */
MTIA_API const char* mtiaGetErrorName(mtiaError_t error);

/** One-line description of a status. Never fails; returns a static string.
 * Thread-safe, non-blocking, legal during capture. */
MTIA_API const char* mtiaGetErrorString(mtiaError_t error);

/** Detail about the last failed call on this thread: which call, which argument, what was expected.
 * Never NULL ("" before any failure); library-owned, valid until the thread's next failing call.
 * It is never the way to detect failure and nothing needs clearing. Thread-local, non-blocking,
 * legal during capture. */
MTIA_API const char* mtiaGetLastErrorMessage(void);

/* ---- Version and init ------------------------------------------------------- */

/** The library's version (may differ from the MTIA_VERSION_* the caller compiled against).
 * Any out-pointer may be NULL to skip it. Never initialises the runtime. Thread-safe, non-blocking.
 * Errors: none. */
MTIA_API mtiaError_t mtiaRuntimeGetVersion(int* major, int* minor, int* patch);

/** Initialises the runtime now instead of lazily; idempotent. flags must be mtiaInitDefault.
 * Thread-safe; blocks while the driver loads; not legal during capture (nothing to capture).
 * Errors: mtiaErrorInvalidValue (flags has unknown bits); mtiaErrorInitializationError (bad setting
 * or driver failure; the message names the setting); mtiaErrorNotPermitted (from a host function).
 */
MTIA_API mtiaError_t mtiaInit(unsigned int flags);

/** Name of the loaded driver ("sim" for the simulated device). The string is static.
 * Thread-safe, non-blocking. Errors: mtiaErrorInvalidValue (name NULL),
 * mtiaErrorInitializationError. */
MTIA_API mtiaError_t mtiaDriverGetName(const char** name);

/* ---- Devices ---------------------------------------------------------------- */

/** Number of visible devices. Never fails for a non-NULL count: answers 0 when there are no devices
 * or initialisation failed, and never starts a device. Thread-safe, non-blocking, legal during
 * capture. Errors: mtiaErrorInvalidValue (count NULL). */
MTIA_API mtiaError_t mtiaGetDeviceCount(int* count);

/** Makes dev the calling thread's current device. Does not start the device.
 * Thread-local effect, non-blocking, legal during capture.
 * Errors: mtiaErrorNoDevice (no devices), mtiaErrorInvalidDevice (dev out of range). */
MTIA_API mtiaError_t mtiaSetDevice(int dev);

/** The calling thread's current device (0 until set). Thread-local, non-blocking, legal during
 * capture. Errors: mtiaErrorInvalidValue (dev NULL), mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaGetDevice(int* dev);

/** Sets the current device to dev and returns the previous one in *prev (PyTorch's exchangeDevice).
 * Thread-local, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (prev NULL), mtiaErrorNoDevice, mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiaExchangeDevice(int dev, int* prev);

/** Properties of dev. Set prop->structSize first (MTIA_DEVICE_PROP_INIT); at most structSize bytes
 * are written, bytes past what this library knows are zeroed. Does not start the device.
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (prop NULL or structSize < 4), mtiaErrorNoDevice,
 * mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiaGetDeviceProperties(mtiaDeviceProp* prop, int dev);

/** Blocks until all work queued on the current device has finished, then reports the device's
 * sticky fault if it has one. Thread-safe; blocking; not legal while a stream of the device is
 * capturing. Errors: mtiaErrorNoDevice, mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaDeviceSynchronize(void);

/** Resets the current device for this process, as cudaDeviceReset does: first waits for the work
 * running on it (a device with a sticky fault runs nothing more, so its queued commands complete at
 * once without running; on a healthy device everything queued runs to completion first), then
 * releases everything this process holds of the device: every allocation (mtiaMalloc and the
 * caching allocator's cached segments, graphs' private pools, IPC handles exported from it and
 * IPC mappings opened on it), every stream except the default stream, every event, every graph
 * captured on it; clears the sticky fault and the device's peer access; the device is then usable
 * again, as if freshly started. Handles of released objects answer mtiaErrorInvalidHandle from
 * then on (never a crash), and device pointers of released memory are unknown to the runtime
 * (mtiaFree answers mtiaErrorInvalidValue); a thread whose current stream on the device was
 * released falls back to the default stream, which stays valid. Modules and functions are the
 * process's, not a device's (one mtiaModuleLoad serves every device): they stay loaded and valid.
 * Pinned host memory stays. An IPC handle opened again after the reset maps afresh. Memory of
 * this process exported to other processes is released although they may still map it (their
 * reads and writes of it are undefined from then on, as with CUDA).
 * Thread-safe against other resets; calls of other threads that use the device while it resets
 * race with it (their objects may be released under them: they fail, they do not crash).
 * Blocking; not legal while a capture is live on the device; not from a host function or kernel.
 * Errors: mtiaErrorNoDevice, mtiaErrorStreamCaptureUnsupported (a stream of the device is
 * capturing; nothing is released), mtiaErrorNotSupported (the device has a sticky fault and its
 * driver is older than driver ABI 1.8, which cannot clear it; nothing is released),
 * mtiaErrorNotPermitted (called from a host function or kernel). */
MTIA_API mtiaError_t mtiaDeviceReset(void);

/** Stream priority range of the current device: lower number = higher priority, so
 * *greatest <= *least. Either pointer may be NULL. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaDeviceGetStreamPriorityRange(int* least, int* greatest);

/** Free and total memory of the current device, across every process using it.
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (free or total NULL), mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaMemGetInfo(size_t* free, size_t* total);

/** Whether kernels on dev can access memory of peer (*can = 1) or not (0; also for dev == peer).
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (can NULL), mtiaErrorNoDevice, mtiaErrorInvalidDevice (dev or
 * peer). */
MTIA_API mtiaError_t mtiaDeviceCanAccessPeer(int* can, int dev, int peer);

/** Lets kernels running on the current device access memory of peer. flags must be 0.
 * Thread-safe, non-blocking, not legal during capture.
 * Errors: mtiaErrorInvalidValue (flags), mtiaErrorInvalidDevice (peer out of range or the current
 * device), mtiaErrorIllegalState (already enabled), mtiaErrorNotSupported (peers cannot access). */
MTIA_API mtiaError_t mtiaDeviceEnablePeerAccess(int peer, unsigned int flags);

/** Revokes what mtiaDeviceEnablePeerAccess granted. Thread-safe, non-blocking, not legal during
 * capture. Errors: mtiaErrorInvalidDevice, mtiaErrorIllegalState (not enabled). */
MTIA_API mtiaError_t mtiaDeviceDisablePeerAccess(int peer);

/* ---- Streams ---------------------------------------------------------------- */
/* A stream is an in-order queue of device work on one device. Commands of one stream run one after
 * the other; different streams run concurrently and order only through events. Each device has one
 * default stream with no implicit synchronisation (CUDA's per-thread flavour). NULL as a stream
 * argument means the calling thread's current stream on the current device. */

/** Creates a stream on the current device with flags mtiaStreamDefault and the least priority (0).
 * Starts the device. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (stream NULL), mtiaErrorNoDevice, mtiaErrorLaunchFailure (the
 * device has a sticky fault). */
MTIA_API mtiaError_t mtiaStreamCreate(mtiaStream_t* stream);

/** Creates a stream on the current device with flags (mtiaStreamDefault or mtiaStreamNonBlocking;
 * with no legacy default stream both behave the same) and the least priority.
 * Thread-safe, non-blocking, legal during capture.
 * Errors: as mtiaStreamCreate, plus mtiaErrorInvalidValue (unknown flag bits). */
MTIA_API mtiaError_t mtiaStreamCreateWithFlags(mtiaStream_t* stream, unsigned int flags);

/** Creates a stream with a priority; lower number = higher priority. Priorities outside
 * mtiaDeviceGetStreamPriorityRange are clamped into it (mtiaStreamGetPriority tells the result).
 * Priority is a scheduling hint: when the device's engines are busy, ready work of more urgent
 * streams runs first; running work is never preempted. Thread-safe, non-blocking, legal during
 * capture. Errors: as mtiaStreamCreateWithFlags. */
MTIA_API mtiaError_t mtiaStreamCreateWithPriority(mtiaStream_t* stream, unsigned int flags,
                                                  int priority);

/** Destroys a stream and returns at once: work already queued still runs, and events recorded on it
 * still complete. The handle is invalid from now on. mtiaStreamDestroy(NULL) succeeds.
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (a device's default stream), mtiaErrorInvalidHandle (stale,
 * destroyed or foreign handle). */
MTIA_API mtiaError_t mtiaStreamDestroy(mtiaStream_t stream);

/** mtiaSuccess when every command queued on stream before the call has finished, else
 * mtiaErrorNotReady (a status: the last-error message is left alone). Thread-safe, non-blocking,
 * not legal on a capturing stream. Errors: mtiaErrorInvalidHandle, mtiaErrorLaunchFailure (the
 * stream's device has a sticky fault). */
MTIA_API mtiaError_t mtiaStreamQuery(mtiaStream_t stream);

/** Blocks until every command queued on stream before the call has finished, then reports the
 * device's sticky fault if any. Thread-safe; blocking; not legal on a capturing stream.
 * Errors: mtiaErrorInvalidHandle, mtiaErrorLaunchFailure. */
MTIA_API mtiaError_t mtiaStreamSynchronize(mtiaStream_t stream);

/** Makes all work queued on stream after this call wait for the work that event's latest record
 * captured at the time of this call (re-recording the event later changes nothing for this wait).
 * A never-recorded event makes this a no-op. The event may belong to another device. Never blocks
 * the host on device work. flags: mtiaEventWaitDefault or mtiaEventWaitExternal (meaningful during
 * capture only). Thread-safe; blocking: may block when the stream's queue is full; legal during
 * capture. Errors: mtiaErrorInvalidValue (unknown flag bits), mtiaErrorInvalidHandle (stream or
 * event), mtiaErrorLaunchFailure (the stream's device has a sticky fault). */
MTIA_API mtiaError_t mtiaStreamWaitEvent(mtiaStream_t stream, mtiaEvent_t event,
                                         unsigned int flags);

/** The stream's priority, after clamping. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (priority NULL), mtiaErrorInvalidHandle. */
MTIA_API mtiaError_t mtiaStreamGetPriority(mtiaStream_t stream, int* priority);

/** The flags the stream was created with. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (flags NULL), mtiaErrorInvalidHandle. */
MTIA_API mtiaError_t mtiaStreamGetFlags(mtiaStream_t stream, unsigned int* flags);

/** The device the stream belongs to. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (dev NULL), mtiaErrorInvalidHandle. */
MTIA_API mtiaError_t mtiaStreamGetDevice(mtiaStream_t stream, int* dev);

/** A process-unique id of the stream (> 0, never reused), for frameworks that rebuild streams from
 * integers; mtiaStreamFromId turns it back into the handle. Thread-safe, non-blocking, legal during
 * capture. Errors: mtiaErrorInvalidValue (id NULL), mtiaErrorInvalidHandle. */
MTIA_API mtiaError_t mtiaStreamGetId(mtiaStream_t stream, int64_t* id);

/** The stream whose id is id. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (stream NULL), mtiaErrorInvalidHandle (no live stream has that id:
 * never given out, or the stream was destroyed). */
MTIA_API mtiaError_t mtiaStreamFromId(int64_t id, mtiaStream_t* stream);

/** The calling thread's current stream on device dev (-1: the current device); the device's default
 * stream unless mtiaSetCurrentStream changed it. Thread-local, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (stream NULL), mtiaErrorNoDevice, mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiaGetCurrentStream(int dev, mtiaStream_t* stream);

/** Makes stream the calling thread's current stream on the stream's device, without changing the
 * current device. NULL (the current stream) changes nothing. Thread-local, non-blocking, legal
 * during capture. Errors: mtiaErrorInvalidHandle. */
MTIA_API mtiaError_t mtiaSetCurrentStream(mtiaStream_t stream);

/** The default stream of device dev (-1: the current device). Starts the device.
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (stream NULL), mtiaErrorNoDevice, mtiaErrorInvalidDevice. */
MTIA_API mtiaError_t mtiaGetDefaultStream(int dev, mtiaStream_t* stream);

/** Queues fn(userData) on stream: it runs once, on a runtime thread, after all earlier work of the
 * stream finished, and later work of the stream waits until it returns. Host functions of different
 * streams may run one after the other on the same thread, so fn must not wait for other host
 * functions or device work not ordered before it. Any runtime call from fn returns
 * mtiaErrorNotPermitted. If fn throws (C++), the device gets a sticky fault that the next
 * synchronising call reports. Thread-safe; blocking: may block when the stream's queue is full
 * (never from a host function, which may not call the runtime anyway). Errors:
 * mtiaErrorInvalidValue (fn NULL), mtiaErrorInvalidHandle (stream), mtiaErrorLaunchFailure (the
 * device has a sticky fault). */
MTIA_API mtiaError_t mtiaLaunchHostFunc(mtiaStream_t stream, void (*fn)(void* userData),
                                        void* userData);

/* ---- Events ----------------------------------------------------------------- */
/* An event marks a point in a stream. Recording snapshots all work queued on the stream so far; the
 * event completes when that work has finished. A never-recorded event is complete. An event belongs
 * to the device current when it was created. */

/** Creates an event with mtiaEventDefault (timing enabled) on the current device.
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (event NULL), mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaEventCreate(mtiaEvent_t* event);

/** Creates an event with flags: mtiaEventBlockingSync (mtiaEventSynchronize sleeps instead of
 * polling), mtiaEventDisableTiming (no timestamps: cheaper record), mtiaEventInterprocess
 * (shareable with other processes; requires mtiaEventDisableTiming). Thread-safe, non-blocking,
 * legal during capture. Errors: mtiaErrorInvalidValue (event NULL, unknown flag bits,
 * mtiaEventInterprocess without mtiaEventDisableTiming), mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaEventCreateWithFlags(mtiaEvent_t* event, unsigned int flags);

/** Records event on stream: a snapshot of all work queued on the stream so far, replacing the
 * event's previous record (waits already issued keep the record they saw). Thread-safe; blocking:
 * may block when the stream's queue is full; legal during capture.
 * Errors: mtiaErrorInvalidHandle (event or stream stale, destroyed or foreign, or the stream
 * belongs to another device than the event), mtiaErrorLaunchFailure (the device has a sticky
 * fault). */
MTIA_API mtiaError_t mtiaEventRecord(mtiaEvent_t event, mtiaStream_t stream);

/** mtiaSuccess when the work of the event's latest record has finished (or it was never recorded),
 * else mtiaErrorNotReady (a status: the last-error message is left alone). Thread-safe,
 * non-blocking, not legal on an event recorded during a live capture.
 * Errors: mtiaErrorInvalidHandle, mtiaErrorLaunchFailure (the event's device has a sticky fault).
 */
MTIA_API mtiaError_t mtiaEventQuery(mtiaEvent_t event);

/** Blocks until the work of the event's latest record (as of the call) has finished; returns at
 * once for a never-recorded event. Blocking-sync events sleep while they wait; others poll briefly
 * first. Thread-safe; blocking; not legal on an event recorded during a live capture. Errors:
 * mtiaErrorInvalidHandle, mtiaErrorLaunchFailure. */
MTIA_API mtiaError_t mtiaEventSynchronize(mtiaEvent_t event);

/** Milliseconds from start's record to end's record (resolution 1 ns), as the signed difference of
 * the two completion timestamps: end recorded before start, or on another stream, can give a
 * negative value. Thread-safe, non-blocking, legal during capture. Errors: mtiaErrorInvalidValue
 * (ms NULL, or the events belong to different devices), mtiaErrorInvalidHandle (either event stale
 * or destroyed, created with mtiaEventDisableTiming, or never recorded), mtiaErrorNotReady (either
 * record has not finished; the call does not block), mtiaErrorLaunchFailure (sticky device fault).
 */
MTIA_API mtiaError_t mtiaEventElapsedTime(float* ms, mtiaEvent_t start, mtiaEvent_t end);

/** Destroys an event at any time: pending records still complete and streams waiting on them are
 * still released. mtiaEventDestroy(NULL) succeeds. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidHandle (stale, destroyed or foreign). */
MTIA_API mtiaError_t mtiaEventDestroy(mtiaEvent_t event);

/* ---- Kernels ---------------------------------------------------------------- */

/** Loads a kernel module (for the simulated device: a shared object whose kernels follow
 * <mtia/mtia_sim_kernel.h>). Modules are process-wide and launch on any device.
 * Thread-safe; blocks while loading; not legal during capture.
 * Errors: mtiaErrorInvalidValue (module or path NULL, path empty), mtiaErrorNotFound (cannot load
 * path; the message carries the loader's reason). */
MTIA_API mtiaError_t mtiaModuleLoad(mtiaModule_t* module, const char* path);

/** Unloads a module; its function handles become invalid at once, launches already queued still
 * run. Graphs that captured its kernels keep the module loaded: they still instantiate and replay.
 * mtiaModuleUnload(NULL) succeeds. Thread-safe, non-blocking, not legal during capture.
 * Errors: mtiaErrorInvalidHandle (stale, unloaded or foreign module). */
MTIA_API mtiaError_t mtiaModuleUnload(mtiaModule_t module);

/** Looks up a kernel by name in a module. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (fn or name NULL), mtiaErrorInvalidHandle (module),
 * mtiaErrorNotFound (no kernel of that name, or it lacks its argument descriptor). */
MTIA_API mtiaError_t mtiaModuleGetFunction(mtiaFunction_t* fn, mtiaModule_t module,
                                           const char* name);

/** Looks up one of the runtime's built-in kernels (fill_f32, copy_f32, add_f32, mul_f32, scale_f32,
 * axpy_f32, relu_f32, reduce_sum_f32, matmul_f32, sleep_us, noop; docs/abi.md lists their
 * arguments). The handle launches on any device and never becomes stale. Thread-safe, non-blocking,
 * legal during capture. Errors: mtiaErrorInvalidValue (fn or name NULL), mtiaErrorNotFound (unknown
 * name). */
MTIA_API mtiaError_t mtiaGetBuiltinFunction(mtiaFunction_t* fn, const char* name);

/** Queues a kernel on stream (NULL: the current stream of the current device). args[i] points at
 * the i-th argument; the values are copied before the call returns. The kernel runs once per block
 * of grid; built-ins cover their whole range for any grid. Thread-safe; blocking: may block when
 * the stream's queue is full. Errors: mtiaErrorInvalidValue (grid or block dimension 0, block
 * larger than maxThreadsPerBlock, sharedMem above sharedMemPerBlock, args NULL for a kernel with
 * arguments; a kernel limit of the device: more arguments than maxKernelArgs, more bytes of them
 * than maxKernelArgBytes, or top-level pointer arguments naming more distinct allocations of the
 * stream's device than maxKernelBuffers, checked at capture too; the message names the limit and
 * the value), mtiaErrorInvalidHandle (fn or stream), mtiaErrorLaunchFailure (the device has a
 * sticky fault). */
MTIA_API mtiaError_t mtiaLaunchKernel(mtiaFunction_t fn, mtiaDim3 grid, mtiaDim3 block, void** args,
                                      size_t sharedMem, mtiaStream_t stream);

/* Options of mtiaBenchmarkKernel; MTIA_BENCHMARK_OPTIONS_INIT zeroes the rest. */
typedef struct mtiaBenchmarkOptions {
    uint32_t structSize;
    uint32_t warmup;      /* untimed launches before the timed ones */
    uint32_t repetitions; /* timed launches (>= 1): timesMs has this many entries */
    uint32_t flushCache;  /* nonzero: before each timed launch, the stream writes a buffer of the
                             device's l2CacheSize bytes (not timed) */
} mtiaBenchmarkOptions;
#define MTIA_BENCHMARK_OPTIONS_INIT MTIA_STRUCT_INIT(mtiaBenchmarkOptions)

/** Times a kernel as Triton's do_bench does, for callers without Python (autotuners, compilers).
 * Launches f as mtiaLaunchKernel would (same checks and limits) options->warmup times, then for
 * each of options->repetitions: (with flushCache, writes a buffer of the device's l2CacheSize bytes
 * on the stream, from the caching allocator, reused by later calls; nothing when l2CacheSize is 0),
 * records a timing event, launches, records an event. Synchronizes the stream once at the end and
 * writes repetition i's elapsed milliseconds (device event timing) to timesMs[i]. Every event and
 * buffer it made is released before it returns, on success and on failure.
 * options->structSize may be smaller than this struct (fields past it count as 0) but not below
 * the first three fields.
 * Thread-safe; blocking; not legal during capture (on a capturing stream, or while a Global capture
 * of another thread runs on the device: mtiaErrorStreamCaptureUnsupported, and the capture is
 * invalidated, as for mtiaStreamSynchronize). Errors: mtiaErrorInvalidValue (options or timesMs
 * NULL, options->structSize too small, repetitions 0, and mtiaLaunchKernel's launch errors,
 * including a kernel limit), mtiaErrorInvalidHandle (f or stream), mtiaErrorMemoryAllocation (the
 * flush buffer), mtiaErrorStreamCaptureUnsupported, mtiaErrorLaunchFailure or
 * mtiaErrorIllegalAddress (a sticky device fault, before or during the runs; timesMs is then not
 * written). */
MTIA_API mtiaError_t mtiaBenchmarkKernel(mtiaFunction_t f, mtiaDim3 grid, mtiaDim3 block,
                                         void** args, size_t sharedMem, mtiaStream_t stream,
                                         const mtiaBenchmarkOptions* options, float* timesMs);

/* ---- Memory ----------------------------------------------------------------- */

/** Allocates size bytes of device memory on the current device from the caching allocator, for use
 * on the current stream (a block freed later is reused first by allocations on that stream). size 0
 * gives *ptr = NULL. A request is served from cached blocks when one fits; otherwise the device
 * allocates, and on failure the out-of-memory ladder runs (free-memory callbacks, garbage
 * collection, freeing cached blocks, waiting for pending cross-stream frees, searching the cache
 * again) before mtiaErrorMemoryAllocation. On a stream routed to a private pool
 * (mtiaMemPoolBeginAllocateToPool, graph capture) the block comes from that pool. Thread-safe; may
 * block (device allocation, waiting for streams on the out-of-memory path); legal during capture
 * (served from the capture's private pool). Errors: mtiaErrorInvalidValue (ptr NULL, or size too
 * large to represent once rounded), mtiaErrorMemoryAllocation (out of memory; the message gives the
 * request, the device's total and free memory, what this process has allocated, reserved but
 * unallocated, holds in private pools, and the largest cached free block), mtiaErrorNoDevice,
 * mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaMalloc(void** ptr, size_t size);

/** mtiaMalloc for use on stream (NULL: the current stream of the current device) on that stream's
 * device. Thread-safe; may block as mtiaMalloc; legal during capture.
 * Errors: as mtiaMalloc, plus mtiaErrorInvalidHandle (stream). */
MTIA_API mtiaError_t mtiaMallocAsync(void** ptr, size_t size, mtiaStream_t stream);

/** Returns memory from mtiaMalloc/mtiaMallocAsync to the caching allocator; mtiaFree(NULL)
 * succeeds. Stream-ordered: the block is reused at once by later allocations on the stream it was
 * allocated for (their work runs after the work already queued there), and by other streams only
 * after the streams named with mtiaRecordStream have finished the work queued before this call.
 * Never waits for the device. Thread-safe, non-blocking, legal during capture. Errors:
 * mtiaErrorInvalidValue (ptr is not the start of a live allocation: interior pointer, double free,
 * host pointer; the message says which). */
MTIA_API mtiaError_t mtiaFree(void* ptr);

/** Marks the allocation starting at ptr as used by stream (NULL: the current stream), so that after
 * mtiaFree it is not reused until the work queued on stream before the free has finished. Uses on
 * the allocating stream change nothing. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (ptr not the start of a live allocation), mtiaErrorInvalidHandle
 * (stream). */
MTIA_API mtiaError_t mtiaRecordStream(void* ptr, mtiaStream_t stream);

/** Copies count bytes and returns when the copy is done. It is ordered after earlier work on the
 * default stream of the device involved (the destination's, else the source's, else the current
 * device's). kind must match the pointers; mtiaMemcpyDefault infers it. Thread-safe; blocking.
 * Errors: mtiaErrorInvalidValue (dst or src NULL with count > 0, kind out of range, a pointer that
 * kind says is device memory but is not, a pointer inside a device's address range but in no live
 * allocation (whatever kind says), or a device range that runs past its allocation),
 * mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaMemcpy(void* dst, const void* src, size_t count, mtiaMemcpyKind kind);

/** Sets count bytes of device memory at ptr to (unsigned char)value and returns when done; ordered
 * on the owning device's default stream. Thread-safe; blocking. Errors: mtiaErrorInvalidValue (ptr
 * not device memory, range past its allocation), mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaMemset(void* ptr, int value, size_t count);

/** Copies count bytes in stream order on stream (NULL: the current stream). kind as for mtiaMemcpy;
 * device ranges may lie on any device. Device-to-device copies return at once. A copy from or to
 * host memory that is not pinned (mtiaMallocHost) returns once the copy is done, as CUDA does for
 * pageable memory, so the caller may reuse the host buffer at once. A copy whose host ranges lie
 * inside live mtiaMallocHost allocations returns at once, and stream is recorded for that memory as
 * mtiaHostRecordStream does, so it may be freed right away. Thread-safe; see above for blocking,
 * and blocking: may block when the stream's queue is full; legal during capture (device-to-device).
 * Errors: as mtiaMemcpy, plus mtiaErrorInvalidHandle (stream). */
MTIA_API mtiaError_t mtiaMemcpyAsync(void* dst, const void* src, size_t count, mtiaMemcpyKind kind,
                                     mtiaStream_t stream);

/** Sets count bytes of device memory at ptr to (unsigned char)value in stream order; returns at
 * once. Thread-safe; blocking: may block when the stream's queue is full; legal during capture. The
 * memory may belong to another device than stream only if stream's device has peer access to it
 * (mtiaDeviceEnablePeerAccess), as for kernels.
 * Errors: as mtiaMemset, plus mtiaErrorInvalidHandle (stream), mtiaErrorInvalidValue (ptr is memory
 * of another device, to which stream's device has no peer access). */
MTIA_API mtiaError_t mtiaMemsetAsync(void* ptr, int value, size_t count, mtiaStream_t stream);

/** Copies count bytes from device memory src of device srcDev to device memory dst of device dstDev
 * in stream order on stream (of any device); returns at once. Thread-safe; blocking: may block when
 * the stream's queue is full; legal during capture. Errors: mtiaErrorInvalidValue (dst or src NULL,
 * not device memory of the named device, or a range past its allocation, or overlapping ranges),
 * mtiaErrorInvalidDevice (dstDev or srcDev), mtiaErrorInvalidHandle (stream),
 * mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaMemcpyPeerAsync(void* dst, int dstDev, const void* src, int srcDev,
                                         size_t count, mtiaStream_t stream);

/** What ptr points at: device memory (device, base and size of the allocation it lies in; interior
 * pointers resolve), pinned host memory from mtiaMallocHost (type mtiaMemoryTypeHost, device -1,
 * base and size of the allocation, locked 1 when it is page-locked), or unregistered memory
 * (success, type mtiaMemoryTypeUnregistered; also freed memory). Set attr->structSize first
 * (MTIA_POINTER_ATTRIBUTES_INIT). Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (attr NULL or structSize < 4). */
MTIA_API mtiaError_t mtiaPointerGetAttributes(mtiaPointerAttributes* attr, const void* ptr);

/* ---- Pinned host memory ----------------------------------------------------- */

/** Allocates size bytes of page-locked host memory from the caching pinned-host allocator, placed
 * on the host NUMA node nearest the current device (where the host has NUMA). Memory is locked when
 * the RLIMIT_MEMLOCK limit allows; mtiaPointerGetAttributes reports it as host memory either way.
 * size 0 gives *ptr = NULL. Thread-safe; may block (the operating system allocates); legal during
 * capture. Errors: mtiaErrorInvalidValue (ptr NULL, size too large), mtiaErrorMemoryAllocation (the
 * host is out of memory), mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaMallocHost(void** ptr, size_t size);

/** Returns memory from mtiaMallocHost to the pinned cache; mtiaFreeHost(NULL) succeeds. The memory
 * is reused only after the work queued before this call on every stream named with
 * mtiaHostRecordStream has finished. Thread-safe, non-blocking, legal during capture. Errors:
 * mtiaErrorInvalidValue (ptr not the start of a live mtiaMallocHost allocation). */
MTIA_API mtiaError_t mtiaFreeHost(void* ptr);

/** Marks pinned memory (any pointer inside an mtiaMallocHost allocation) as used by stream (NULL:
 * the current stream). Thread-safe, non-blocking, legal during capture. Errors:
 * mtiaErrorInvalidValue (hostPtr not inside a live mtiaMallocHost allocation),
 * mtiaErrorInvalidHandle (stream). */
MTIA_API mtiaError_t mtiaHostRecordStream(void* hostPtr, mtiaStream_t stream);

/* ---- Caching allocator control -------------------------------------------- */

/** Frees every cached device block that is not in use, on every device, back to the device, after
 * waiting for pending cross-stream frees; segments that still hold a live block stay. Private pools
 * keep their memory unless released (mtiaMemPoolRelease). Also empties the pinned host cache.
 * Thread-safe; blocks (waits for the devices' queued work); not legal while a capture is active on
 * a device (mtiaErrorIllegalState there, others are emptied).
 * Errors: mtiaErrorLaunchFailure (a device has a sticky fault; its cache is freed all the same),
 * mtiaErrorIllegalState (capture active). */
MTIA_API mtiaError_t mtiaEmptyCache(void);

/** Applies allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax ("key:value,key:value", lists in
 * brackets, booleans True/False) on top of the current ones, for every device; nothing is applied
 * when any part is bad. Keys: max_split_size_mb, max_non_split_rounding_mb,
 * garbage_collection_threshold, roundup_power2_divisions, expandable_segments,
 * per_process_memory_fraction, release_lock_on_device_malloc (alias release_lock_on_cudamalloc),
 * pinned_use_background_threads. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (conf NULL, unknown key, bad value, contradictory combination such
 * as max_split_size_mb with expandable_segments:True; the message names the key). */
MTIA_API mtiaError_t mtiaAllocatorSetConfig(const char* conf);

/** Writes the effective settings, NUL-terminated, in MTIA_ALLOC_CONF syntax. Thread-safe,
 * non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (buf NULL, or len too small: nothing is written past len). */
MTIA_API mtiaError_t mtiaAllocatorGetConfig(char* buf, size_t len);

/** Limits this process's reserved device memory on dev to fraction x total; a device allocation
 * that would exceed it is treated as out of memory. Thread-safe, non-blocking, legal during
 * capture. Errors: mtiaErrorInvalidValue (fraction not in [0, 1]), mtiaErrorInvalidDevice,
 * mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaSetMemoryFraction(double fraction, int dev);

/** Copies the caching allocator's statistics of dev (set out->structSize first,
 * MTIA_MEMORY_STATS_INIT). As in PyTorch, a block freed while other streams may still use it
 * (mtiaRecordStream) leaves allocation and allocated_bytes at the free but stays in active,
 * active_bytes and requested_bytes until it is really free, so these agree with a snapshot's
 * segment sums (active_size, requested_size) at every moment. Thread-safe, non-blocking, legal
 * during capture. Errors: mtiaErrorInvalidValue (out NULL or structSize < 4),
 * mtiaErrorInvalidDevice, mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaMemoryGetStats(int dev, mtiaMemoryStats* out);

/** Sets every peak of dev's statistics to its current value. Thread-safe, non-blocking, legal
 * during capture. Errors: mtiaErrorInvalidDevice, mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaMemoryResetPeakStats(int dev);

/** Zeroes the allocated/freed totals and the event counters (retries, OOMs, syncs, device
 * allocations and frees) of dev. Thread-safe, non-blocking, legal during capture. Errors:
 * mtiaErrorInvalidDevice, mtiaErrorNoDevice. */
MTIA_API mtiaError_t mtiaMemoryResetAccumulatedStats(int dev);

/** Calls cb(dev, requested, total, free, user) whenever an allocation is about to fail with
 * mtiaErrorMemoryAllocation, before the failing call returns, on the failing thread, with no
 * runtime lock held (cb may allocate and free). requested is the rounded size, total the device's
 * memory (or the memory-fraction limit when set), free what the device has left. Observers stay
 * attached for the life of the process. Thread-safe, non-blocking, legal during capture. Errors:
 * mtiaErrorInvalidValue (cb NULL). */
MTIA_API mtiaError_t mtiaAttachOutOfMemoryObserver(
    void (*cb)(int dev, size_t requested, size_t total, size_t free, void* user), void* user);

/** Registers a callback that the allocator calls, with no runtime lock held, before it gives up on
 * a request that nothing cached serves: cb(dev, requested, user) frees what it can (a library's
 * workspace cache, say) and returns nonzero when it freed something, and the allocator searches its
 * cache again. Stays registered for the life of the process. Thread-safe, non-blocking, legal
 * during capture. Errors: mtiaErrorInvalidValue (cb NULL). */
MTIA_API mtiaError_t mtiaAttachFreeMemoryCallback(int (*cb)(int dev, size_t requested, void* user),
                                                  void* user);

/* ---- Memory pools ----------------------------------------------------------- */

/** A fresh pool id {0, n}, never returned before, for a private pool that graphs or users share.
 * Thread-safe, non-blocking, legal during capture. Errors: mtiaErrorInvalidValue (id NULL). */
MTIA_API mtiaError_t mtiaGraphPoolHandle(mtiaMemPoolId_t* id);

/** Routes allocations on dev to the private pool id (created on first use; a pool already in use
 * gains one more user): with a NULL filter, every allocation of the calling thread on dev; with a
 * stream, every allocation made on that stream from any thread (graph capture), and while such a
 * stream route exists the allocator neither queries events nor frees memory to the device. Blocks
 * of a private pool never serve other pools. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (id {0,0}, or filter is a stream of another device),
 * mtiaErrorInvalidDevice, mtiaErrorNoDevice, mtiaErrorInvalidHandle (filter), mtiaErrorIllegalState
 * (the filter is already routed to a pool). */
MTIA_API mtiaError_t mtiaMemPoolBeginAllocateToPool(int dev, mtiaMemPoolId_t id,
                                                    mtiaStream_t filter);

/** Ends the routes to pool id on dev that the calling thread opened with a NULL filter and every
 * stream route to it. The pool keeps its memory. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidDevice, mtiaErrorNoDevice, mtiaErrorNotFound (no route to id on dev). */
MTIA_API mtiaError_t mtiaMemPoolEndAllocateToPool(int dev, mtiaMemPoolId_t id);

/** Drops one user of pool id on dev; with the last user gone, its cached segments go back to the
 * device now and the rest as soon as their last live block is freed (no emptyCache needed). Blocks
 * still live stay valid until freed. Thread-safe; may block (waits for the device before freeing
 * memory); legal during capture.
 * Errors: mtiaErrorInvalidDevice, mtiaErrorNoDevice, mtiaErrorNotFound (no such pool on dev, or it
 * was already released by all its users). */
MTIA_API mtiaError_t mtiaMemPoolRelease(int dev, mtiaMemPoolId_t id);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_RUNTIME_H */
