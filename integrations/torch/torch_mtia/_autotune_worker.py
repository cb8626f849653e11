"""The tuning pool's worker process (torch_mtia.autotune says what it is for).

Run as a script by the pool, never imported by torch_mtia: it imports neither torch nor the
torch_mtia package (start-up cost; and after a device reset torch's caching allocator would hold
pointers the reset released). It drives libmtia.so through ctypes on one device:

    python -I -S _autotune_worker.py <job fd> <result fd> <parent pid>

Messages are pickles, each behind its length (8 bytes, little-endian), on two pipes the parent made.
Parent to worker: ("init", settings), ("job", id, spec), ("quit",). Worker to parent: ("ready",
info) or ("init_failed", message), then ("result", id, outcome) per job. After an outcome with
"restart" set the worker exits and the parent starts another.
"""
import ctypes
import os
import pickle
import select
import signal
import struct
import sys

# mtiaError_t values of include/mtia/mtia_types.h that matter here.
ILLEGAL_ADDRESS = 700
LAUNCH_FAILURE = 719
STICKY = (ILLEGAL_ADDRESS, LAUNCH_FAILURE)
# The module handles kept loaded (the least recently used beyond this are unloaded): a tuning run
# tries many modules once each.
MODULE_CACHE = 16


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


class BenchmarkOptions(ctypes.Structure):
    """mtiaBenchmarkOptions (include/mtia/mtia_runtime.h)."""
    _fields_ = [("structSize", ctypes.c_uint32), ("warmup", ctypes.c_uint32),
                ("repetitions", ctypes.c_uint32), ("flushCache", ctypes.c_uint32)]


class IpcMemHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


