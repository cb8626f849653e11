"""torch.distributed over MTIA tensors with torch_mtia's c10d backend "mtia" (same-host path), and
DistributedDataParallel of the GPT-style model over it.

Each test starts its ranks as fresh interpreters (a process forked after the runtime started cannot
use it) running this file's worker on a TCPStore on localhost (a FileStore's waits poll: each
collective step's store barrier then costs milliseconds): one run per world size, each rank checking
every scenario in turn (an interpreter importing torch costs seconds, many more under TSan). A worker
checks every collective against gloo run on the same data as CPU tensors in a second group on the same
store; the staging buffers are made small (MTIA_DIST_STAGING_BYTES) so that the larger tensors take
several synchronised steps through both staging buffers. DDP of the GPT-style model runs here on four
ranks; on two it runs under torchrun in test_distributed_torchrun.py (torch_mtia.ddp_demo), whose
DDP construction (it imports torch._dynamo, seconds per rank) would cost as much again here.
"""

import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dist_harness import assert_equal, run_ranks, tcp_store  # noqa: E402

FLOATING = ["float32", "float64", "float16", "bfloat16"]
INTEGRAL = ["int8", "uint8", "int16", "int32", "int64"]
# The rooted collectives and all_to_all move bytes as the others do: a few dtypes suffice.
ROOTED = ["float32", "bfloat16", "uint8", "int64"]


def _run(world, scenario, extra_env=None):
    run_ranks(__file__, world, scenario, dict({"MTIA_DIST_STAGING_BYTES": str(64 * 1024)},
                                              **(extra_env or {})))


def test_two_ranks():
    # Every collective in every dtype, stream ordering and errors.
    _run(2, "two")


def test_four_ranks():
    # Collectives in a few dtypes, DDP of the GPT-style model. Four ranks need four devices: a
    # machine of its own, so that the registry of the test's two-device machine is left as it is.
    machine = os.environ.get("MTIA_SIM_MACHINE", "default") + "-dist4"
    _run(4, "four", {"MTIA_SIM_DEVICES": "4", "MTIA_SIM_MACHINE": machine})


# ---- the worker (runs in each rank's process) ----

