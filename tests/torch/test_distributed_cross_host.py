"""The mtia c10d backend's cross-host path: collectives staged through pinned host memory and run by
gloo, checked against gloo itself on CPU tensors with the same data.

Two scenarios of two ranks each (fresh interpreters on a TCPStore, as test_distributed.py starts
them): one machine with MTIA_DIST_FORCE_CROSS_HOST=1 set in one rank only (every rank must follow
it), and two simulated machines (MTIA_SIM_MACHINE differs per rank), which share no device memory
and must take the cross-host path by themselves. The staging chunks are made tiny so that the
larger tensors go through many chunks of the three-buffer pipeline.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dist_harness import assert_equal, run_ranks, tcp_store  # noqa: E402

DTYPES = ["float32", "bfloat16", "int16", "uint8", "int64", "bool"]


def _run(world, scenario, rank_env):
    run_ranks(__file__, world, scenario, {"MTIA_DIST_STAGING_BYTES": "256"}, rank_env)


def test_forced_cross_host():
    # Only rank 1 asks for it: the group agrees through the store.
    _run(2, "forced", lambda rank: {"MTIA_DIST_FORCE_CROSS_HOST": "1"} if rank == 1 else {})


def test_forced_cross_host_four_ranks():
    # Four ranks on a four-device machine of their own; rank 2 alone asks for the path.
    machine = os.environ.get("MTIA_SIM_MACHINE", "default") + "-xh4"
    _run(4, "forced", lambda rank: dict({"MTIA_SIM_DEVICES": "4", "MTIA_SIM_MACHINE": machine},
                                        **({"MTIA_DIST_FORCE_CROSS_HOST": "1"} if rank == 2 else {})))


def test_ranks_on_two_machines():
    base = os.environ.get("MTIA_SIM_MACHINE", "default")
    _run(2, "two_machines", lambda rank: {"MTIA_SIM_MACHINE": f"{base}-x{rank}",
                                          "MTIA_DIST_FORCE_CROSS_HOST": "0"})


# ---- the worker (runs in each rank's process) ----

def _worker(scenario, rank, world, store_path):
    import torch
    import torch.distributed as dist

    import torch_mtia

    # Each rank's own device on one machine; device 0 of each machine on two.
    index = rank if scenario == "forced" else 0
    torch.mtia.set_device(index)
    device = torch.device("mtia", index)
    store = tcp_store(rank, world, store_path)
    dist.init_process_group("mtia", store=store, rank=rank, world_size=world)
    gloo = dist.new_group(backend="gloo")
    ops = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT,
           "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}

    def data(dtype, n, salt, r=rank):
        # Every rank computes the same values for rank r (seeded by (r, salt)); factors of
        # magnitude 1 and 2 keep products exact in every dtype.
        g = torch.Generator().manual_seed(1000 * r + salt)
        if dtype == torch.bool:
            return torch.randint(0, 2, (n,), generator=g).bool()
        low = 0 if dtype == torch.uint8 else -2
        v = torch.randint(low, 3, (n,), generator=g)
        return torch.where(v == 0, torch.ones_like(v), v).to(dtype)

    def check(got, want, what):
        assert_equal(got, want, what, rank)

    def reduced(make, dtype, name):
        # gloo's all_reduce of every rank's make(r); for the dtypes gloo lacks (int16, bool), the
        # same combined here from every rank's data, in the dtype.
        if dtype not in (torch.int16, torch.bool):
            ref = make(rank)
            dist.all_reduce(ref, op=ops[name], group=gloo)
            return ref
        if dtype == torch.bool:
            name = {"sum": "max", "product": "min"}.get(name, name)
        combine = {"sum": torch.add, "product": torch.mul, "min": torch.minimum,
                   "max": torch.maximum}[name]
        ref = make(0)
        for r in range(1, world):
            ref = combine(ref, make(r))
        return ref

    def avg_of(total, dtype):
        if dtype == torch.bool:
            return total
        if dtype.is_floating_point:
            return total / world
        return torch.div(total, world, rounding_mode="trunc")

    def check_dtype(dtype_name, n, salt):
        dtype = getattr(torch, dtype_name)
        what = f"{dtype_name} n={n}"
        for name, op in ops.items():
            ref = reduced(lambda r: data(dtype, n, salt, r), dtype, name)
            t = data(dtype, n, salt).to(device)
            dist.all_reduce(t, op=op)
            check(t, ref, f"all_reduce {name} {what}")
        ref = avg_of(reduced(lambda r: data(dtype, n, salt, r), dtype, "sum"), dtype).to(dtype)
        t = data(dtype, n, salt).to(device)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        check(t, ref, f"all_reduce avg {what}")
        # Coalesced: two tensors in one call.
        pair = [data(dtype, n, salt).to(device), data(dtype, n + 3, salt + 1).to(device)]
        dist.all_reduce_coalesced(pair, op=dist.ReduceOp.MAX)
        check(pair[0], reduced(lambda r: data(dtype, n, salt, r), dtype, "max"),
              f"all_reduce_coalesced [0] {what}")
        check(pair[1], reduced(lambda r: data(dtype, n + 3, salt + 1, r), dtype, "max"),
              f"all_reduce_coalesced [1] {what}")

        for root in range(world):
            t = data(dtype, n, salt + root).to(device)
            dist.broadcast(t, root)
            check(t, data(dtype, n, salt + root, root), f"broadcast root={root} {what}")
            host = data(dtype, n, salt + 2 + root)
            t = host.to(device)
            dist.reduce(t, root, op=dist.ReduceOp.SUM)
            want = reduced(lambda r: data(dtype, n, salt + 2 + root, r), dtype, "sum")
            check(t, want if rank == root else host, f"reduce sum root={root} {what}")
            t = host.to(device)
            dist.reduce(t, root, op=dist.ReduceOp.AVG)
            check(t, avg_of(want, dtype).to(dtype) if rank == root else host,
                  f"reduce avg root={root} {what}")

            outs = ([torch.zeros(n, dtype=dtype, device=device) for _ in range(world)]
                    if rank == root else None)
            dist.gather(data(dtype, n, salt + 4).to(device), outs, root)
            if rank == root:
                for r in range(world):
                    check(outs[r], data(dtype, n, salt + 4, r), f"gather [{r}] root={root} {what}")
            pieces = [data(dtype, n, salt + 5 + d, root) for d in range(world)]
            out = torch.zeros(n, dtype=dtype, device=device)
            dist.scatter(out, [p.to(device) for p in pieces] if rank == root else None, root)
            check(out, pieces[rank], f"scatter root={root} {what}")

        every = [data(dtype, n, salt + 6, r) for r in range(world)]
        outs = [torch.zeros(n, dtype=dtype, device=device) for _ in range(world)]
        dist.all_gather(outs, every[rank].to(device))
        for r in range(world):
            check(outs[r], every[r], f"all_gather [{r}] {what}")
        flat = torch.zeros(world * n, dtype=dtype, device=device)
        dist.all_gather_into_tensor(flat, every[rank].to(device))
        check(flat, torch.cat(every), f"all_gather_into_tensor {what}")

        def whole(r):
            return torch.cat([data(dtype, n, salt + 7 + d, r) for d in range(world)])

        for name in ("sum", "max"):
            want = reduced(whole, dtype, name)[rank * n:(rank + 1) * n]
            out = torch.zeros(n, dtype=dtype, device=device)
            dist.reduce_scatter_tensor(out, whole(rank).to(device), op=ops[name])
            check(out, want, f"reduce_scatter_tensor {name} {what}")
            out = torch.zeros(n, dtype=dtype, device=device)
            dist.reduce_scatter(out, list(whole(rank).to(device).chunk(world)), op=ops[name])
            check(out, want, f"reduce_scatter {name} {what}")

        # all_to_all_single, equal splits (world * n elements) against gloo on the same bytes
        # (as uint8: gloo lacks int16), then uneven splits: rank r sends n + d rows of 3 to rank d.
        host = data(dtype, world * n, salt + 8)
        ref = torch.empty(world * n * host.element_size(), dtype=torch.uint8)
        dist.all_to_all_single(ref, host.view(torch.uint8), group=gloo)
        out = torch.zeros(world * n, dtype=dtype, device=device)
        dist.all_to_all_single(out, host.to(device))
        check(out.cpu().view(torch.uint8), ref, f"all_to_all_single {what}")
        send = [n + d for d in range(world)]
        recv = [n + rank] * world
        rows = data(dtype, 3 * sum(send), salt + 9).view(-1, 3)
        out = torch.zeros(sum(recv), 3, dtype=dtype, device=device)
        dist.all_to_all_single(out, rows.to(device), recv, send)
        want = torch.cat([data(dtype, 3 * sum(send), salt + 9, r).view(-1, 3)
                          [sum(send[:rank]):sum(send[:rank + 1])] for r in range(world)])
        check(out, want, f"all_to_all_single uneven {what}")

    def check_streams():
        # Async work; then on a side stream held back by a sleep: the collective waits for the
        # fill queued before it on that stream, and a kernel queued after it sees the sum.
        ref = data(torch.float32, 1000, 1)
        dist.all_reduce(ref, group=gloo)
        t = data(torch.float32, 1000, 1).to(device)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        check(t, ref, "async all_reduce")
        side = torch.mtia.Stream()
        with torch.mtia.stream(side):
            torch_mtia._C.sleep_on_stream(200_000)
            x = torch.full((4096,), float(rank + 1), device=device)
            dist.all_reduce(x)
            y = x * 2
        side.synchronize()
        check(y, torch.full((4096,), float(sum(range(1, world + 1)) * 2)),
              "side-stream all_reduce then a kernel")
        torch.mtia.synchronize()
        assert work.is_completed()

    def check_p2p():
        # send/recv by tag, recv from any source, all_to_all of lists of uneven sizes.
        # A ring (one pair both ways on two ranks): each rank sends to the next without blocking,
        # then receives from the previous one, by tag.
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        for dtype_name in ("float32", "int16", "bool"):
            dtype = getattr(torch, dtype_name)
            got = torch.zeros(300, dtype=dtype, device=device)
            sent = dist.isend(data(dtype, 300, 61).to(device), nxt, tag=5)
            dist.recv(got, prv, tag=5)
            sent.wait()
            check(got, data(dtype, 300, 61, prv), f"recv {dtype_name}")
        # Every other rank sends to rank 0, which receives from any source: each sender once.
        if rank == 0:
            seen = set()
            for _ in range(world - 1):
                got = torch.zeros(7, device=device)
                src = dist.recv(got)
                check(got, data(torch.float32, 7, 63, src), f"recv from any source ({src})")
                seen.add(src)
            assert seen == set(range(1, world)), seen
        else:
            dist.send(data(torch.float32, 7, 63).to(device), 0)
        ins = [data(torch.int64, rank + d + 1, 70 + d).to(device) for d in range(world)]
        outs = [torch.zeros(r + rank + 1, dtype=torch.int64, device=device) for r in range(world)]
        dist.all_to_all(outs, ins)
        for r in range(world):
            check(outs[r], data(torch.int64, r + rank + 1, 70 + rank, r), f"all_to_all [{r}]")

    if scenario == "forced":
        # 7 elements (not divisible by the world size) and 300 (many 256-byte chunks); 1 for two.
        for i, dtype_name in enumerate(DTYPES):
            for n in (1, 7, 300) if dtype_name in ("float32", "bool") else (7, 300):
                check_dtype(dtype_name, n, salt=100 * i + n)
        check_streams()
        check_p2p()
    elif scenario == "two_machines":
        for i, dtype_name in enumerate(["float32", "int16"]):
            check_dtype(dtype_name, 301, salt=7 + i)
        check_streams()
    else:
        raise ValueError(scenario)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} ok", flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