def send(fd, message):
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    data = struct.pack("<Q", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def receive(fd):
    """The next message, or None at end of file (the parent went away)."""
    def exactly(n):
        chunks = []
        while n:
            chunk = os.read(fd, n)
            if not chunk:
                return None
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    header = exactly(8)
    if header is None:
        return None
    body = exactly(struct.unpack("<Q", header)[0])
    return None if body is None else pickle.loads(body)


class MtiaError(Exception):
    def __init__(self, code, name, message):
        super().__init__(f"{name}: {message}")
        self.code, self.name, self.message = code, name, message


class Runtime:
    """The few runtime calls a worker makes, each checked."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        self.lib = lib
        lib.mtiaGetErrorName.restype = ctypes.c_char_p
        lib.mtiaGetLastErrorMessage.restype = ctypes.c_char_p
        p = ctypes.c_void_p
        lib.mtiaIpcOpenMemHandle.argtypes = [ctypes.POINTER(p), IpcMemHandle, ctypes.c_uint]
        lib.mtiaIpcCloseMemHandle.argtypes = [p]
        lib.mtiaModuleLoad.argtypes = [ctypes.POINTER(p), ctypes.c_char_p]
        lib.mtiaModuleUnload.argtypes = [p]
        lib.mtiaModuleGetFunction.argtypes = [ctypes.POINTER(p), p, ctypes.c_char_p]
        lib.mtiaGetBuiltinFunction.argtypes = [ctypes.POINTER(p), ctypes.c_char_p]
        self.benchmark = getattr(lib, "mtiaBenchmarkKernel", None)
        if self.benchmark is not None:
            self.benchmark.argtypes = [p, Dim3, Dim3, ctypes.POINTER(p), ctypes.c_size_t, p,
                                       ctypes.POINTER(BenchmarkOptions),
                                       ctypes.POINTER(ctypes.c_float)]
        # Older libraries have no reset: a sticky fault then costs the worker its process.
        self.reset = getattr(lib, "mtiaDeviceReset", None)

    def check(self, status, what):
        if status != 0:
            message = self.lib.mtiaGetLastErrorMessage().decode(errors="replace")
            if not message.startswith(what):  # the runtime's messages start with the call's name
                message = f"{what}: {message}"
            raise MtiaError(status, self.lib.mtiaGetErrorName(status).decode(), message)


class Worker:
    def __init__(self, settings):
        self.rt = Runtime(settings["library"])
        self.device = settings["device"]
        self.idle_close_s = settings["idle_close_s"]
        self.rt.check(self.rt.lib.mtiaSetDevice(self.device), f"mtiaSetDevice({self.device})")
        self.imports = {}   # handle bytes -> pointer this process opened
        self.modules = {}   # path -> module handle, least recently used first
        self.enable_peers()

    def enable_peers(self):
        """A job's buffers may live on another device than this worker's (one list of tensors for
        every worker): let this device's kernels reach every peer that it can (CUDA's rules: per
        process and device, undone by a device reset)."""
        count = ctypes.c_int()
        self.rt.check(self.rt.lib.mtiaGetDeviceCount(ctypes.byref(count)), "mtiaGetDeviceCount")
        for peer in range(count.value):
            can = ctypes.c_int()
            if (peer != self.device and self.rt.lib.mtiaDeviceCanAccessPeer(
                    ctypes.byref(can), self.device, peer) == 0 and can.value):
                self.rt.lib.mtiaDeviceEnablePeerAccess(peer, 0)  # IllegalState: enabled already

    def close_imports(self):
        for pointer in self.imports.values():
            self.rt.lib.mtiaIpcCloseMemHandle(pointer)
        self.imports.clear()

    def close(self):
        self.close_imports()
        for module in self.modules.values():
            self.rt.lib.mtiaModuleUnload(module)
        self.modules.clear()

    def open_buffer(self, handle):
        pointer = self.imports.get(handle)
        if pointer is None:
            out = ctypes.c_void_p()
            self.rt.check(self.rt.lib.mtiaIpcOpenMemHandle(
                ctypes.byref(out), IpcMemHandle.from_buffer_copy(handle), 1), "mtiaIpcOpenMemHandle")
            pointer = self.imports[handle] = out.value
        return pointer

    def function(self, module_path, kernel):
        out = ctypes.c_void_p()
        if module_path is None:
            self.rt.check(self.rt.lib.mtiaGetBuiltinFunction(ctypes.byref(out), kernel.encode()),
                          f"built-in kernel {kernel!r}")
            return out
        module = self.modules.pop(module_path, None)
        if module is None:
            handle = ctypes.c_void_p()
            self.rt.check(self.rt.lib.mtiaModuleLoad(ctypes.byref(handle), module_path.encode()),
                          f"loading {module_path}")
            module = handle.value
        self.modules[module_path] = module
        while len(self.modules) > MODULE_CACHE:
            oldest = next(iter(self.modules))
            self.rt.lib.mtiaModuleUnload(self.modules.pop(oldest))
        self.rt.check(self.rt.lib.mtiaModuleGetFunction(ctypes.byref(out), module, kernel.encode()),
                      f"kernel {kernel!r} of {module_path}")
        return out

    def arguments(self, args, bases):
        """The argument array: one buffer per argument (kept alive by the caller)."""
        storage = []
        for arg in args:
            kind = arg[0]
            if kind == "ptr":
                _, buffer, offset = arg
                data = struct.pack("<Q", bases[buffer] + offset)
            elif kind == "value":
                data = arg[1]
            else:  # struct
                _, raw, relocations = arg
                patched = bytearray(raw)
                for at, buffer, offset in relocations:
                    struct.pack_into("<Q", patched, at, bases[buffer] + offset)
                data = bytes(patched)
            storage.append(ctypes.create_string_buffer(data, max(len(data), 1)))
        array = (ctypes.c_void_p * max(len(storage), 1))(
            *[ctypes.cast(s, ctypes.c_void_p) for s in storage])
        return array, storage

    def run(self, spec):
        bases = [self.open_buffer(handle) + offset for handle, offset in spec["buffers"]]
        function = self.function(spec["module"], spec["kernel"])
        array, keep = self.arguments(spec["args"], bases)
        reps = spec["repetitions"]
        times = (ctypes.c_float * reps)()
        options = BenchmarkOptions(ctypes.sizeof(BenchmarkOptions), spec["warmup"], reps,
                                   1 if spec["flush_cache"] else 0)
        grid, block = Dim3(*spec["grid"]), Dim3(*spec["block"])
        if self.rt.benchmark is None:
            raise MtiaError(801, "mtiaErrorNotSupported",
                            "this libmtia has no mtiaBenchmarkKernel (older than the pool)")
        self.rt.check(self.rt.benchmark(function, grid, block, array, spec["shared_mem"], None,
                                        ctypes.byref(options), times), "mtiaBenchmarkKernel")
        del keep
        return [float(t) for t in times]

    def job(self, spec):
        try:
            return {"ok": True, "times_ms": self.run(spec)}
        except MtiaError as e:
            outcome = {"ok": False, "error": str(e), "error_code": e.code}
        except Exception as e:  # a malformed spec: the candidate's fault, not the worker's
            return {"ok": False, "error": f"{type(e).__name__}: {e}", "error_code": None}
        if outcome["error_code"] in STICKY:
            outcome.update(self.recover())
        return outcome

    def recover(self):
        """After a sticky fault: reset the device, or ask the parent for a fresh process."""
        if self.rt.reset is None:
            return {"restart": "this libmtia has no mtiaDeviceReset"}
        status = self.rt.reset()
        if status != 0:
            return {"restart": "mtiaDeviceReset failed: "
                    + self.rt.lib.mtiaGetLastErrorMessage().decode(errors="replace")}
        # The reset released this process's imports (and the peer access it had enabled); modules
        # are the process's and stay loaded.
        self.imports.clear()
        self.enable_peers()
        return {"reset": True}


def main():
    job_fd, result_fd, parent = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    # A worker never outlives its pool: the kernel kills it when the parent's thread that started it
    # ends (PR_SET_PDEATHSIG), even in the middle of a hung kernel.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (AttributeError, OSError):
        pass
    if os.getppid() != parent:  # the parent ended before the line above
        return 1
    message = receive(job_fd)
    if message is None or message[0] != "init":
        return 1
    try:
        worker = Worker(message[1])
    except Exception as e:  # the library cannot be loaded or the device set
        send(result_fd, ("init_failed", f"{type(e).__name__}: {e}"))
        return 1
    send(result_fd, ("ready", {"pid": os.getpid(), "benchmark": worker.rt.benchmark is not None,
                               "reset": worker.rt.reset is not None}))
    while True:
        # Idle a moment with nothing to do: drop the imports, so that the parent's frees of the
        # buffers complete (an allocation another process has open stays allocated).
        if worker.imports and not select.select([job_fd], [], [], worker.idle_close_s)[0]:
            worker.close_imports()
        message = receive(job_fd)
        if message is None or message[0] == "quit":
            break
        _, job_id, spec = message
        outcome = worker.job(spec)
        send(result_fd, ("result", job_id, outcome))
        if outcome.get("restart"):
            return 3
    worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
