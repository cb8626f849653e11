"""Asynchronous, crash-safe benchmarking of candidate kernels, and a disk cache of the winners.

A compiler that generates several versions of a kernel (tile sizes, unrolling, launch shapes) asks
the pool which one is fastest for a key, once per key and machine::

    from torch_mtia import autotune

    key = autotune.cache_key("my_gemm", [a.shape, b.shape], [a.dtype], a.device.index)
    candidates = [autotune.Candidate("gemm", build=lambda t=t: compile_gemm(t), config={"tile": t},
                                     grid=(m // t, n // t, 1),
                                     args=(autotune.ptr(0), autotune.ptr(1), autotune.ptr(2),
                                           autotune.value(ctypes.c_uint64(m))))
                  for t in (16, 32, 64)]
    with autotune.TuningPool() as pool:
        best = pool.tune(key, candidates, [a, b, out])
    best.config  # {"tile": 32}; later processes get it from the cache without benchmarking

Design (issue 20, item 4):

- Workers. One process per device (subprocess, ``python -I -S _autotune_worker.py``): it imports
  neither torch nor this package, so it starts in tens of milliseconds and holds no caching-allocator
  state that a device reset would invalidate. It loads the libmtia.so that this process loaded
  (found in /proc/self/maps) through ctypes, sets its device, and benchmarks one candidate at a time
  with ``mtiaBenchmarkKernel`` (warmup launches, then timed repetitions with device events, the
  last-level cache flushed before each if asked). Messages are length-prefixed pickles on two
  private pipes; the worker's stdout and stderr go to a temporary file whose tail is quoted when the
  worker dies.
- Buffers. The candidates' tensors are shared, not copied: the pool exports each tensor's storage
  (the caching allocator's block, which mtiaIpcGetMemHandle names; the tensor's own pointer may lie
  inside it, at an offset the worker adds back) and the worker opens the handles once and reuses
  them across candidates. It closes them as soon as it has nothing to do, so that the parent's frees
  of those tensors complete (an allocation another process has open stays allocated). The pool
  synchronizes a tensor's device before it hands the tensor out, and the worker synchronizes before
  it answers: what a candidate wrote is in the tensor when its future completes. Tensors must come
  from a non-expandable segment (the default). ``buffers`` is a list (any worker may take the job:
  the simulated devices reach each other's memory), or ``{device: [tensors]}`` to keep each job on
  the devices whose copies it names.
- Arguments. ``ptr(i, offset)`` becomes the worker's address of buffer i plus offset; ``value(x)``
  is passed as its bytes; ``struct(data, relocations)`` is data with the worker's buffer addresses
  written (uint64, little-endian) at the given offsets, for by-value argument structs that hold
  pointers. Each argument's size must be what the kernel declares (mtia_sim_kernel.h).
- Pipelining. A candidate with ``build`` (and no ``module``) is built in this process's thread pool
  while the workers benchmark earlier candidates; its job is queued when the build returns the
  module's path. A failed build fails only that candidate. Modules are loaded in the worker (the
  16 most recently used stay loaded, by path: a build must return a new path for new code, never
  rewrite a module file that a worker may have loaded).
- Faults. A candidate whose kernel leaves a sticky device error (mtiaErrorIllegalAddress,
  mtiaErrorLaunchFailure) fails with the error's name and message; the worker then calls
  mtiaDeviceReset (which releases the imports; modules stay, they are the process's), enables peer
  access again and reopens the imports with the next job. Where the library has no mtiaDeviceReset or the
  reset fails, or the worker process died (a signal the runtime did not turn into a device error,
  an exit), the candidate fails with that reason (signal name, exit status, the tail of the
  worker's stderr) and the worker is started again. A candidate still running after its timeout
  (``Candidate.timeout_s``, else the pool's; it counts from the job's dispatch, module loading
  included) gets its worker killed (SIGKILL), reaped and started again, and fails with a timeout
  error. Jobs not yet dispatched stay queued for any worker: nothing else is lost.
  ``Result.recovery`` says which of "reset", "restart" or "timeout" happened, and ``pool.stats``
  counts them.
- Results are ``concurrent.futures.Future`` objects holding a ``Result``; ``tune`` waits for all,
  picks the smallest median among the successful ones, and stores it in the cache. It raises
  ``TuningError`` (with every result) when none succeeded.
- Cache. One JSON file per key, named by the key's SHA-256, in $MTIA_AUTOTUNE_CACHE_DIR (default
  ~/.cache/torch_mtia/autotune). Writers take an exclusive lock file (.lock) and write a temporary
  file that they rename over the entry: readers never see half an entry and concurrent processes
  may tune the same key (the last writer wins). ``cache_key`` includes the device's name and
  capability, so a cache moved to another machine misses instead of lying. ``tune`` returns the
  cached choice (``Result.cached``) when one of the candidates has that config, without starting
  a worker.
- Cleanliness. Workers start with the first job (``start()`` starts them at once); each is reaped
  when it ends, and a worker dies with the thread that started it (PR_SET_PDEATHSIG), so a pool
  whose process is killed leaves no worker behind. ``close()`` (idempotent; also the context
  manager's exit, garbage collection and interpreter exit) cancels the queued jobs, fails the
  running ones ("the pool was closed"), ends the workers and joins their threads.
- Limits: the runtime exports at most 64 allocations per process and opens at most 64 imports per
  process, so a job takes at most 64 distinct storages.
"""
import atexit
import collections
import concurrent.futures
import ctypes
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import Any, List, Optional

