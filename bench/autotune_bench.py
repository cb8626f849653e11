"""The tuning pool's figures (issue 20, torch_mtia.autotune), each beside its reference in the same run:

1. tuning 64 candidates of a ~1 ms kernel (0.9 to 1.1 ms, each candidate its own copy of the
   module tests/torch/autotune_test_kernels.c) on 2 devices: the pool's wall time against
   benchmarking the same candidates one by one in the calling process through the same worker code
   (torch_mtia._autotune_worker.Worker: module load, mtiaBenchmarkKernel), same warmup and
   repetitions (no cache flush unless --flush: see FLUSH); then the same with a build step per
   candidate (copying the module to a new file plus 5 ms of waiting, standing for a compiler) that
   the pool overlaps with benchmarking. Twice: with sleep_us (the engine sleeps: device time that
   costs the host nothing, as on real hardware) and with spin_us (the engine spins: each device
   needs a host core, so the machine's other load shows);
2. the cost of one bad candidate on a one-device pool: from submitting it to the result of a good
   candidate submitted right behind it (one 10 us launch), for a kernel that reports a device fault
   (reset path where the runtime has mtiaDeviceReset, else a restart), a kernel that kills its
   process (restart path) and a hung kernel (timeout 0.2 s, kill and restart), against a good
   candidate in its place.

Medians of repeated runs, the sides measured in turns. The machine's load average is printed: the
workers and the engines they drive share its cores with whatever else runs. Reported, never
asserted.

    PYTHONPATH=build/integrations/torch .venv/bin/python bench/autotune_bench.py \\
        --kernels build/tests/torch/autotune_test_kernels.so [--out bench/results/autotune]
"""
import argparse
import ctypes
import os
import platform
import shutil
import statistics
import tempfile
import time

import torch

import torch_mtia  # noqa: F401  (loads libmtia.so)
from torch_mtia import _autotune_worker, autotune

import bench_report
from bench_report import publish

WARMUP, REPS = 3, 10
# The cache flush before each repetition is off by default here: on the simulated device it is a host
# memset of l2CacheSize bytes (the host's last-level cache, 32 MiB here), several times the 1 ms
# kernel, so it would measure memset on a shared machine rather than the pool. --flush turns it on.
FLUSH = False


def spin_candidate(path, us, kernel, build=None, timeout_s=None):
    return autotune.Candidate(kernel, module=None if build else path, build=build,
                              args=(autotune.value(ctypes.c_uint64(us)),),
                              config={"us": us, "module": os.path.basename(path)},
                              timeout_s=timeout_s)


def durations(n):
    """n kernel lengths around 1 ms, a single fastest one."""
    return [900 + (i * 37) % 200 for i in range(n)]


def module_copies(kernels, n, folder):
    paths = []
    for i in range(n):
        path = os.path.join(folder, f"candidate{i}.so")
        shutil.copyfile(kernels, path)
        paths.append(path)
    return paths


def slow_build(source, folder):
    """A stand-in compiler: 5 ms, then a module under a new name (a loaded module's file must never
    be rewritten: the processes that mapped it would crash, and dlopen would keep the old one)."""
    def build():
        time.sleep(0.005)
        fd, path = tempfile.mkstemp(dir=folder, suffix=".so")
        os.close(fd)
        shutil.copyfile(source, path)
        return path
    return build


def serial(paths, us, device, kernel, build_from=None):
    flush = FLUSH
    """The reference: one candidate after the other in this process, the worker's own code."""
    worker = _autotune_worker.Worker({"library": autotune.library_path(), "device": device,
                                      "idle_close_s": 0})
    best = None
    for path, t in zip(paths, us):
        if build_from is not None:
            path = slow_build(build_from, path)()
        spec = {"module": path, "kernel": kernel, "grid": (1, 1, 1), "block": (1, 1, 1),
                "args": (("value", bytes(ctypes.c_uint64(t))),), "shared_mem": 0, "buffers": [],
                "warmup": WARMUP, "repetitions": REPS, "flush_cache": flush}
        outcome = worker.job(spec)
        assert outcome["ok"], outcome
        median = statistics.median(outcome["times_ms"])
        best = median if best is None else min(best, median)
    worker.close()
    return best


def tuning(kernels, reps, kernel, n=64):
    us = durations(n)
    rows = {}
    with tempfile.TemporaryDirectory() as folder, \
            autotune.TuningPool([0, 1], warmup=WARMUP, repetitions=REPS, flush_cache=FLUSH) as pool:
        pool.start()
        paths = module_copies(kernels, n, folder)
        built = [folder] * n

        def pooled(with_build):
            def run():
                cands = [spin_candidate(p, t, kernel, build=slow_build(kernels, folder) if with_build
                                        else None)
                         for p, t in zip(built if with_build else paths, us)]
                results = pool.benchmark_all(cands)
                assert all(r.ok for r in results), [r.error for r in results if not r.ok]
                return min(r.time_ms for r in results)
            return run

        for with_build in (False, True):
            name = "with_build" if with_build else "prebuilt"
            pool_s, serial_s = [], []
            pooled(with_build)()  # warm-up: page cache, the workers' first loads
            for _ in range(reps):
                start = time.perf_counter()
                pooled(with_build)()
                pool_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                serial(built if with_build else paths, us, 0, kernel,
                       kernels if with_build else None)
                serial_s.append(time.perf_counter() - start)
            rows[name] = {"pool_s": statistics.median(pool_s),
                          "serial_s": statistics.median(serial_s), "runs": reps}
    return rows