def _worker(scenario, rank, world, port_path):
    import torch
    import torch.distributed as dist

    import torch_mtia  # noqa: F401  (registers the backend)

    torch.mtia.set_device(rank)
    store = tcp_store(rank, world, port_path)
    dist.init_process_group("mtia", store=store, rank=rank, world_size=world)
    gloo = dist.new_group(backend="gloo")
    device = torch.device("mtia", rank)

    def data(dtype, n, salt, r=rank, low=-4, high=5):
        # The same values on every rank that asks for rank r's data: seeded by (r, salt).
        g = torch.Generator().manual_seed(1000 * r + salt)
        if dtype == torch.bool:
            return torch.randint(0, 2, (n,), generator=g).bool()
        return torch.randint(low, high, (n,), generator=g).to(dtype)

    def product_data(dtype, n, salt, r=rank):
        # Factors whose products stay exact in every dtype for four ranks: -2, -1, 1, 2.
        g = torch.Generator().manual_seed(1000 * r + salt)
        magnitude = torch.randint(1, 3, (n,), generator=g)
        sign = torch.randint(0, 2, (n,), generator=g) * 2 - 1
        return (magnitude * sign).to(dtype)

    def check(got, want, what):
        assert_equal(got, want, what, rank)

    def reference(make, dtype, n, salt, name):
        # gloo's all_reduce of every rank's data; where gloo lacks the dtype (int16), the same
        # computed here from every rank's data, in the dtype (wrapping as gloo's would).
        if dtype != torch.int16:
            ref = make(dtype, n, salt)
            dist.all_reduce(ref, op=ops[name], group=gloo)
            return ref
        combine = {"sum": torch.add, "product": torch.mul, "min": torch.minimum,
                   "max": torch.maximum}[name]
        ref = make(dtype, n, salt, 0)
        for r in range(1, world):
            ref = combine(ref, make(dtype, n, salt, r))
        return ref

    ops = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
           "max": dist.ReduceOp.MAX}

    def check_allreduce(dtype_name, n, salt):
        dtype = getattr(torch, dtype_name)
        for name, op in ops.items():
            make = product_data if name == "product" else data
            ref = reference(make, dtype, n, salt, name)
            t = make(dtype, n, salt).to(device)
            dist.all_reduce(t, op=op)
            check(t, ref, f"all_reduce {name} {dtype_name} n={n}")
        # AVG: gloo has none; the reference is gloo's sum divided by the world size (integers
        # truncate, as NCCL's ncclAvg).
        host = data(dtype, n, salt)
        ref = reference(data, dtype, n, salt, "sum")
        ref = ref / world if dtype.is_floating_point else torch.div(ref, world, rounding_mode="trunc")
        t = host.to(device)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        check(t, ref.to(dtype), f"all_reduce avg {dtype_name} n={n}")

    def check_bool(n, salt):
        # gloo reduces no bool: the reference is computed from every rank's data.
        g = [torch.Generator().manual_seed(1000 * r + salt) for r in range(world)]
        every = torch.stack([torch.randint(0, 2, (n,), generator=x).bool() for x in g])
        for op, want in [(dist.ReduceOp.SUM, every.any(0)), (dist.ReduceOp.MAX, every.any(0)),
                         (dist.ReduceOp.PRODUCT, every.all(0)), (dist.ReduceOp.MIN, every.all(0))]:
            t = data(torch.bool, n, salt).to(device)
            dist.all_reduce(t, op=op)
            check(t, want, f"all_reduce {op} bool n={n}")

    def check_broadcast(dtype_name, n, salt):
        dtype = getattr(torch, dtype_name)
        for root in range(world):
            host = data(dtype, n, salt + root)
            if dtype == torch.int16:  # gloo lacks it: the root's data
                ref = data(dtype, n, salt + root, root)
            else:
                ref = host.clone()
                dist.broadcast(ref, root, group=gloo)
            t = host.to(device)
            dist.broadcast(t, root)
            check(t, ref, f"broadcast root={root} {dtype_name} n={n}")

    def check_gather_scatter(dtype_name, n, salt):
        dtype = getattr(torch, dtype_name)
        host = data(dtype, n, salt)
        if dtype == torch.int16:  # gloo lacks it: every rank's data
            refs = [data(dtype, n, salt, r) for r in range(world)]
        else:
            refs = [torch.empty_like(host) for _ in range(world)]
            dist.all_gather(refs, host, group=gloo)
        outs = [torch.full((n,), 7, dtype=dtype, device=device) for _ in range(world)]
        dist.all_gather(outs, host.to(device))
        for r in range(world):
            check(outs[r], refs[r], f"all_gather [{r}] {dtype_name} n={n}")
        flat = torch.empty(world * n, dtype=dtype, device=device)
        dist.all_gather_into_tensor(flat, host.to(device))
        check(flat, torch.cat(refs), f"all_gather_into_tensor {dtype_name} n={n}")

        pieces = [data(dtype, n, salt + 7 + d) for d in range(world)]
        # gloo has no reduce_scatter: the reference is the all-reduced concatenation's own slice.
        whole = reference(lambda dt, m, s, r=rank: torch.cat(
            [data(dt, n, s + 7 + d, r) for d in range(world)]), dtype, world * n, salt, "sum")
        ref = whole[rank * n:(rank + 1) * n]
        out = torch.empty(n, dtype=dtype, device=device)
        dist.reduce_scatter_tensor(out, torch.cat(pieces).to(device))
        check(out, ref, f"reduce_scatter_tensor {dtype_name} n={n}")
        out = torch.empty(n, dtype=dtype, device=device)
        dist.reduce_scatter(out, [p.to(device) for p in pieces], op=dist.ReduceOp.MAX)
        whole = reference(lambda dt, m, s, r=rank: torch.cat(
            [data(dt, n, s + 7 + d, r) for d in range(world)]), dtype, world * n, salt, "max")
        check(out, whole[rank * n:(rank + 1) * n], f"reduce_scatter max {dtype_name} n={n}")

    def check_rooted(dtype_name, n, salt):
        # reduce, gather, scatter (each root in turn) and all_to_all_single against gloo.
        dtype = getattr(torch, dtype_name)
        for root in range(world):
            host = data(dtype, n, salt + root)
            ref = host.clone()
            dist.reduce(ref, root, op=dist.ReduceOp.MAX, group=gloo)
            t = host.to(device)
            dist.reduce(t, root, op=dist.ReduceOp.MAX)
            # Only the root's result is defined (gloo leaves partial results elsewhere); ours
            # leaves the other ranks' tensors as they were, as NCCL does.
            check(t, ref if rank == root else host, f"reduce max root={root} {dtype_name} n={n}")

            refs = [torch.empty_like(host) for _ in range(world)] if rank == root else None
            dist.gather(host, refs, root, group=gloo)
            outs = ([torch.zeros(n, dtype=dtype, device=device) for _ in range(world)]
                    if rank == root else None)
            dist.gather(host.to(device), outs, root)
            if rank == root:
                for r in range(world):
                    check(outs[r], refs[r], f"gather [{r}] root={root} {dtype_name} n={n}")

            pieces = [data(dtype, n, salt + 50 + d) for d in range(world)]
            ref = torch.empty(n, dtype=dtype)
            dist.scatter(ref, pieces if rank == root else None, root, group=gloo)
            out = torch.zeros(n, dtype=dtype, device=device)
            dist.scatter(out, [p.to(device) for p in pieces] if rank == root else None, root)
            check(out, ref, f"scatter root={root} {dtype_name} n={n}")
        host = data(dtype, world * n, salt + 90)
        ref = torch.empty_like(host)
        dist.all_to_all_single(ref, host, group=gloo)
        out = torch.zeros(world * n, dtype=dtype, device=device)
        dist.all_to_all_single(out, host.to(device))
        check(out, ref, f"all_to_all_single {dtype_name} n={n}")

    def check_collectives(dtypes, multi_step):
        # Sizes 1 and 7 (below and not divisible by the world size) and one of several steps.
        for i, dtype_name in enumerate(dtypes):
            itemsize = torch.empty(0, dtype=getattr(torch, dtype_name)).element_size()
            for n in [1, 7, multi_step // itemsize + 3]:
                check_allreduce(dtype_name, n, salt=10 * i + n % 10)
                check_broadcast(dtype_name, n, salt=20 * i + n % 10)
                check_gather_scatter(dtype_name, n, salt=30 * i + n % 10)
                if dtype_name in ROOTED:
                    check_rooted(dtype_name, n, salt=40 * i + n % 10)
        for n in [1, 7, multi_step + 3]:
            check_bool(n, salt=n % 10)

    def check_streams():
        # async_op=True: the work's wait() orders the current stream after the collective.
        t = data(torch.float32, 1000, 1).to(device)
        ref = data(torch.float32, 1000, 1)
        dist.all_reduce(ref, group=gloo)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        check(t, ref, "async all_reduce")
        torch.mtia.synchronize()
        assert work.is_completed()
        fut = dist.all_reduce(t, async_op=True).get_future()
        fut.wait()
        check(t, ref * world, "all_reduce through its future")

        # On a side stream held back by a sleep: the collective must wait for the fill queued
        # before it on that stream, and a kernel queued after it must see the sum.
        side = torch.mtia.Stream()
        with torch.mtia.stream(side):
            torch_mtia._C.sleep_on_stream(200_000)
            x = torch.full((4096,), float(rank + 1), device=device)
            dist.all_reduce(x)
            y = x * 2
        side.synchronize()
        want = float(sum(range(1, world + 1)) * 2)
        check(y, torch.full((4096,), want), "side-stream all_reduce then a kernel")

        # A reduction the backend lacks (bitwise ones, which NCCL lacks too) raises, naming it,
        # on every rank alike, and the group goes on working.
        try:
            dist.all_reduce(t, op=dist.ReduceOp.BAND)
        except (RuntimeError, ValueError) as e:
            assert "BAND" in str(e) and "all_reduce" in str(e), str(e)
        else:
            raise AssertionError("all_reduce with BAND did not raise")
        dist.all_reduce(t)

        # PREMUL_SUM (FSDP's gradient scaling): each rank's tensor times the factor, summed; a
        # float factor and a tensor factor; reduce_scatter_tensor leaves its input as it was.
        x = torch.arange(12, dtype=torch.float32, device=device) + rank
        host = x.cpu()
        dist.all_reduce(x, op=dist._make_nccl_premul_sum(0.5))
        want = sum((torch.arange(12, dtype=torch.float32) + r) * 0.5 for r in range(world))
        check(x, want, "all_reduce PREMUL_SUM(0.5)")
        inp = host.to(device).repeat(world)
        out = torch.empty(12, device=device)
        factor = torch.tensor([0.25], dtype=torch.float64, device=device)
        dist.reduce_scatter_tensor(out, inp, op=dist._make_nccl_premul_sum(factor))
        want = sum((torch.arange(12, dtype=torch.float32) + r) * 0.25 for r in range(world))
        check(out, want, "reduce_scatter_tensor PREMUL_SUM(tensor 0.25)")
        check(inp, host.repeat(world), "reduce_scatter_tensor PREMUL_SUM's input unchanged")

    def check_ddp_gpt(steps=3, global_batch=8):
        # DistributedDataParallel of the GPT-style model (AdamW, as its training test) with small
        # buckets, so that DDP all-reduces several on the device: after a few steps on each rank's
        # share of the global batch, the parameters are those of one process stepping on the whole
        # batch (on rank 0's device, whose kernels are warm: the CPU's first step alone costs
        # seconds; within ddp_demo.RTOL/ATOL, which says why).
        from torch.nn.parallel import DistributedDataParallel

        from torch_mtia import ddp_demo
        from torch_mtia.demo_models import make

        model, make_opt, _ = make("gpt")
        if rank:
            # DDP starts every rank from rank 0's parameters (its broadcast at construction).
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(0.5)
        ddp = DistributedDataParallel(model.to(device), bucket_cap_mb=0.02)
        batches = ddp_demo.global_batches(steps, global_batch)
        losses = ddp_demo.train(ddp, make_opt(ddp), batches, rank, world)
        buckets = [b.buffer() for b in ddp.reducer._get_zeros_like_grad_buckets()]
        assert len(buckets) >= 4 and all(b.device == device for b in buckets), \
            [(b.numel(), b.device) for b in buckets]
        # DDP's sampled iteration times, measured on the device by torch_mtia's timer (absent
        # without a timer registered for mtia).
        stats = ddp._get_ddp_logging_data()
        for key in ("forward_compute_time", "backward_compute_time", "backward_comm_time"):
            assert stats.get(key, 0) > 0, (key, stats)
        # Every rank holds rank 0's parameters, bit for bit.
        mine = torch.cat([p.detach().flatten() for p in model.parameters()])
        theirs = mine.clone()
        dist.broadcast(theirs, 0)
        check(mine, theirs.cpu(), "DDP parameters against rank 0's")
        if rank == 0:
            ref, ref_losses = ddp_demo.reference(batches, device)
            torch.testing.assert_close(losses, ref_losses, rtol=ddp_demo.RTOL, atol=ddp_demo.ATOL)
            for (name, got), want in zip(model.named_parameters(), ref.parameters()):
                torch.testing.assert_close(got.detach(), want.detach(), rtol=ddp_demo.RTOL,
                                           atol=ddp_demo.ATOL, msg=lambda m: f"DDP {name}: {m}")

    if scenario == "two":
        check_collectives(FLOATING + INTEGRAL, multi_step=160 * 1024)
        # Many steps through the two staging buffers in turn.
        check_allreduce("float32", 1024 * 1024 // 4 + 5, salt=99)
        # The largest size the issue names, 64 MiB and 3 elements more (not divisible by the
        # world size): 1025 steps of 64 KiB, SUM against gloo.
        n = 16 * 1024 * 1024 + 3
        ref = reference(data, torch.float32, n, 97, "sum")
        t = data(torch.float32, n, 97).to(device)
        dist.all_reduce(t)
        check(t, ref, "all_reduce sum float32 64 MiB + 12 B")
        del t, ref
        check_streams()
        dist.barrier()
    elif scenario == "four":
        check_collectives(["float32", "bfloat16", "int64", "int8"], multi_step=160 * 1024)
        check_ddp_gpt()
        dist.barrier()
    else:
        raise ValueError(scenario)
    dist.destroy_process_group()
    print(f"rank {rank} ok", flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
