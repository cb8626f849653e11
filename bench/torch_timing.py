"""Timing shared by the PyTorch benchmarks (torch_bench.py, torch_cnn_kernels.py,
torch_gpt_kernels.py): medians measured in turns, and an operator's per-call loops on the device and
the CPU. Reported figures only; nothing here asserts."""
import statistics
import time

import torch


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


def per_call(dev_fn, cpu_fn, iters, reps, queue=False):
    """Seconds per call of dev_fn (on the device, closed by torch.mtia.synchronize()) and of cpu_fn,
    medians of reps loops of iters calls measured in turns. With queue the device loop is captured
    once as a graph and replayed: what is left is the kernels and the device's per-command cost."""
    def loop(fn):
        def run():
            for _ in range(iters):
                fn()
        return run

    if queue:
        dev_fn()
        torch.mtia.synchronize()
        graph = torch.mtia.MTIAGraph()
        with torch.mtia.graph(graph):
            loop(dev_fn)()
        dev_run = graph.replay
    else:
        dev_run = loop(dev_fn)
    dev, cpu = paired([(dev_run, torch.mtia.synchronize), (loop(cpu_fn), nothing)], reps, warmup=3)
    return dev / iters, cpu / iters
