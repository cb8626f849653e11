"""The PyTorch integration's figures (issue 19), each beside the CPU in the same run:

1. eager training step on the device over the same step on the CPU (torch.set_num_threads(1), one core
   each), for the GPT-style decoder (AdamW) and the CNN (BatchNorm, SGD) of torch_mtia.demo_models;
2. graph replay of the captured step against the device's eager step;
3. a 512x512x512 torch.mm on the device against the CPU's, float32 and bfloat16;
4. per-operator overhead: add of two 16-element tensors, device over CPU.

Medians of repeated runs, the sides measured in turns; the device side is closed by
torch.mtia.synchronize(). Writes a markdown table
and the raw medians (JSON) when --out is given. Reported, never asserted.

    PYTHONPATH=build/integrations/torch .venv/bin/python bench/torch_bench.py [--out bench/results/torch]
"""
import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import time

import torch

import torch_mtia
from torch_mtia.demo_models import make, train_step

DEV = torch.device("mtia", 0)


def paired(fns, reps, warmup=2):
    """Median seconds of each (fn, sync) in fns, measured in turns (one run of each per round), so
    that the machine's slow and fast periods fall on every side alike."""
    for fn, sync in fns:
        for _ in range(warmup):
            fn()
        sync()
    times = [[] for _ in fns]
    for _ in range(reps):
        for k, (fn, sync) in enumerate(fns):
            start = time.perf_counter()
            fn()
            sync()
            times[k].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def nothing():
    pass


def training(kind, reps):
    cpu_model, make_opt, make_batch = make(kind)
    dev_model = copy.deepcopy(cpu_model).to(DEV)
    cpu_opt, dev_opt = make_opt(cpu_model), make_opt(dev_model)
    g = torch.Generator().manual_seed(0)
    batch = make_batch(g)
    static = [t.to(DEV) for t in batch]
    torch_mtia.reset_fallback_counts()
    paired([(lambda: train_step(dev_model, dev_opt, static), torch.mtia.synchronize)], 1)
    fallbacks = sum(torch_mtia.fallback_counts().values())
    graph = torch.mtia.MTIAGraph()
    # Gradients made inside the capture (from the graph's pool), as PyTorch's whole-network
    # capture recipe does: the replayed backward then writes them instead of adding to them.
    dev_opt.zero_grad(set_to_none=True)
    with torch.mtia.graph(graph):
        loss = dev_model(*static)
        loss.backward()
        dev_opt.step()
    cpu, eager, replay = paired([(lambda: train_step(cpu_model, cpu_opt, batch), nothing),
                                 (lambda: train_step(dev_model, dev_opt, static), torch.mtia.synchronize),
                                 (graph.replay, torch.mtia.synchronize)], reps)
    return {"cpu_s": cpu, "eager_s": eager, "replay_s": replay, "fallbacks": fallbacks}


def matmul(dtype, reps, n=512):
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=g).to(dtype) for _ in range(2))
    da, db = a.to(DEV), b.to(DEV)
    cpu, device = paired([(lambda: torch.mm(a, b), nothing),
                          (lambda: torch.mm(da, db), torch.mtia.synchronize)], reps)
    return {"cpu_s": cpu, "device_s": device}


def small_add(reps, ops=200):
    a, b = torch.randn(16), torch.randn(16)
    da, db = a.to(DEV), b.to(DEV)

    def many(x, y):
        for _ in range(ops):
            torch.add(x, y)

    cpu, device = paired([(lambda: many(a, b), nothing),
                          (lambda: many(da, db), torch.mtia.synchronize)], reps)
    return {"cpu_s": cpu / ops, "device_s": device / ops}


def fmt(seconds):
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} us"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out", help="write OUT.md and OUT.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.mtia.init()
    results = {kind: training(kind, args.reps) for kind in ("gpt", "cnn")}
    results["mm_float32"] = matmul(torch.float32, args.reps)
    results["mm_bfloat16"] = matmul(torch.bfloat16, args.reps)
    results["add16"] = small_add(args.reps)
    rows = []
    for kind, name in (("gpt", "GPT-style decoder, AdamW"), ("cnn", "CNN, BatchNorm, SGD")):
        r = results[kind]
        rows.append((f"eager training step, {name}", fmt(r["eager_s"]), fmt(r["cpu_s"]),
                     f"{r['eager_s'] / r['cpu_s']:.2f}x", "<= 1.5x"))
        rows.append((f"graph replay of the step, {name} (reference: device eager)", fmt(r["replay_s"]),
                     fmt(r["eager_s"]), f"{r['eager_s'] / r['replay_s']:.2f}x faster", ">= 3x faster"))
    for dtype in ("float32", "bfloat16"):
        r = results[f"mm_{dtype}"]
        rows.append((f"torch.mm 512x512x512 {dtype}", fmt(r["device_s"]), fmt(r["cpu_s"]),
                     f"{r['device_s'] / r['cpu_s']:.2f}x", "<= 2x" if dtype == "float32" else "reported"))
    r = results["add16"]
    rows.append(("add of two 16-element tensors, per op (200 queued, then synchronize)",
                 fmt(r["device_s"]), fmt(r["cpu_s"]), f"{r['device_s'] / r['cpu_s']:.2f}x", "aim <= 1.5x"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    lines = ["# PyTorch integration: benchmark results", "",
             "Generated by `bench/torch_bench.py`; medians of "
             f"{args.reps} runs after warm-up, CPU and device measured in turns; device times closed by",
             "`torch.mtia.synchronize()`; the CPU",
             "runs PyTorch 2.13 with `torch.set_num_threads(1)`. Ratios are device over CPU unless said.",
             "Reported, not asserted.", "",
             f"- commit {commit}, PyTorch {torch.__version__}, {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
             f"- fallback runs during the eager steps: GPT {results['gpt']['fallbacks']}, "
             f"CNN {results['cnn']['fallbacks']}", "",
             "| workload | device (median) | reference (median) | ratio | aim |", "|---|---:|---:|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out + ".md", "w") as f:
            f.write(text)
        with open(args.out + ".json", "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
