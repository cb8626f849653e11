"""The GPT training step's softmax and layer-norm operators, each timed alone (issue 19's 1.5x figure).

Each operator of torch_mtia.demo_models.TinyGPT's step (batch 4, context 16, dim 32, 4 heads, vocab
50) that normalises along the last dim: softmax and log_softmax with their backwards, native_layer_norm
and its backward, at the step's own shapes. A loop of --iters calls on the device closed by
torch.mtia.synchronize(), against the CPU's same loop with torch.set_num_threads(1); medians of --reps
loops, the two sides measured in turns. Device times include eager dispatch's per-launch host cost;
with --queue the device loop is captured once as a graph and replayed, which leaves the kernels and
the simulated device's per-command cost. Reported, never asserted.

    PYTHONPATH=build/integrations/torch .venv/bin/python bench/torch_gpt_kernels.py [--queue]
"""
import argparse

import torch
import torch.nn.functional as F

import torch_mtia  # noqa: F401  (registers the device)
from torch_timing import per_call

DEV = torch.device("mtia", 0)
CPU = torch.device("cpu")


def step_ops():
    """(name, make(device) -> callable) at the step's shapes."""
    g = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g)

    x = r(64, 32)  # rows of the residual stream (4 x 16 tokens, dim 32)
    x3 = r(4, 16, 32)
    w, b = r(32), r(32)
    att = r(4, 4, 16, 16)  # attention scores: batch, heads, query, key
    logits = r(64, 50)
    mask3 = [True, True, True]
    ops = []

    def add(name, fn, *tensors):
        ops.append((name, lambda dev: (lambda ts: (lambda: fn(*ts)))([t.to(dev) for t in tensors])))

    add("softmax (64x32, dim -1)", lambda a: a.softmax(-1), x)
    add("softmax (4x4x16x16, dim -1)", lambda a: a.softmax(-1), att)
    att_y = att.softmax(-1)
    add("_softmax_backward_data (4x4x16x16)",
        lambda go, y: torch.ops.aten._softmax_backward_data(go, y, -1, torch.float32), att, att_y)
    add("log_softmax (64x50)", lambda a: torch.log_softmax(a, 1), logits)
    add("_log_softmax_backward_data (64x50)",
        lambda go, y: torch.ops.aten._log_softmax_backward_data(go, y, 1, torch.float32), logits,
        torch.log_softmax(logits, 1))
    add("layer_norm (64x32)", lambda a, w_, b_: F.layer_norm(a, (32,), w_, b_), x, w, b)
    add("native_layer_norm (4x16x32)",
        lambda a, w_, b_: torch.ops.aten.native_layer_norm(a, [32], w_, b_, 1e-5), x3, w, b)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x3, [32], w, b, 1e-5)
    add("native_layer_norm_backward (4x16x32, all grads)",
        lambda go, a, m, rs, w_, b_: torch.ops.aten.native_layer_norm_backward(go, a, [32], m, rs, w_, b_,
                                                                                mask3),
        r(4, 16, 32), x3, mean, rstd, w, b)
    return ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--iters", type=int, default=100, help="calls per timed loop of one operator")
    parser.add_argument("--queue", action="store_true",
                        help="time each device loop as a captured graph (kernel + command cost only)")
    parser.add_argument("--only", help="substring of the operators to time")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.mtia.init()
    print(f"| operator (GPT step's shapes) | device us/call{' (graph)' if args.queue else ''} "
          f"| CPU us/call (1 thread) | ratio |")
    print("|---|---:|---:|---:|")
    for name, make_fn in step_ops():
        if args.only and args.only not in name:
            continue
        dev, cpu = per_call(make_fn(DEV), make_fn(CPU), args.iters, args.reps, args.queue)
        print(f"| {name} | {dev * 1e6:.1f} | {cpu * 1e6:.1f} | {dev / cpu:.2f} |")


if __name__ == "__main__":
    main()