import torch

from ._autotune_worker import IpcMemHandle, receive, send

__all__ = ["ptr", "value", "struct", "Candidate", "Result", "TuningPool", "TuningError",
           "cache_key", "cache_lookup", "cache_store", "cache_dir", "library_path"]

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_autotune_worker.py")
# How long a worker may take to start (interpreter, library, device) before the pool gives up on it.
_START_TIMEOUT_S = 60.0
# How long an idle worker keeps the buffers' imports open: long enough to span the gap between one
# result and the next job, short enough that a freed tensor's memory comes back soon after tuning.
_IDLE_CLOSE_S = 0.05
# How often a waiting worker thread looks whether the pool is closing.
_POLL_S = 0.1
_STDERR_TAIL = 2000
_STATS = ("benchmarked", "cache_hits", "resets", "restarts", "timeouts", "workers_started")


# ---- Kernel arguments ----------------------------------------------------------------------------

def ptr(buffer, offset=0):
    """A pointer argument: the worker's address of buffers[buffer], plus offset bytes."""
    buffer, offset = int(buffer), int(offset)
    if buffer < 0:
        raise ValueError(f"autotune.ptr: buffer {buffer} is negative")
    return ("ptr", buffer, offset)


def _raw(x, what):
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    if isinstance(x, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)):
        return bytes(x)
    raise TypeError(f"autotune.{what}: expected bytes or a ctypes instance, got {type(x).__name__}")


def value(x):
    """An argument passed by value: bytes, or a ctypes scalar, struct or array instance."""
    return ("value", _raw(x, "value"))


def struct(data, relocations):
    """A by-value argument whose pointer fields the worker fills: for each (at, buffer, offset) of
    relocations, the worker's address of buffers[buffer] + offset is written at byte at of data
    (uint64, little-endian)."""
    data = _raw(data, "struct")
    relocs = []
    for at, buffer, offset in relocations:
        at, buffer, offset = int(at), int(buffer), int(offset)
        if at < 0 or at + 8 > len(data):
            raise ValueError(f"autotune.struct: relocation at byte {at} does not fit in the "
                             f"{len(data)} bytes of data")
        if buffer < 0:
            raise ValueError(f"autotune.struct: relocation buffer {buffer} is negative")
        relocs.append((at, buffer, offset))
    return ("struct", data, tuple(relocs))


def _buffers_used(args):
    for arg in args:
        if arg[0] == "ptr":
            yield arg[1]
        elif arg[0] == "struct":
            for _, buffer, _ in arg[2]:
                yield buffer


def _dim3(d, what):
    d = (d,) if isinstance(d, int) else tuple(int(x) for x in d)
    if not 1 <= len(d) <= 3:
        raise ValueError(f"autotune.Candidate: {what} {d} needs 1 to 3 dimensions")
    return d + (1,) * (3 - len(d))


