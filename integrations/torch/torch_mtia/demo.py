"""python3 -m torch_mtia.demo: the device, streams, an MTIAGraph's speed-up over eager launches and a
memory summary."""
import time

import torch

import torch_mtia


def forward(x, layers):
    for w, b in layers:
        x = torch.relu(x @ w + b)
    return x


def main():
    dev = torch_mtia.device(0)
    props = torch_mtia.get_device_properties(0)
    print(f"devices: {torch_mtia.device_count()}; using {dev}: {props['name']}, "
          f"{props['total_memory'] / 2**30:.1f} GiB, capability {torch_mtia.get_device_capability(0)}")

    s = torch_mtia.Stream()
    print(f"streams: current {torch_mtia.current_stream()}, side {s}")
    a = torch.ones(256, 256, device=dev)
    with torch_mtia.stream(s):
        s.wait_stream(torch_mtia.default_stream())
        b = a * 2
    torch_mtia.current_stream().wait_stream(s)
    print(f"  side-stream result: {b.sum().item():.0f} (expected {2 * 256 * 256})")

    # Eight small layers (24 launches per step), run many times: launch-bound work, what graphs are for.
    x = torch.randn(4, 16, device=dev)
    layers = [(torch.randn(16, 16, device=dev) / 4, torch.randn(16, device=dev)) for _ in range(8)]
    steps = 200
    forward(x, layers)
    torch_mtia.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        y = forward(x, layers)
    torch_mtia.synchronize()
    eager = (time.perf_counter() - start) / steps

    g = torch_mtia.MTIAGraph()
    with torch_mtia.graph(g):
        static_y = forward(x, layers)
    # A new input in the captured tensor: the replays must compute from it, as the CPU does.
    new_x = torch.randn(4, 16)
    x.copy_(new_x)
    start = time.perf_counter()
    for _ in range(steps):
        g.replay()
    torch_mtia.synchronize()
    replay = (time.perf_counter() - start) / steps
    expected = forward(new_x, [(w.cpu(), b.cpu()) for w, b in layers])
    same = torch.allclose(static_y.cpu(), expected, rtol=1e-4, atol=1e-5) and not torch.allclose(expected, y.cpu())
    print(f"graph: eager {eager * 1e6:.0f} us/step, replay {replay * 1e6:.0f} us/step, "
          f"speed-up {eager / replay:.2f}x, same result as the CPU on a new input: {same}")

    stats = torch_mtia.memory_stats()
    print(f"memory: allocated {stats['dram']['allocated_bytes'] / 2**20:.2f} MiB "
          f"(peak {stats['dram']['peak_bytes'] / 2**20:.2f} MiB), reserved "
          f"{torch_mtia.memory_reserved() / 2**20:.2f} MiB, device allocations {stats['num_device_alloc']}")
    del g, static_y, y
    torch_mtia.empty_cache()
    print(f"  after empty_cache: reserved {torch_mtia.memory_reserved() / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
