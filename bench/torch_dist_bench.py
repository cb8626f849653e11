"""torch.distributed on MTIA tensors (issue 21), in one run that starts its own ranks:

1. all_reduce bandwidth of torch_mtia's c10d backend "mtia" (same-host path) on device tensors against
   gloo on CPU tensors of the same size, in the same processes, from 1 KiB to --max-bytes (default
   256 MiB), on each world size of --ranks (default 2 and 4), reported as nccl-tests do: algorithm
   bandwidth (bytes / time) and bus bandwidth (algbw * 2 (n - 1) / n for all_reduce); then on 2
   ranks the cross-host path forced (MTIA_DIST_FORCE_CROSS_HOST=1: pinned staging and gloo) against
   gloo alone, whose ratio is the staging overhead (--no-cross-host skips it);
2. the training step of the GPT-style decoder (torch_mtia.demo_models, AdamW) with
   DistributedDataParallel on 2 processes against the plain model on 1, the same global batch.

    PYTHONPATH=build/integrations/torch .venv/bin/python bench/torch_dist_bench.py \\
        [--out bench/results/torch_dist] [--ranks 2 4] [--max-bytes 268435456] [--reps 9]

Ranks are fresh interpreters on a TCPStore on localhost; each world size runs on a simulated machine
of its own with as many devices (MTIA_SIM_MACHINE=<current>-bench<N>, MTIA_SIM_DEVICES=N). all_reduce:
medians of --reps timed calls of each side, measured in turns after a gloo barrier (included on both
sides; bench/torch_timing.paired), the device side closed by torch.mtia.synchronize(). DDP: median
step time on rank 0 after warm-up, each step closed by torch.mtia.synchronize(). Float32 data.
Writes OUT.md and OUT.json with --out (bench/bench_report.publish). Reported figures only; nothing
here asserts.
"""
import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _join(rank, world, port):
    """This rank's device, its mtia default group on a TCPStore, and a gloo group beside it."""
    import torch
    import torch.distributed as dist

    import torch_mtia  # noqa: F401

    torch.mtia.set_device(rank)
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0)
    dist.init_process_group("mtia", store=store, rank=rank, world_size=world)
    return dist.new_group(backend="gloo")