# ---- Candidates and results ----------------------------------------------------------------------

@dataclasses.dataclass
class Candidate:
    """One version of a kernel to benchmark. module: the kernel module's path (None: a built-in
    kernel, or build gives the path); build: a callable run in the pool's build threads that
    returns the module's path (compiles it); config: JSON-able, what the candidate stands for (in
    results and the cache); timeout_s: this candidate's limit (None: the pool's)."""
    kernel: str
    module: Optional[str] = dataclasses.field(default=None, kw_only=True)
    build: Any = dataclasses.field(default=None, kw_only=True)
    grid: Any = dataclasses.field(default=(1, 1, 1), kw_only=True)
    block: Any = dataclasses.field(default=(1, 1, 1), kw_only=True)
    args: Any = dataclasses.field(default=(), kw_only=True)
    shared_mem: int = dataclasses.field(default=0, kw_only=True)
    config: Any = dataclasses.field(default=None, kw_only=True)
    timeout_s: Optional[float] = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self):
        self.grid = _dim3(self.grid, "grid")
        self.block = _dim3(self.block, "block")
        self.args = tuple(self.args)
        for i, arg in enumerate(self.args):
            if not (isinstance(arg, tuple) and arg and arg[0] in ("ptr", "value", "struct")):
                raise TypeError(f"autotune.Candidate: args[{i}] is {arg!r}; make arguments with "
                                "autotune.ptr, autotune.value or autotune.struct")


@dataclasses.dataclass
class Result:
    """A candidate's outcome. time_ms: median of times_ms (None when not ok); error: what went wrong
    (the runtime's error name and message, the worker's death or the timeout); error_code: the
    mtiaError_t when the runtime reported one; device: the worker's device (-1: never reached a
    worker); recovery: "reset", "restart" or "timeout" when the failure cost the worker its device
    state or its process; cached: the choice came from the disk cache (times_ms is empty)."""
    candidate: Candidate
    config: Any
    ok: bool
    time_ms: Optional[float]
    times_ms: List[float]
    error: Optional[str]
    error_code: Optional[int]
    device: int
    recovery: Optional[str] = None
    cached: bool = False


class TuningError(RuntimeError):
    """No candidate of a tune() succeeded; results holds every failure."""

    def __init__(self, key, results):
        lines = [f"  {r.config!r}: {r.error}" for r in results]
        super().__init__(f"autotune: no candidate succeeded for {key}:\n" + "\n".join(lines))
        self.key, self.results = key, results


def _failed(candidate, error, device=-1, error_code=None, recovery=None):
    return Result(candidate, candidate.config, False, None, [], error, error_code, device,
                  recovery)


# ---- The library both sides load -----------------------------------------------------------------

def library_path():
    """The path of the libmtia.so this process loaded (the torch_mtia extension's)."""
    pattern = re.compile(r"/libmtia\.so(\.\d+)*$")
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and pattern.search(fields[5].strip()):
                return fields[5].strip()
    raise RuntimeError("autotune: libmtia.so is not loaded in this process (import torch_mtia)")


_lib = None
_lib_lock = threading.Lock()


def _runtime():
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(library_path())
            lib.mtiaIpcGetMemHandle.argtypes = [ctypes.POINTER(IpcMemHandle), ctypes.c_void_p]
            lib.mtiaGetErrorName.restype = ctypes.c_char_p
            lib.mtiaGetLastErrorMessage.restype = ctypes.c_char_p
            _lib = lib
        return _lib


def _export(tensors):
    """[(handle bytes, offset of the tensor in its allocation)] for a job's buffers."""
    lib = _runtime()
    synced, out = set(), []
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor) or t.device.type != "mtia":
            raise TypeError(f"autotune: buffers[{i}] is not a tensor on an mtia device")
        if t.device not in synced:
            torch.mtia.synchronize(t.device)  # the worker sees what was queued before
            synced.add(t.device)
        base = t.untyped_storage().data_ptr()
        if base == 0:
            raise ValueError(f"autotune: buffers[{i}] has no storage (zero bytes)")
        handle = IpcMemHandle()
        status = lib.mtiaIpcGetMemHandle(ctypes.byref(handle), ctypes.c_void_p(base))
        if status != 0:
            raise RuntimeError(f"autotune: sharing buffers[{i}]: "
                               f"{lib.mtiaGetErrorName(status).decode()}: "
                               f"{lib.mtiaGetLastErrorMessage().decode(errors='replace')}")
        out.append((bytes(handle), t.data_ptr() - base))
    return out


