"""Point-to-point messages, all_to_all with split sizes and lists, and the coalesced collectives of
torch_mtia's c10d backend "mtia" (same-host path), checked against gloo on CPU tensors (or against
the data itself, which every rank can regenerate, where gloo lacks the operation).

Ranks are fresh interpreters on a TCPStore, started as in test_distributed.py (dist_harness); the
staging slots are small (MTIA_DIST_STAGING_BYTES) so that the larger messages take many chunks
through both slots.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dist_harness import run_ranks, tcp_store  # noqa: E402

STAGING = 64 * 1024
BIG = 3 * STAGING // 4 + 5  # float32 elements: three chunks and a bit


def _run(world, scenario, extra_env=None):
    run_ranks(__file__, world, scenario, dict({"MTIA_DIST_STAGING_BYTES": str(STAGING)},
                                              **(extra_env or {})))


def test_p2p_two_ranks():
    _run(2, "two")


def test_p2p_four_ranks():
    machine = os.environ.get("MTIA_SIM_MACHINE", "default") + "-p2p4"
    _run(4, "four", {"MTIA_SIM_DEVICES": "4", "MTIA_SIM_MACHINE": machine})


# ---- the worker (runs in each rank's process) ----

def _worker(scenario, rank, world, store_path):
    import torch
    import torch.distributed as dist

    import torch_mtia  # noqa: F401  (registers the backend)

    torch.mtia.set_device(rank)
    store = tcp_store(rank, world, store_path)
    dist.init_process_group("mtia", store=store, rank=rank, world_size=world)
    gloo = dist.new_group(backend="gloo")
    device = torch.device("mtia", rank)

    def data(dtype, n, salt, r=rank):
        g = torch.Generator().manual_seed(1000 * r + salt)
        return torch.randint(-100, 100, (n,), generator=g).to(dtype)

    def check(got, want, what):
        got = got.cpu()
        assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape,
                                                                     want.dtype, want.shape)
        if not torch.equal(got, want):
            bad = (got != want).nonzero()[:5].flatten().tolist()
            raise AssertionError(f"rank {rank}: {what}: differs at {bad}")

    def expect_error(call, words, what):
        try:
            call()
        except (RuntimeError, ValueError) as e:
            assert all(w in str(e) for w in words), (what, str(e))
        else:
            raise AssertionError(f"{what} did not raise")

    def p2p_pair(a, b, dtypes, sizes, salt):
        # a sends to b with send/recv, then b to a with isend/irecv; both checked against gloo's
        # send/recv of the same data.
        if rank not in (a, b):
            return
        for i, dtype_name in enumerate(dtypes):
            dtype = getattr(torch, dtype_name)
            for n in sizes:
                s = salt + 10 * i + n % 7
                if rank == a:
                    dist.send(data(dtype, n, s).to(device), b)
                    dist.send(data(dtype, n, s), b, group=gloo)
                    got = torch.zeros(n, dtype=dtype, device=device)
                    dist.irecv(got, b, tag=3).wait()
                    want = torch.zeros(n, dtype=dtype)
                    dist.recv(want, b, group=gloo, tag=3)
                else:
                    got = torch.zeros(n, dtype=dtype, device=device)
                    assert dist.recv(got, a) == a
                    want = torch.zeros(n, dtype=dtype)
                    dist.recv(want, a, group=gloo)
                    check(got, want, f"recv {a}->{b} {dtype_name} n={n}")
                    dist.isend(data(dtype, n, s + 1).to(device), a, tag=3).wait()
                    dist.send(data(dtype, n, s + 1), a, group=gloo, tag=3)
                    continue
                check(got, want, f"irecv {b}->{a} {dtype_name} n={n}")

    def all_to_all_checks(splits_of, salt):
        # all_to_all_single with split sizes (rank r sends splits_of(r)[d] rows to d) and the same
        # as lists, against gloo's all_to_all_single of the same data.
        for dtype_name, cols in [("float32", 3), ("int16", 1), ("bfloat16", 2), ("uint8", 5)]:
            dtype = getattr(torch, dtype_name)
            send = splits_of(rank)
            recv = [splits_of(r)[rank] for r in range(world)]
            host = data(dtype, sum(send) * cols, salt).view(-1, cols)
            out = torch.full((sum(recv), cols), 7, dtype=dtype, device=device)
            dist.all_to_all_single(out, host.to(device), recv, send)
            if dtype != torch.int16:  # gloo lacks int16: the rows every rank can regenerate
                want = torch.empty(sum(recv), cols, dtype=dtype)
                dist.all_to_all_single(want, host, recv, send, group=gloo)
            rows = []
            for r in range(world):
                theirs = data(dtype, sum(splits_of(r)) * cols, salt, r).view(-1, cols)
                start = sum(splits_of(r)[:rank])
                rows.append(theirs[start:start + splits_of(r)[rank]])
            regenerated = torch.cat(rows)
            if dtype == torch.int16:
                want = regenerated
            check(want, regenerated, f"gloo all_to_all_single {dtype_name} (the test's own view)")
            check(out, want, f"all_to_all_single splits {dtype_name}")
            outs = [torch.zeros(recv[r], cols, dtype=dtype, device=device) for r in range(world)]
            ins = list(host.to(device).split(send))
            dist.all_to_all(outs, [t.contiguous() for t in ins])
            check(torch.cat([o.cpu() for o in outs]), want, f"all_to_all lists {dtype_name}")

    if scenario == "two":
        other = 1 - rank
        p2p_pair(0, 1, ["float32", "bfloat16", "int64", "uint8"], [1, 7, BIG], salt=1)

        # batch_isend_irecv: both ranks send and receive at once, messages larger than a slot.
        mine = data(torch.float32, BIG, 50).to(device)
        got = torch.zeros(BIG, device=device)
        ops = [dist.P2POp(dist.irecv, got, other), dist.P2POp(dist.isend, mine, other)]
        if rank == 1:
            ops.reverse()
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        check(got, data(torch.float32, BIG, 50, other), "batch_isend_irecv exchange")

        # Tags match as gloo's: rank 0 sends tag 1 then tag 2, rank 1 receives tag 2 first;
        # messages of one tag arrive in posting order.
        if rank == 0:
            works = [dist.isend(data(torch.int32, n, 60 + n).to(device), 1, tag=t)
                     for n, t in [(5, 1), (BIG, 2), (9, 1)]]
            for w in works:
                w.wait()
        else:
            a = torch.zeros(BIG, dtype=torch.int32, device=device)
            dist.recv(a, 0, tag=2)
            b = torch.zeros(5, dtype=torch.int32, device=device)
            c = torch.zeros(9, dtype=torch.int32, device=device)
            wb, wc = dist.irecv(b, 0, tag=1), dist.irecv(c, 0, tag=1)
            wc.wait()
            wb.wait()
            check(a, data(torch.int32, BIG, 60 + BIG, 0), "tag 2 received first")
            check(b, data(torch.int32, 5, 65, 0), "tag 1, first message")
            check(c, data(torch.int32, 9, 69, 0), "tag 1, second message")

        # recv(src=None) returns the sender, as gloo's.
        if rank == 1:
            dist.send(data(torch.float64, 7, 70).to(device), 0, tag=4)
        else:
            t = torch.zeros(7, dtype=torch.float64, device=device)
            assert dist.recv(t, tag=4) == 1
            check(t, data(torch.float64, 7, 70, 1), "recv from any source")

        # A receive of another size fails on both sides, naming the sizes.
        t = torch.zeros(3 if rank == 0 else 4, device=device)
        expect_error(lambda: (dist.send(t, 1, tag=5) if rank == 0 else dist.recv(t, 0, tag=5)),
                     ["holds", "bytes"], "size mismatch")
        expect_error(lambda: dist.send(t, other, tag=-2), ["tag must be non-negative"],
                     "negative tag")

        all_to_all_checks(lambda r: [3, 0] if r == 0 else [5, 2], salt=80)

        # The coalesced forms against gloo: all_gather_coalesced, and all_gather_into_tensor and
        # reduce_scatter_tensor under the coalescing manager (FSDP's path).
        ins = [data(torch.float32, 7, 90), data(torch.float32, BIG, 91)]
        # want[r][i]: rank r's ins[i] (gloo's layout).
        want = [[torch.empty_like(i) for i in ins] for _ in range(world)]
        dist.all_gather_coalesced(want, ins, group=gloo)
        outs = [[torch.zeros_like(i, device=device) for i in ins] for _ in range(world)]
        dist.all_gather_coalesced(outs, [i.to(device) for i in ins])
        for r in range(world):
            for j in range(len(ins)):
                check(outs[r][j], want[r][j], f"all_gather_coalesced [{r}][{j}]")
        flat = [torch.zeros(world * i.numel(), device=device) for i in ins]
        with dist._coalescing_manager(async_ops=True) as cm:
            for f, i in zip(flat, ins):
                dist.all_gather_into_tensor(f, i.to(device))
        cm.wait()
        for j, f in enumerate(flat):
            check(f, torch.cat([want[r][j] for r in range(world)]),
                  "all_gather_into_tensor coalesced")
        full = [data(torch.float32, world * n, 95 + n) for n in (7, BIG)]
        red = [torch.zeros(n, device=device) for n in (7, BIG)]
        with dist._coalescing_manager():
            for r_, f in zip(red, full):
                dist.reduce_scatter_tensor(r_, f.to(device))
        for r_, f, n in zip(red, full, (7, BIG)):
            ref = f.clone()
            dist.all_reduce(ref, group=gloo)
            check(r_, ref[rank * n:(rank + 1) * n], "reduce_scatter_tensor coalesced")

        # monitored_barrier is gloo's alone in torch.distributed (as for NCCL groups).
        expect_error(lambda: dist.monitored_barrier(), ["only implemented for GLOO"],
                     "monitored_barrier")
    elif scenario == "four":
        # A ring in both directions with isend/irecv, and every other rank to rank 0 through
        # recv(src=None).
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        for n in (1, BIG):
            a = torch.zeros(n, device=device)
            b = torch.zeros(n, device=device)
            works = [dist.isend(data(torch.float32, n, 100).to(device), nxt),
                     dist.isend(data(torch.float32, n, 101).to(device), prv),
                     dist.irecv(a, prv), dist.irecv(b, nxt)]
            for w in works:
                w.wait()
            check(a, data(torch.float32, n, 100, prv), f"ring forward n={n}")
            check(b, data(torch.float32, n, 101, nxt), f"ring backward n={n}")
        if rank == 0:
            seen = set()
            for _ in range(world - 1):
                t = torch.zeros(7, dtype=torch.int64, device=device)
                src = dist.recv(t)
                check(t, data(torch.int64, 7, 110, src), f"any source from {src}")
                seen.add(src)
            assert seen == set(range(1, world)), seen
        else:
            dist.send(data(torch.int64, 7, 110).to(device), 0)
        # Uneven splits with empty ones, sizes not divisible by the world size.
        all_to_all_checks(lambda r: [(r * 3 + d * 5) % 4 * (d != r + 1) for d in range(world)],
                          salt=120)
        all_to_all_checks(lambda r: [BIG // 64 if d == (r + 2) % world else 1
                                     for d in range(world)], salt=130)
    else:
        raise ValueError(scenario)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} ok", flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
