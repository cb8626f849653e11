"""all_reduce bandwidth of torch_mtia's c10d backend "mtia" (same-host path) against gloo on CPU
tensors of the same size, in the same processes and the same run, reported as nccl-tests do:
algorithm bandwidth (bytes / time) and bus bandwidth (algbw * 2 (n - 1) / n for all_reduce).

    PYTHONPATH=build/integrations/torch .venv/bin/python bench/torch_dist_bench.py [--ranks 2]
        [--max-bytes 67108864] [--reps 9]

Starts the ranks itself (fresh interpreters on a TCPStore on localhost; for 4 ranks run it with
MTIA_SIM_DEVICES=4). Each size: medians of --reps timed calls of each side, measured in turns after a
barrier (bench/torch_timing.paired), the device side closed by torch.mtia.synchronize(). Float32 data.
Reported figures only; nothing here asserts.

--cross-host runs the mtia side through the cross-host path (MTIA_DIST_FORCE_CROSS_HOST=1 in every
rank: pinned staging and gloo): its mtia/gloo column is then the staging overhead over gloo alone.
"""
import argparse
import os
import socket
import subprocess
import sys


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cross_host(enabled):
    """The ranks' environment for --cross-host, and the line that says which path is measured."""
    if not enabled:
        return {}, "same-host path"
    return ({"MTIA_DIST_FORCE_CROSS_HOST": "1"},
            "cross-host path (gloo over pinned staging): mtia/gloo is the staging overhead")


def _rank(rank, world, port, max_bytes, reps):
    import torch
    import torch.distributed as dist

    import torch_mtia  # noqa: F401

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_timing import paired

    torch.mtia.set_device(rank)
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0)
    dist.init_process_group("mtia", store=store, rank=rank, world_size=world)
    gloo = dist.new_group(backend="gloo")
    if rank == 0:
        print(_cross_host(os.environ.get("MTIA_DIST_FORCE_CROSS_HOST") == "1")[1])
        print(f"all_reduce, float32, {world} ranks, medians of {reps} "
              f"(MTIA_DIST_STAGING_BYTES={os.environ.get('MTIA_DIST_STAGING_BYTES', 'default')})")
        print("| bytes | mtia ms | gloo ms | mtia/gloo | mtia algbw GB/s | mtia busbw GB/s "
              "| gloo busbw GB/s |")
        print("|---|---|---|---|---|---|---|")
    size = 1024
    while size <= max_bytes:
        dev = torch.ones(size // 4, device="mtia")
        cpu = torch.ones(size // 4)

        def barrier():
            dist.barrier(group=gloo)

        def on_device():
            barrier()
            dist.all_reduce(dev)

        def on_cpu():
            barrier()
            dist.all_reduce(cpu, group=gloo)

        t_dev, t_cpu = paired([(on_device, torch.mtia.synchronize), (on_cpu, lambda: None)], reps)
        if rank == 0:
            bus = 2 * (world - 1) / world
            print(f"| {size} | {t_dev * 1e3:.3f} | {t_cpu * 1e3:.3f} | {t_dev / t_cpu:.2f} | "
                  f"{size / t_dev / 1e9:.3f} | {size * bus / t_dev / 1e9:.3f} | "
                  f"{size * bus / t_cpu / 1e9:.3f} |", flush=True)
        size *= 4
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--cross-host", action="store_true",
                        help="measure the cross-host path (forced) against gloo alone")
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        _rank(args.rank, args.ranks, args.port, args.max_bytes, args.reps)
        return
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, __file__, "--ranks", str(args.ranks), "--max-bytes",
                               str(args.max_bytes), "--reps", str(args.reps), "--rank", str(r),
                               "--port", str(port)],
                              env=dict(os.environ, **_cross_host(args.cross_host)[0]))
             for r in range(args.ranks)]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    main()
