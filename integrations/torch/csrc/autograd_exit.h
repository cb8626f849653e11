// Note [autograd threads at exit]: PyTorch's autograd engine runs an MTIA tensor's backward nodes
// on a device thread, which still holds the finished task's nodes for a moment after backward()
// returned. If the interpreter is finalizing by the time it drops them, and the last reference to a
// tensor with a Python object was among them, the thread takes the GIL, CPython ends the thread
// with pthread_exit, and the forced unwind through a noexcept frame in libtorch aborts the process
// ("terminate called without an active exception"; PyTorch issue 190489 names the decref path, and
// CUDA's device threads share it). Measured here: 1 exit in 12 (up to 6 in 20 under load) after a
// backward over an MTIA tensor.
//
// drainAutogradThreads, run from an atexit handler (the interpreter still whole), runs one small
// backward pass on every MTIA device whose allocator has memory, from C++ with tensors that never
// get a Python object: each device thread finishes its earlier task, releasing what it held while
// the GIL can still be taken, before it picks up this one; what it then holds has nothing of
// Python.
//
// Thread safety: call with the GIL held from one thread (atexit); it releases the GIL while the
// engine runs. Blocking: waits for the backward passes. Not legal during graph capture (atexit
// never runs inside one). Errors: none escape (a failing device is skipped; exit must go on).
#pragma once

namespace torch_mtia {

void drainAutogradThreads() noexcept;

}  // namespace torch_mtia
