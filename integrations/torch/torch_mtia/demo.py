"""python3 -m torch_mtia.demo: PyTorch's own MTIA API on the runtime: the device, streams, a
torch.mtia.MTIAGraph's speed-up over eager launches, a GPT-style model trained on the device (eager
and captured step times beside the CPU's), the GEMM configuration
used for each of the model's matrix shapes (tuned and cached on disk with --tune), a memory summary
and a snapshot file that `mtia-mem summary` opens (python3 -m torch_mtia.demo --snapshot FILE)."""
import argparse
import copy
import pickle
import statistics
import time

import torch

import torch_mtia
from torch_mtia import memory
from torch_mtia.demo_models import capture_step, make, train_step


def step_time(fn, steps, sync):
    """Median seconds of fn() over steps runs, each closed by sync(), after two runs of warm-up (the
    optimizer makes its state, the kernels are looked up)."""
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def train_gpt(dev, steps):
    """The GPT-style decoder trained with AdamW on the CPU (one thread) and on the device, then the
    device's step captured in a graph and replayed on new batches; prints times and losses."""
    cpu_model, make_opt, make_batch = make("gpt")
    dev_model = copy.deepcopy(cpu_model).to(dev)
    cpu_opt, dev_opt = make_opt(cpu_model), make_opt(dev_model)
    g = torch.Generator().manual_seed(0)
    batches = [make_batch(g) for _ in range(steps)]
    dev_batches = [[t.to(dev) for t in b] for b in batches]
    # One CPU thread for both sides: the CPU's step on one core, and no idle OpenMP workers spinning
    # beside the device's engine threads.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    it = iter(batches * 3)
    cpu_step = step_time(lambda: train_step(cpu_model, cpu_opt, next(it)), steps, lambda: None)
    torch_mtia.reset_fallback_counts()
    it = iter(dev_batches * 3)
    dev_step = step_time(lambda: train_step(dev_model, dev_opt, next(it)), steps, torch.mtia.synchronize)
    fallbacks = sum(torch_mtia.fallback_counts().values())
    static = [t.clone() for t in dev_batches[0]]
    side = torch.mtia.Stream()
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        train_step(dev_model, dev_opt, static)  # warm-up on a side stream, as CUDA-graph users do
    torch.mtia.current_stream().wait_stream(side)
    graph, static_loss = capture_step(dev_model, dev_opt, static)
    it = iter(dev_batches * 3)

    def replay():
        for s, b in zip(static, next(it)):
            s.copy_(b)
        graph.replay()

    replay_step = step_time(replay, steps, torch.mtia.synchronize)
    torch.set_num_threads(threads)
    print(f"training (GPT-style decoder, AdamW, {sum(p.numel() for p in cpu_model.parameters())} "
          f"parameters): CPU (1 thread) {cpu_step * 1e3:.2f} ms/step, device eager "
          f"{dev_step * 1e3:.2f} ms/step ({dev_step / cpu_step:.2f}x the CPU, {fallbacks} fallback "
          f"runs), device graph replay {replay_step * 1e3:.2f} ms/step ({dev_step / replay_step:.2f}x "
          f"faster than eager); loss {static_loss.item():.3f}")


def gemm_choices(dev, tune):
    """The matrix products of the GPT model's training step (recorded on the CPU: the same shapes)
    and the GEMM configuration the device uses for each (torch_mtia.gemm_tuning): the tuned one,
    from the disk cache or tuned now (tune), or the default."""
    from torch_mtia import gemm_tuning

    model, make_opt, make_batch = make("gpt")
    opt = make_opt(model)
    batch = make_batch(torch.Generator().manual_seed(0))
    shapes = gemm_tuning.record_shapes(lambda: train_step(model, opt, batch))
    cached = set(gemm_tuning.installed())  # installed at start-up from the cache
    tuned = {}
    if tune:
        by_dtype = {}
        for dtype, b, m, k, n in shapes:
            by_dtype.setdefault(dtype, []).append((b, m, k, n))
        for dtype, dtype_shapes in by_dtype.items():
            tuned.update(gemm_tuning.tune(dtype_shapes, dtypes=(dtype,), device=dev.index))
    print(f"GEMM choices for the GPT step's {len(shapes)} product shapes"
          f"{'' if tune else ' (python3 -m torch_mtia.demo --tune to tune them)'}:")
    for (dtype, b, m, k, n), calls in sorted(shapes.items(), key=lambda kv: kv[0][1:]):
        cls = gemm_tuning.shape_class(dtype, m, n, k, b)
        config = gemm_tuning.choice(dtype, m, n, k, b)
        if cls in tuned:
            where = ("tuned, from the cache" if tuned[cls].cached
                     else f"tuned now, {tuned[cls].time_ms * 1e3:.0f} us")
        elif cls in cached:
            where = "tuned, from the cache"
        else:
            where = "not tuned"
        name = str(dtype).removeprefix("torch.")
        op = f"bmm {b}x" if b > 1 else "mm "
        bound = tuple(2 ** e for e in cls[1:])
        print(f"  {name} {op}{m}x{k} @ {k}x{n} ({calls} call{'s' if calls > 1 else ''}, class "
              f"(m, n, k, batch) <= {bound}): {gemm_tuning.describe(config)} ({where})")


