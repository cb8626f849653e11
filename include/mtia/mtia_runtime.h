/* MTIA runtime C ABI: errors, version and init, devices, kernels, memory.
 *
 * Conventions that hold for every function below (docs/abi.md):
 * - Returns an mtiaError_t; results come back through out-parameters, which
 *   are written only on success. No exception crosses the boundary.
 * - Thread safety: callable from any thread concurrently unless stated.
 * - Every entry point initialises the runtime lazily. If initialisation
 *   failed (bad MTIA_* setting, driver refused), every call except the error
 *   and version functions and mtiaGetDeviceCount returns
 *   mtiaErrorInitializationError, and mtiaGetLastErrorMessage() says why.
 * - Called from a host function or kernel running on a device, every call
 *   except the error functions returns mtiaErrorNotPermitted.
 * - A failed call sets the thread's last-error message (names the call and
 *   the argument); success leaves it alone.
 * - "Capture": whether the call is legal while a stream is capturing a graph.
 */
#ifndef MTIA_RUNTIME_H
#define MTIA_RUNTIME_H

#include "mtia_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Errors ---------------------------------------------------------------- */

/** Symbolic name of a status ("mtiaErrorInvalidValue"); "unrecognized error code" for unknown values.
 * Never fails; returns a static string. Thread-safe, non-blocking, legal during capture. */
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
 * or driver failure; the message names the setting); mtiaErrorNotPermitted (from a host function). */
MTIA_API mtiaError_t mtiaInit(unsigned int flags);

/** Name of the loaded driver ("sim" for the simulated device). The string is static.
 * Thread-safe, non-blocking. Errors: mtiaErrorInvalidValue (name NULL), mtiaErrorInitializationError. */
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

/** The calling thread's current device (0 until set). Thread-local, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (dev NULL), mtiaErrorNoDevice. */
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

/** Blocks until all work queued on the current device has finished, then reports the device's sticky
 * fault if it has one. Thread-safe; blocking; not legal while a stream of the device is capturing.
 * Errors: mtiaErrorNoDevice, mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaDeviceSynchronize(void);

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
 * Errors: mtiaErrorInvalidValue (can NULL), mtiaErrorNoDevice, mtiaErrorInvalidDevice (dev or peer). */
MTIA_API mtiaError_t mtiaDeviceCanAccessPeer(int* can, int dev, int peer);

/** Lets kernels running on the current device access memory of peer. flags must be 0.
 * Thread-safe, non-blocking, not legal during capture.
 * Errors: mtiaErrorInvalidValue (flags), mtiaErrorInvalidDevice (peer out of range or the current
 * device), mtiaErrorIllegalState (already enabled), mtiaErrorNotSupported (peers cannot access). */
MTIA_API mtiaError_t mtiaDeviceEnablePeerAccess(int peer, unsigned int flags);

/** Revokes what mtiaDeviceEnablePeerAccess granted. Thread-safe, non-blocking, not legal during capture.
 * Errors: mtiaErrorInvalidDevice, mtiaErrorIllegalState (not enabled). */
MTIA_API mtiaError_t mtiaDeviceDisablePeerAccess(int peer);

/* ---- Kernels ---------------------------------------------------------------- */

/** Loads a kernel module (for the simulated device: a shared object whose kernels follow
 * <mtia/mtia_sim_kernel.h>). Modules are process-wide and launch on any device.
 * Thread-safe; blocks while loading; not legal during capture.
 * Errors: mtiaErrorInvalidValue (module or path NULL), mtiaErrorNotFound (cannot load path; the
 * message carries the loader's reason). */
MTIA_API mtiaError_t mtiaModuleLoad(mtiaModule_t* module, const char* path);

/** Unloads a module; its function handles become invalid at once, launches already queued still run.
 * mtiaModuleUnload(NULL) succeeds. Thread-safe, non-blocking, not legal during capture.
 * Errors: mtiaErrorInvalidHandle (stale, unloaded or foreign module). */
MTIA_API mtiaError_t mtiaModuleUnload(mtiaModule_t module);

