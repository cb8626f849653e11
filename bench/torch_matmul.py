"""512x512x512 torch.mm on the MTIA device (synchronised after each product) beside the CPU's torch.mm
with one thread, float32 and bfloat16: medians and the device/CPU ratio, in one run.

    PYTHONPATH=build/integrations/torch python bench/torch_matmul.py [--size N] [--reps R]
"""
import argparse
import statistics
import time

import torch

import torch_mtia  # noqa: F401  (registers the device)


def median_seconds(fn, reps, sync=lambda: None):
    fn()
    sync()  # warm-up: first launch loads the kernel, first CPU call sets up BLAS
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--reps", type=int, default=21)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = args.size
    dev = torch.device("mtia", 0)
    print(f"torch.mm {n}x{n}x{n}, median of {args.reps} (CPU: torch.set_num_threads(1))")
    print(f"{'dtype':<10}{'device ms':>12}{'CPU ms':>12}{'ratio':>8}")
    for dtype in (torch.float32, torch.bfloat16):
        g = torch.Generator().manual_seed(0)
        a = torch.randn(n, n, generator=g).to(dtype)
        b = torch.randn(n, n, generator=g).to(dtype)
        da, db = a.to(dev), b.to(dev)
        t_dev = median_seconds(lambda: torch.mm(da, db), args.reps, torch.mtia.synchronize)
        t_cpu = median_seconds(lambda: torch.mm(a, b), args.reps)
        print(f"{str(dtype).split('.')[-1]:<10}{t_dev * 1e3:>12.3f}{t_cpu * 1e3:>12.3f}"
              f"{t_dev / t_cpu:>8.2f}")


if __name__ == "__main__":
    main()