def fault_cost(kernels, reps):
    cases = {
        "good (reference)": autotune.Candidate("spin_us", module=kernels,
                                               args=(autotune.value(ctypes.c_uint64(10)),)),
        "device fault (reports_fault)": autotune.Candidate("reports_fault", module=kernels),
        "process killed (kills_process)": autotune.Candidate("kills_process", module=kernels),
        "hang, timeout 0.2 s": autotune.Candidate("hang", module=kernels, timeout_s=0.2),
    }
    follower = autotune.Candidate("spin_us", module=kernels,
                                  args=(autotune.value(ctypes.c_uint64(10)),))
    times = {name: [] for name in cases}
    recovery = {}
    with autotune.TuningPool([0], warmup=0, repetitions=1, flush_cache=FLUSH) as pool:
        pool.start()
        for _ in range(reps):
            for name, bad in cases.items():
                assert pool.submit(follower).result().ok  # a warm worker to start from
                start = time.perf_counter()
                first = pool.submit(bad)
                second = pool.submit(follower)
                assert second.result().ok
                times[name].append(time.perf_counter() - start)
                recovery[name] = first.result().recovery
        stats = pool.stats
    return {name: {"median_s": statistics.median(t), "recovery": recovery[name], "runs": reps}
            for name, t in times.items()}, stats


def fmt(s):
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", default=os.environ.get("MTIA_AUTOTUNE_TEST_KERNELS",
                                                            "build/tests/torch/autotune_test_kernels.so"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--fault-reps", type=int, default=7)
    parser.add_argument("--flush", action="store_true", help="flush the cache before each repetition")
    parser.add_argument("--out", help="write OUT.md and OUT.json")
    args = parser.parse_args()
    global FLUSH
    FLUSH = args.flush
    kernels = os.path.abspath(args.kernels)
    if torch.mtia.device_count() < 2:
        raise SystemExit("autotune_bench: needs 2 devices")
    load_before = os.getloadavg()[0]
    kernel_s = sum(durations(64)) * (WARMUP + REPS) / 1e6
    rows = {kernel: tuning(kernels, args.reps, kernel) for kernel in ("sleep_us", "spin_us")}
    faults, stats = fault_cost(kernels, args.fault_reps)
    load_after = os.getloadavg()[0]
    commit = bench_report.commit()
    results = {"commit": commit, "torch": torch.__version__, "cpus": os.cpu_count(),
               "load_average": [load_before, load_after], "warmup": WARMUP, "repetitions": REPS,
               "flush_cache": FLUSH,
               "tuning": rows, "fault_cost": faults,
               "mtiaDeviceReset": hasattr(ctypes.CDLL(autotune.library_path()), "mtiaDeviceReset"),
               "pool_stats_fault_runs": stats}
    lines = ["# Tuning pool: benchmark results", "",
             f"Generated by `bench/autotune_bench.py`; medians of {args.reps} runs (the bad "
             f"candidates: {args.fault_reps}), the sides measured in turns. Reported, not asserted.",
             "",
             f"- commit {commit}, PyTorch {torch.__version__}, {platform.machine()}, "
             f"{os.cpu_count()} CPUs, load average {load_before:.2f} before, {load_after:.2f} after "
             "(the machine is shared: the two workers and their engines compete with other work)",
             f"- each candidate: {WARMUP} warm-up launches, {REPS} timed repetitions through "
             f"mtiaBenchmarkKernel, cache flush {'on' if FLUSH else 'off (see the script)'}; "
             "mtiaDeviceReset in this library: "
             f"{results['mtiaDeviceReset']}", "",
             f"- the kernels alone take {kernel_s * 1e3:.0f} ms one by one for the 64 candidates "
             f"({WARMUP + REPS} launches each), {kernel_s * 1e3 / 2:.0f} ms split over 2 devices: the "
             "bound of each side when the workers' engines have a core each", "",
             "| workload | pool (median) | reference (median) | ratio or difference |",
             "|---|---:|---:|---|"]
    for kernel, how in (("sleep_us", "sleeping: device time, no host CPU"),
                        ("spin_us", "spinning: each engine needs a host core")):
        for name, label in (("prebuilt", f"64 candidates of ~1 ms ({kernel}, {how}), 2 devices, "
                                         "modules prebuilt"),
                            ("with_build", f"the same ({kernel}), each built first "
                                           "(copy + 5 ms wait)")):
            r = rows[kernel][name]
            lines.append(f"| {label} (reference: one by one in this process) | "
                         f"{fmt(r['pool_s'])} | {fmt(r['serial_s'])} | "
                         f"{r['serial_s'] / r['pool_s']:.2f}x faster |")
    ref = faults["good (reference)"]["median_s"]
    for name, r in faults.items():
        if name == "good (reference)":
            continue
        lines.append(f"| one bad candidate to the next result: {name}, recovery {r['recovery']} "
                     f"(reference: a good candidate) | {fmt(r['median_s'])} | {fmt(ref)} | "
                     f"{'+' if r['median_s'] >= ref else '-'}{fmt(abs(r['median_s'] - ref))} |")
    text = "\n".join(lines) + "\n"
    publish(text, results, args.out)


if __name__ == "__main__":
    main()