/** Looks up a kernel by name in a module. Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (fn or name NULL), mtiaErrorInvalidHandle (module),
 * mtiaErrorNotFound (no kernel of that name, or it lacks its argument descriptor). */
MTIA_API mtiaError_t mtiaModuleGetFunction(mtiaFunction_t* fn, mtiaModule_t module, const char* name);

/** Looks up one of the runtime's built-in kernels (fill_f32, copy_f32, add_f32, mul_f32, scale_f32,
 * axpy_f32, relu_f32, reduce_sum_f32, matmul_f32, sleep_us; docs/abi.md lists their arguments).
 * The handle launches on any device and never becomes stale. Thread-safe, non-blocking, legal during
 * capture. Errors: mtiaErrorInvalidValue (fn or name NULL), mtiaErrorNotFound (unknown name). */
MTIA_API mtiaError_t mtiaGetBuiltinFunction(mtiaFunction_t* fn, const char* name);

/** Queues a kernel on stream (NULL: the current stream of the current device). args[i] points at the
 * i-th argument; the values are copied before the call returns. The kernel runs once per block of
 * grid; built-ins cover their whole range for any grid. Thread-safe, non-blocking.
 * Errors: mtiaErrorInvalidValue (grid or block dimension 0, block larger than maxThreadsPerBlock,
 * sharedMem above sharedMemPerBlock, args NULL for a kernel with arguments),
 * mtiaErrorInvalidHandle (fn or stream), mtiaErrorLaunchFailure (the device has a sticky fault). */
MTIA_API mtiaError_t mtiaLaunchKernel(mtiaFunction_t fn, mtiaDim3 grid, mtiaDim3 block, void** args,
                                      size_t sharedMem, mtiaStream_t stream);

/* ---- Memory ----------------------------------------------------------------- */

/** Allocates size bytes of device memory on the current device; size 0 gives *ptr = NULL.
 * Thread-safe; may block while the device allocates.
 * Errors: mtiaErrorInvalidValue (ptr NULL, or size too large to represent once rounded),
 * mtiaErrorMemoryAllocation (the device is out of memory), mtiaErrorNoDevice,
 * mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaMalloc(void** ptr, size_t size);

/** Frees memory from mtiaMalloc; mtiaFree(NULL) succeeds. Thread-safe; blocks until work already
 * queued on the owning device has finished, so no queued kernel can touch freed memory.
 * Errors: mtiaErrorInvalidValue (ptr is not the start of a live allocation: interior pointer,
 * double free, host pointer), mtiaErrorLaunchFailure (the owning device has a sticky fault; the memory
 * is released all the same, so do not free it again). */
MTIA_API mtiaError_t mtiaFree(void* ptr);

/** Copies count bytes and returns when the copy is done. It is ordered after earlier work on the
 * default stream of the device involved (the destination's, else the source's, else the current
 * device's). kind must match the pointers; mtiaMemcpyDefault infers it. Thread-safe; blocking.
 * Errors: mtiaErrorInvalidValue (dst or src NULL with count > 0, kind out of range, a pointer that
 * kind says is device memory but is not, or a device range that runs past its allocation),
 * mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaMemcpy(void* dst, const void* src, size_t count, mtiaMemcpyKind kind);

/** Sets count bytes of device memory at ptr to (unsigned char)value and returns when done; ordered on
 * the owning device's default stream. Thread-safe; blocking.
 * Errors: mtiaErrorInvalidValue (ptr not device memory, range past its allocation),
 * mtiaErrorLaunchFailure (sticky device fault). */
MTIA_API mtiaError_t mtiaMemset(void* ptr, int value, size_t count);

/** What ptr points at: device memory (device, base and size of the allocation it lies in; interior
 * pointers resolve), host memory registered with the runtime, or unregistered memory (success, type
 * mtiaMemoryTypeUnregistered). Set attr->structSize first (MTIA_POINTER_ATTRIBUTES_INIT).
 * Thread-safe, non-blocking, legal during capture.
 * Errors: mtiaErrorInvalidValue (attr NULL or structSize < 4). */
MTIA_API mtiaError_t mtiaPointerGetAttributes(mtiaPointerAttributes* attr, const void* ptr);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_RUNTIME_H */