# ---- The pool ------------------------------------------------------------------------------------

class _Job:
    __slots__ = ("candidate", "module", "exports", "tensors", "future", "id")

    def __init__(self, candidate, exports, tensors, future, job_id):
        self.candidate, self.exports, self.tensors = candidate, exports, tensors
        self.module, self.future, self.id = candidate.module, future, job_id


class _Shared:
    """What the pool's threads share (they hold no reference to the TuningPool itself, so that an
    abandoned pool is collected and closes)."""

    def __init__(self, settings):
        self.settings = settings
        self.cond = threading.Condition()
        self.pending = collections.deque()
        self.closed = False
        self.stats = collections.Counter({name: 0 for name in _STATS})

    def count(self, name):
        with self.cond:
            self.stats[name] += 1


class _Slot:
    """One device's worker process and the thread that feeds it."""

    def __init__(self, shared, device, library):
        self.shared, self.device, self.library = shared, device, library
        self.proc = self.job_fd = self.result_fd = None
        self.log = tempfile.TemporaryFile()
        self.ready = threading.Event()
        self.start_error = None
        self.thread = threading.Thread(target=self._run, name=f"autotune-device{device}",
                                       daemon=True)

    # -- the worker process --
    def _spawn(self):
        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        self.log.seek(0)
        self.log.truncate()
        self.job_fd, self.result_fd = job_w, result_r
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _WORKER, str(job_r), str(result_w), str(os.getpid())],
                pass_fds=(job_r, result_w), stdin=subprocess.DEVNULL, stdout=self.log,
                stderr=self.log, close_fds=True)
        except BaseException:
            self._reap(kill=True)
            raise
        finally:
            os.close(job_r)
            os.close(result_w)
        send(self.job_fd, ("init", {"library": self.library, "device": self.device,
                                    "idle_close_s": _IDLE_CLOSE_S}))
        message = self._wait_message(time.monotonic() + _START_TIMEOUT_S)
        if message is None or isinstance(message, str) or message[0] != "ready":
            if message is None:
                why = self._death()
            elif isinstance(message, str):
                why = ("the pool was closed" if message == "closed" else
                       f"no answer within {_START_TIMEOUT_S:g} s")
            else:
                why = message[1]
            self._reap(kill=True)
            raise RuntimeError(f"the worker for device {self.device} did not start: {why}")
        self.shared.count("workers_started")

    def _wait_message(self, deadline):
        """The worker's next message; None if it died; "timeout" past the deadline; "closed" when
        the pool closes meanwhile."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if select.select([self.result_fd], [], [], min(left, _POLL_S))[0]:
                try:
                    return receive(self.result_fd)
                except (OSError, EOFError, ValueError):
                    return None
            if self.shared.closed:
                return "closed"

    def _death(self):
        """Why the worker ended: its exit status or signal, and the tail of what it wrote."""
        try:
            status = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "its pipe closed but the process is still running"
        if status < 0:
            try:
                how = f"killed by {signal.Signals(-status).name}"
            except ValueError:
                how = f"killed by signal {-status}"
        else:
            how = f"exited with status {status}"
        self.log.seek(0, os.SEEK_END)
        size = self.log.tell()
        self.log.seek(max(0, size - _STDERR_TAIL))
        tail = self.log.read().decode(errors="replace").strip()
        return how + (f"; its output ends with: {tail}" if tail else "")

    def _reap(self, kill):
        if self.proc is not None:
            if kill and self.proc.poll() is None:
                self.proc.kill()
            try:
                self.proc.wait(timeout=None if kill else 5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        for fd in (self.job_fd, self.result_fd):
            if fd is not None:
                os.close(fd)
        self.job_fd = self.result_fd = None

    # -- jobs --
    def _next_job(self):
        with self.shared.cond:
            while not self.shared.closed:
                for job in self.shared.pending:
                    allowed = job.exports if isinstance(job.exports, dict) else None
                    if allowed is None or self.device in allowed:
                        self.shared.pending.remove(job)
                        return job
                self.shared.cond.wait()
            return None

    def _spec(self, job):
        s = self.shared.settings
        exports = job.exports[self.device] if isinstance(job.exports, dict) else job.exports
        c = job.candidate
        return {"module": None if job.module is None else os.path.abspath(job.module),
                "kernel": c.kernel, "grid": c.grid, "block": c.block, "args": c.args,
                "shared_mem": int(c.shared_mem), "buffers": exports, "warmup": s["warmup"],
                "repetitions": s["repetitions"], "flush_cache": s["flush_cache"]}

    def _benchmark(self, job):
        c = job.candidate
        timeout = c.timeout_s if c.timeout_s is not None else self.shared.settings["timeout_s"]
        self.shared.count("benchmarked")
        try:
            send(self.job_fd, ("job", job.id, self._spec(job)))
        except OSError:
            pass  # the worker is gone: the wait below says why
        message = self._wait_message(time.monotonic() + timeout)
        if message == "closed":
            self._reap(kill=True)
            return _failed(c, "the pool was closed", self.device)
        if message == "timeout":
            self._reap(kill=True)
            self.shared.count("timeouts")
            return _failed(c, f"timed out after {timeout:g} s (the worker for device "
                           f"{self.device} was killed and restarted)", self.device,
                           recovery="timeout")
        if message is None:
            why = self._death()
            self._reap(kill=True)
            self.shared.count("restarts")
            return _failed(c, f"the worker for device {self.device} died while benchmarking "
                           f"this candidate ({why}); restarted", self.device, recovery="restart")
        _, job_id, outcome = message
        assert job_id == job.id, (job_id, job.id)
        if outcome["ok"]:
            times = outcome["times_ms"]
            return Result(c, c.config, True, statistics.median(times), times, None, None,
                          self.device)
        error, recovery = outcome["error"], None
        if outcome.get("reset"):
            recovery = "reset"
            self.shared.count("resets")
            error += " (the worker reset its device)"
        elif outcome.get("restart"):
            recovery = "restart"
            self.shared.count("restarts")
            error += f" (the worker was restarted: {outcome['restart']})"
            self._reap(kill=False)
        return _failed(c, error, self.device, outcome.get("error_code"), recovery)

    def _run(self):
        try:
            while True:
                if self.proc is None and not self.shared.closed:
                    try:
                        self._spawn()
                        self.ready.set()
                    except Exception as e:  # fail one job per failed start: none waits forever
                        self.start_error = str(e)
                        self.ready.set()
                        job = self._next_job()
                        if job is None:
                            break
                        if job.future.set_running_or_notify_cancel():
                            job.future.set_result(_failed(job.candidate, str(e), self.device))
                        continue
                job = self._next_job()
                if job is None:
                    break
                if not job.future.set_running_or_notify_cancel():
                    continue
                try:
                    result = self._benchmark(job)
                except Exception as e:  # a bug here must not leave the future pending
                    self._reap(kill=True)
                    result = _failed(job.candidate, f"autotune internal error: {e!r}", self.device)
                job.tensors = None
                job.future.set_result(result)
        finally:
            if self.proc is not None and self.proc.poll() is None:
                try:
                    send(self.job_fd, ("quit",))
                except OSError:
                    pass
            self._reap(kill=False)
            self.log.close()


_live_pools = weakref.WeakSet()


class TuningPool:
    """Worker processes, one per device, that benchmark candidates (module docstring)."""

    def __init__(self, devices=None, *, warmup=3, repetitions=10, flush_cache=True,
                 timeout_s=10.0, build_threads=None):
        if devices is None:
            devices = range(torch.mtia.device_count())
        self.devices = [int(d) for d in devices]
        if not self.devices:
            raise RuntimeError("autotune.TuningPool: no devices")
        if repetitions < 1 or warmup < 0:
            raise ValueError("autotune.TuningPool: repetitions must be >= 1 and warmup >= 0")
        torch.mtia.init()
        self._shared = _Shared({"warmup": int(warmup), "repetitions": int(repetitions),
                                "flush_cache": bool(flush_cache), "timeout_s": float(timeout_s)})
        self._library = library_path()
        self._slots = [_Slot(self._shared, d, self._library) for d in self.devices]
        self._builds = concurrent.futures.ThreadPoolExecutor(
            max_workers=build_threads or max(2, os.cpu_count() or 2),
            thread_name_prefix="autotune-build")
        self._started = False
        self._lock = threading.Lock()
        self._building = set()  # jobs whose build has not returned
        self._ids = 0
        self.last_results = []
        _live_pools.add(self)

    @property
    def stats(self):
        """Counts: benchmarked (jobs sent to workers), cache_hits, resets, restarts, timeouts,
        workers_started."""
        with self._shared.cond:
            return dict(self._shared.stats)

    def start(self, wait=True):
        """Starts the workers now (the first submit does otherwise); with wait, until they are
        ready."""
        with self._lock:
            if self._shared.closed:
                raise RuntimeError("autotune.TuningPool is closed")
            if not self._started:
                self._started = True
                for slot in self._slots:
                    slot.thread.start()
        if wait:
            for slot in self._slots:
                slot.ready.wait()
            errors = [s.start_error for s in self._slots if s.start_error]
            if errors:
                raise RuntimeError("autotune: " + "; ".join(errors))

    def submit(self, candidate, buffers=()):
        """Queues a candidate; its Future completes with a Result (never with an exception, unless
        cancelled). buffers: tensors on mtia devices (a list, or {device: list})."""
        return self._submit(candidate, *self._share(buffers))

    @staticmethod
    def _share(buffers):
        if isinstance(buffers, dict):
            exports = {int(d): _export(list(b)) for d, b in buffers.items()}
            tensors = buffers
        else:
            tensors = list(buffers)
            exports = _export(tensors)
        return exports, tensors

    def _submit(self, candidate, exports, tensors):
        if not isinstance(candidate, Candidate):
            raise TypeError("autotune: submit takes a Candidate")
        if isinstance(exports, dict):
            unknown = set(exports) - set(self.devices)
            if unknown:
                raise ValueError(f"autotune: buffers for devices {sorted(unknown)}, which the "
                                 f"pool does not have (it has {self.devices})")
            counts = {len(e) for e in exports.values()}
        else:
            counts = {len(exports)}
        for b in _buffers_used(candidate.args):
            if b >= min(counts, default=0):
                raise ValueError(f"autotune: an argument of {candidate.kernel!r} uses buffer {b}, "
                                 f"but only {min(counts, default=0)} buffers were given")
        self.start(wait=False)
        future = concurrent.futures.Future()
        with self._lock:
            self._ids += 1
            job = _Job(candidate, exports, tensors, future, self._ids)
        if candidate.module is None and candidate.build is not None:
            with self._lock:
                self._building.add(job)
            self._builds.submit(self._build, job)
        else:
            self._queue(job)
        return future

    def _queue(self, job):
        with self._shared.cond:
            if self._shared.closed:
                job.future.cancel()
                return
            self._shared.pending.append(job)
            self._shared.cond.notify_all()

    def _build(self, job):
        try:
            self._build_one(job)
        finally:
            with self._lock:
                self._building.discard(job)

    def _build_one(self, job):
        if self._shared.closed:
            job.future.cancel()
            return
        try:
            job.module = job.candidate.build()
            if job.module is None:
                raise ValueError("build returned None instead of the module's path")
        except Exception as e:
            if job.future.set_running_or_notify_cancel():
                job.future.set_result(_failed(job.candidate,
                                              f"build failed: {type(e).__name__}: {e}"))
            return
        self._queue(job)

    def benchmark_all(self, candidates, buffers=()):
        """Every candidate's Result, in order (submitted at once: built and benchmarked
        pipelined across the workers)."""
        shared = self._share(buffers)  # once for all of them
        futures = [self._submit(c, *shared) for c in candidates]
        return [f.result() for f in futures]

    def tune(self, key, candidates, buffers=()):
        """The best Result for key: the cached choice if one of candidates has its config, else
        the fastest successful candidate (then cached). Raises TuningError when none succeeds;
        self.last_results holds every Result of the last benchmarking."""
        key = _key_text(key)
        candidates = list(candidates)
        if any(c.config is None for c in candidates):
            raise ValueError("autotune.tune: every candidate needs a config (what the cache "
                             "stores)")
        configs = [_config_text(c.config) for c in candidates]
        if len(set(configs)) != len(configs):
            raise ValueError("autotune.tune: candidates need distinct configs (the cache stores "
                             "the config)")
        entry = _cache_read(key)
        if entry is not None:
            wanted = _config_text(entry["config"])
            for c, text in zip(candidates, configs):
                if text == wanted:
                    self._shared.count("cache_hits")
                    return Result(c, c.config, True, entry.get("time_ms"), [], None, None,
                                  entry.get("device", -1), cached=True)
        results = self.benchmark_all(candidates, buffers)
        self.last_results = results
        good = [r for r in results if r.ok]
        if not good:
            raise TuningError(key, results)
        best = min(good, key=lambda r: r.time_ms)
        cache_store(key, best.config, best.time_ms)
        return best

    def close(self):
        """Cancels queued jobs, fails running ones, ends and reaps the workers. Idempotent."""
        shared = self._shared
        with shared.cond:
            if shared.closed:
                return
            shared.closed = True
            pending = list(shared.pending)
            shared.pending.clear()
            shared.cond.notify_all()
        with self._lock:
            pending += list(self._building)
        for job in pending:
            job.future.cancel()  # a build still running finds the pool closed when it returns
        self._builds.shutdown(wait=False, cancel_futures=True)
        me = threading.current_thread()
        for slot in self._slots:
            if slot.thread.is_alive() and slot.thread is not me:
                slot.thread.join()
            elif not slot.thread.is_alive() and slot.thread.ident is None:
                slot.log.close()  # never started

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


@atexit.register
def _close_pools():
    for pool in list(_live_pools):
        pool.close()


# ---- The disk cache ------------------------------------------------------------------------------

def cache_dir():
    """$MTIA_AUTOTUNE_CACHE_DIR, else ~/.cache/torch_mtia/autotune."""
    return os.environ.get("MTIA_AUTOTUNE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "torch_mtia", "autotune")


def cache_key(kernel, shapes, dtypes, device_index):
    """The cache key (a JSON string) of a kernel's tuning for these shapes and dtypes on a device
    like device_index (its name and capability, torch.mtia.get_device_properties)."""
    props = torch.mtia.get_device_properties(device_index)
    return json.dumps({"kernel": str(kernel),
                       "shapes": [[int(n) for n in s] for s in shapes],
                       "dtypes": [str(d) for d in dtypes],
                       "device": props["name"],
                       "capability": [props["major"], props["minor"]]},
                      sort_keys=True, separators=(",", ":"))


def _key_text(key):
    return key if isinstance(key, str) else json.dumps(key, sort_keys=True, separators=(",", ":"))


def _config_text(config):
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def _entry_path(key):
    return os.path.join(cache_dir(), hashlib.sha256(key.encode()).hexdigest() + ".json")


def _cache_read(key):
    key = _key_text(key)
    try:
        with open(_entry_path(key)) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    # A hash collision or a hand-edited file is a miss, not someone else's choice.
    if not isinstance(entry, dict) or entry.get("key") != key or "config" not in entry:
        return None
    return entry


def cache_lookup(key):
    """The config cached for key, or None."""
    entry = _cache_read(key)
    return None if entry is None else entry["config"]


def cache_store(key, config, time_ms):
    """Stores config (JSON-able) as key's choice; atomic, safe against concurrent processes."""
    key = _key_text(key)
    directory = cache_dir()
    os.makedirs(directory, exist_ok=True)
    data = json.dumps({"key": key, "config": config, "time_ms": time_ms,
                       "stored": time.time()}, sort_keys=True)
    with open(os.path.join(directory, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(data)
            os.replace(tmp, _entry_path(key))
        except BaseException:
            os.unlink(tmp)
            raise
