"""Where the CNN training step's device time goes (issue 19's "graph replay >= 3x faster" figure).

1. Captures the TinyCNN training step (torch_mtia.demo_models, as bench/torch_bench.py's training())
   as a torch.mtia.MTIAGraph and times replays (median; closed by torch.mtia.synchronize()).
2. Times each operator the step runs, alone: a loop of ITER calls on the device closed by
   torch.mtia.synchronize(), against the CPU's same call with torch.set_num_threads(1). Shapes are the
   step's own. Device times include the per-launch host cost of eager dispatch; with --queue the
   loop is captured once as a graph of ITER calls and replayed, which leaves only the kernels and
   the simulated device's per-command cost.

With --replays-only it just replays the step for --seconds (to profile the engine threads, e.g.
`perf record -g -p PID --sort comm,symbol`; the engines are the threads named mtia-sim0.N).
Reported, never asserted.

    PYTHONPATH=build/integrations/torch .venv/bin/python bench/torch_cnn_kernels.py [--reps 30]
"""
import argparse
import copy
import time

import torch
import torch.nn.functional as F

import torch_mtia
from torch_mtia.demo_models import capture_step, make, train_step
from torch_timing import paired, per_call

DEV = torch.device("mtia", 0)


def captured_step():
    cpu_model, make_opt, make_batch = make("cnn")
    model = copy.deepcopy(cpu_model).to(DEV)
    opt = make_opt(model)
    static = [t.to(DEV) for t in make_batch(torch.Generator().manual_seed(0))]
    for _ in range(2):
        train_step(model, opt, static)
    torch.mtia.synchronize()
    graph, _ = capture_step(model, opt, static)
    return graph, model, opt, static


def step_ops():
    """(name, make(device) -> callable) for each operator of the step, at the step's shapes."""
    g = torch.Generator().manual_seed(0)

    def r(*shape, grad=False):
        return torch.randn(*shape, generator=g)

    x = r(8, 3, 16, 16)
    w1, b1 = r(8, 3, 3, 3), r(8)
    h1 = r(8, 8, 16, 16)
    w2, b2 = r(16, 8, 3, 3), r(16)
    p1 = r(8, 8, 8, 8)
    h2 = r(8, 16, 8, 8)
    feat, fw, fb = r(8, 16), r(10, 16), r(10)
    logits = r(8, 10)
    targets = torch.randint(0, 10, (8,), generator=g)
    bn_w, bn_b = r(8).abs(), r(8)
    rm, rv = torch.zeros(8), torch.ones(8)
    mask1 = [True, True, True]

    def on(t, dev):
        return t.to(dev)

    ops = []

    def add(name, fn, *tensors):
        ops.append((name, lambda dev: (lambda ts: (lambda: fn(*ts)))([on(t, dev) for t in tensors])))

    add("conv1 fwd (3->8, 16x16)", lambda x, w, b: F.conv2d(x, w, b, padding=1), x, w1, b1)
    add("conv2 fwd (8->16, 8x8)", lambda x, w, b: F.conv2d(x, w, b, padding=1), p1, w2, b2)
    add("conv1 bwd (weight,bias; no input grad)",
        lambda go, x, w: torch.ops.aten.convolution_backward(go, x, w, [8], [1, 1], [1, 1], [1, 1], False,
                                                              [0, 0], 1, [False, True, True]), h1, x, w1)
    add("conv2 bwd (input,weight,bias)",
        lambda go, x, w: torch.ops.aten.convolution_backward(go, x, w, [16], [1, 1], [1, 1], [1, 1], False,
                                                              [0, 0], 1, mask1), h2, p1, w2)
    add("batch_norm1 fwd train (8ch 16x16)",
        lambda x, w, b, m, v: torch.ops.aten.native_batch_norm(x, w, b, m, v, True, 0.1, 1e-5), h1, bn_w, bn_b,
        rm, rv)
    add("batch_norm1 bwd",
        lambda go, x, w, m, v: torch.ops.aten.native_batch_norm_backward(
            go, x, w, m, v, m, v.rsqrt(), True, 1e-5, mask1), h1, h1, bn_w, rm, rv)
    add("relu (8x8x16x16)", torch.relu, h1)
    add("threshold_backward (8x8x16x16)", lambda g_, x: torch.ops.aten.threshold_backward(g_, x, 0), h1, h1)
    add("max_pool2d_with_indices (2)", lambda x: torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2]), h1)

    def pool_bwd(go, x):
        _, idx = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
        return lambda: torch.ops.aten.max_pool2d_with_indices_backward(go, x, [2, 2], [2, 2], [0, 0], [1, 1],
                                                                        False, idx)

    ops.append(("max_pool2d bwd", lambda dev: pool_bwd(on(p1, dev), on(h1, dev))))
    add("adaptive_avg_pool2d(1) (8x16x8x8)", lambda x: F.adaptive_avg_pool2d(x, 1), h2)
    add("adaptive_avg_pool2d bwd",
        lambda go, x: torch.ops.aten._adaptive_avg_pool2d_backward(go, x), r(8, 16, 1, 1), h2)
    add("addmm (linear 16->10)", lambda a, w, b: F.linear(a, w, b), feat, fw, fb)
    add("mm (grad input 8x10x16)", torch.mm, logits, fw)
    add("mm (grad weight 10x8x16)", lambda a, b: torch.mm(a.t(), b), logits, feat)
    add("sum dim0 (bias grad 8x10)", lambda a: a.sum(0), logits)
    add("log_softmax (8x10)", lambda a: torch.log_softmax(a, 1), logits)
    add("log_softmax bwd",
        lambda go, out: torch.ops.aten._log_softmax_backward_data(go, out, 1, torch.float32), logits,
        torch.log_softmax(logits, 1))
    add("nll_loss", lambda a, t: F.nll_loss(a, t), torch.log_softmax(logits, 1), targets)
    add("nll_loss bwd",
        lambda go, a, t, tw: torch.ops.aten.nll_loss_backward(go, a, t, None, 1, -100, tw),
        torch.tensor(1.0), torch.log_softmax(logits, 1), targets, torch.tensor(8.0))
    return ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--iters", type=int, default=50, help="calls per timed loop of one operator")
    parser.add_argument("--replays-only", action="store_true")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--queue", action="store_true",
                        help="time each operator's loop as a captured graph (kernel + command cost only)")
    parser.add_argument("--only", help="substring of the operators to time")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.mtia.init()
    graph, *_keep = captured_step()
    if args.replays_only:
        end = time.perf_counter() + args.seconds
        n = 0
        while time.perf_counter() < end:
            graph.replay()
            n += 1
        torch.mtia.synchronize()
        print(f"{n} replays")
        return
    replay, = paired([(graph.replay, torch.mtia.synchronize)], args.reps, warmup=3)
    print(f"CNN step graph replay: {replay * 1e3:.3f} ms (median of {args.reps})")
    print()
    print(f"| operator (step's shapes) | device us/call | CPU us/call (1 thread) |")
    print("|---|---:|---:|")
    total_dev = total_cpu = 0.0
    for name, make_fn in step_ops():
        if args.only and args.only not in name:
            continue
        dev, cpu = per_call(make_fn(DEV), make_fn(torch.device("cpu")), args.iters, args.reps,
                            args.queue)
        total_dev += dev
        total_cpu += cpu
        print(f"| {name} | {dev * 1e6:.1f} | {cpu * 1e6:.1f} |")
    print(f"| sum | {total_dev * 1e6:.1f} | {total_cpu * 1e6:.1f} |")


if __name__ == "__main__":
    main()