def forward(x, layers):
    for w, b in layers:
        x = torch.relu(x @ w + b)
    return x


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m torch_mtia.demo")
    parser.add_argument("--snapshot", metavar="FILE",
                        help="record the memory history and write a snapshot there (read it with mtia-mem)")
    parser.add_argument("--tune", action="store_true",
                        help="tune the GEMM configurations of the model's product shapes (cached on disk)")
    args = parser.parse_args(argv)

    # Upstream's torch.mtia.record_memory_history and memory_stats do nothing before torch.mtia's
    # own initialisation (the first tensor does not run it).
    torch.mtia.init()
    dev = torch.device("mtia", 0)
    props = torch.mtia.get_device_properties(dev)
    print(f"devices: {torch.mtia.device_count()}; using {dev}: {props['name']}, "
          f"{props['total_memory'] / 2**30:.1f} GiB, capability {torch.mtia.get_device_capability(dev)}")
    if args.snapshot:
        torch.mtia.record_memory_history("all", stacks="python")

    s = torch.mtia.Stream(device=dev)
    print(f"streams: current {torch.mtia.current_stream()}, side {s}")
    a = torch.ones(256, 256, device=dev)
    with torch.mtia.stream(s):
        s.wait_stream(torch.mtia.default_stream())
        b = a * 2
    torch.mtia.current_stream().wait_stream(s)
    print(f"  side-stream result: {b.sum().item():.0f} (expected {2 * 256 * 256})")

    # Eight small layers (24 launches per step), run many times: launch-bound work, what graphs are for.
    x = torch.randn(4, 16, device=dev)
    layers = [(torch.randn(16, 16, device=dev) / 4, torch.randn(16, device=dev)) for _ in range(8)]
    steps = 200
    forward(x, layers)
    torch.mtia.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        y = forward(x, layers)
    torch.mtia.synchronize()
    eager = (time.perf_counter() - start) / steps

    g = torch.mtia.MTIAGraph()
    with torch.mtia.graph(g):
        static_y = forward(x, layers)
    # A new input in the captured tensor: the replays must compute from it, as the CPU does.
    new_x = torch.randn(4, 16)
    x.copy_(new_x)
    start = time.perf_counter()
    for _ in range(steps):
        g.replay()
    torch.mtia.synchronize()
    replay = (time.perf_counter() - start) / steps
    expected = forward(new_x, [(w.cpu(), b.cpu()) for w, b in layers])
    same = torch.allclose(static_y.cpu(), expected, rtol=1e-4, atol=1e-5) and not torch.allclose(expected, y.cpu())
    print(f"graph: eager {eager * 1e6:.0f} us/step, replay {replay * 1e6:.0f} us/step, "
          f"speed-up {eager / replay:.2f}x, same result as the CPU on a new input: {same}")

    gemm_choices(dev, args.tune)
    train_gpt(dev, steps=10)

    stats = torch.mtia.memory_stats()
    print(f"memory: allocated {stats['dram']['allocated_bytes'] / 2**20:.2f} MiB "
          f"(peak {stats['dram']['peak_bytes'] / 2**20:.2f} MiB), reserved "
          f"{memory.memory_reserved() / 2**20:.2f} MiB, device allocations {stats['num_device_alloc']}")
    if args.snapshot:
        # Upstream's snapshot dict, pickled as torch.cuda.memory._dump_snapshot does: the file
        # PyTorch's memory viewer and mtia-mem read.
        with open(args.snapshot, "wb") as f:
            pickle.dump(torch.mtia.snapshot(), f)
        torch.mtia.record_memory_history(None)
        print(f"  snapshot written to {args.snapshot} (mtia-mem summary {args.snapshot})")
    del g, static_y, y
    torch.mtia.empty_cache()
    print(f"  after empty_cache: reserved {memory.memory_reserved() / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