def _rank(rank, world, port, max_bytes, reps):
    """all_reduce of 1 KiB to max_bytes (x4 each time) on both backends: [(bytes, mtia_s, gloo_s)]."""
    import torch
    import torch.distributed as dist

    sys.path.insert(0, BENCH_DIR)
    from torch_timing import paired

    gloo = _join(rank, world, port)
    rows = []
    size = 1024
    while size <= max_bytes:
        dev = torch.ones(size // 4, device="mtia")
        cpu = torch.ones(size // 4)

        def on_device():
            dist.barrier(group=gloo)
            dist.all_reduce(dev)

        def on_cpu():
            dist.barrier(group=gloo)
            dist.all_reduce(cpu, group=gloo)

        # The largest sizes take seconds per call with both ranks on a few cores: fewer turns.
        n = reps if size <= 16 * MIB else max(3, reps // 3)
        t_dev, t_cpu = paired([(on_device, torch.mtia.synchronize), (on_cpu, lambda: None)], n)
        rows.append({"bytes": size, "mtia_s": t_dev, "gloo_s": t_cpu, "reps": n})
        if rank == 0:
            print(f"  {world} ranks, {size} bytes: mtia {t_dev * 1e3:.3f} ms, gloo "
                  f"{t_cpu * 1e3:.3f} ms", flush=True)
        del dev, cpu
        size *= 4
    dist.destroy_process_group()
    return rows


def _ddp_rank(rank, world, port, steps, global_batch):
    """Median seconds of a GPT training step: DDP over world ranks (each on its share of the global
    batch), or the plain model on the whole batch when world is 1."""
    import torch
    import torch.distributed as dist

    from torch_mtia import ddp_demo
    from torch_mtia.demo_models import make, train_step

    if world > 1:
        _join(rank, world, port)
    else:
        import torch_mtia  # noqa: F401
    device = torch.device("mtia", rank)
    model, make_opt, _ = make("gpt")
    model = model.to(device)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = make_opt(model)
    share = global_batch // world
    batches = [[t[rank * share:(rank + 1) * share].to(device) for t in b]
               for b in ddp_demo.global_batches(4, global_batch)]
    times = []
    for i in range(steps + 3):  # three of warm-up: optimizer state, DDP's rebuilt buckets
        start = time.perf_counter()
        train_step(model, opt, batches[i % len(batches)])
        torch.mtia.synchronize()
        times.append(time.perf_counter() - start)
    if world > 1:
        dist.destroy_process_group()
    return {"world": world, "global_batch": global_batch, "per_rank": share,
            "step_s": statistics.median(times[3:]), "steps": steps}


def _spawn(role, world, args, extra_env=None):
    """Runs role ("all_reduce" or "ddp") on world fresh ranks of a machine of world devices of its
    own (extra_env added to their environment); returns rank 0's result."""
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "rank0.json")
        env = dict(os.environ, MTIA_SIM_DEVICES=str(max(2, world)),
                   MTIA_SIM_MACHINE=os.environ.get("MTIA_SIM_MACHINE", "default") + f"-bench{world}",
                   **(extra_env or {}))
        port = str(_free_port())
        procs = [subprocess.Popen([sys.executable, __file__, "--role", role, "--world", str(world),
                                   "--rank", str(r), "--port", port, "--result", result,
                                   "--max-bytes", str(args.max_bytes), "--reps", str(args.reps),
                                   "--steps", str(args.steps), "--batch", str(args.batch)], env=env)
                 for r in range(world)]
        codes = [p.wait() for p in procs]
        if any(codes):
            sys.exit(f"torch_dist_bench: {role} on {world} ranks failed: exit codes {codes}")
        with open(result) as f:
            return json.load(f)


def _run_rank(args):
    if args.role == "all_reduce":
        out = _rank(args.rank, args.world, args.port, args.max_bytes, args.reps)
    else:
        out = _ddp_rank(args.rank, args.world, args.port, args.steps, args.batch)
    if args.rank == 0:
        with open(args.result, "w") as f:
            json.dump(out, f)


def _gbps(nbytes, seconds):
    return nbytes / seconds / 1e9


def _allreduce_table(world, rows, title=None):
    bus = 2 * (world - 1) / world
    lines = [title or f"### all_reduce, float32, {world} processes", "",
             "| size (B) | mtia time (us) | mtia algbw (GB/s) | mtia busbw (GB/s) | gloo time (us) "
             "| gloo algbw (GB/s) | gloo busbw (GB/s) | mtia/gloo time |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        b, d, c = r["bytes"], r["mtia_s"], r["gloo_s"]
        lines.append(f"| {b} | {d * 1e6:.1f} | {_gbps(b, d):.3f} | {_gbps(b * bus, d):.3f} | "
                     f"{c * 1e6:.1f} | {_gbps(b, c):.3f} | {_gbps(b * bus, c):.3f} | {d / c:.2f} |")
    return lines


def _ddp_table(ddp):
    one = next(r for r in ddp if r["world"] == 1)["step_s"]
    lines = ["### GPT-style decoder training step (AdamW), DDP against one process", "",
             "| processes | global batch | per process | median step (ms) | speed-up over 1 |",
             "|---:|---:|---:|---:|---:|"]
    for r in ddp:
        lines.append(f"| {r['world']} | {r['global_batch']} | {r['per_rank']} | "
                     f"{r['step_s'] * 1e3:.2f} | {one / r['step_s']:.2f}x |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="write OUT.md and OUT.json")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4],
                        help="world sizes of the all_reduce tables")
    parser.add_argument("--max-bytes", type=int, default=256 * MIB)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--steps", type=int, default=15, help="timed DDP steps")
    parser.add_argument("--batch", type=int, default=16, help="DDP's global batch")
    parser.add_argument("--cross-host", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure the forced cross-host path on 2 ranks against gloo alone")
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("--world", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        _run_rank(args)
        return

    sys.path.insert(0, BENCH_DIR)
    import bench_report
    import torch

    load_before = os.getloadavg()[0]
    results = {"all_reduce": {}, "ddp": []}
    for world in args.ranks:
        print(f"all_reduce on {world} ranks", flush=True)
        results["all_reduce"][str(world)] = _spawn("all_reduce", world, args)
    if args.cross_host:
        print("all_reduce on 2 ranks, forced cross-host path", flush=True)
        results["cross_host"] = _spawn("all_reduce", 2, args, {"MTIA_DIST_FORCE_CROSS_HOST": "1"})
    for world in (1, 2):
        print(f"DDP step on {world} process{'es' if world > 1 else ''}", flush=True)
        results["ddp"].append(_spawn("ddp", world, args))
    load_after = os.getloadavg()[0]
    results["meta"] = {"commit": bench_report.commit(), "torch": torch.__version__,
                       "cpus": os.cpu_count(), "load_before": load_before, "load_after": load_after,
                       "staging_bytes": os.environ.get("MTIA_DIST_STAGING_BYTES", "default"),
                       "reps": args.reps}

    lines = ["# torch.distributed on MTIA tensors: benchmark results", "",
             "Generated by `bench/torch_dist_bench.py` (one run; it starts its own ranks). all_reduce: "
             "medians of", f"{args.reps} calls (a third of that above 16 MiB) per side, the mtia "
             "backend on device tensors and gloo on CPU tensors", "measured in turns in the same "
             "processes after a gloo barrier (included on both sides); device times closed by",
             "`torch.mtia.synchronize()`. algbw = bytes / time, busbw = algbw * 2 (n - 1) / n "
             "(nccl-tests). DDP: median of", f"{args.steps} steps on rank 0 after three of warm-up, "
             "the same global batch on 1 and 2 processes. Reported, not asserted.", "",
             f"- commit {results['meta']['commit']}, PyTorch {torch.__version__}, "
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
             f"{load_before:.2f} at the start, {load_after:.2f} at the end",
             f"- MTIA_DIST_STAGING_BYTES {results['meta']['staging_bytes']}; each world size on a "
             "simulated machine of its own with one device per process", ""]
    for world in args.ranks:
        lines += _allreduce_table(world, results["all_reduce"][str(world)]) + [""]
    if args.cross_host:
        lines += _allreduce_table(2, results["cross_host"], (
            "### all_reduce, float32, 2 processes, cross-host path forced (MTIA_DIST_FORCE_CROSS_HOST"
            "=1: pinned staging and gloo): mtia/gloo is the staging overhead over gloo alone")) + [""]
    lines += _ddp_table(results["ddp"])
    bench_report.publish("\n".join(lines) + "\n", results, args.out)


if __name__ == "__main__":
    main()
