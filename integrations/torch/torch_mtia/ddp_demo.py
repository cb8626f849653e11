"""Data-parallel training on MTIA devices: the GPT-style decoder of torch_mtia.demo_models trained
with torch.nn.parallel.DistributedDataParallel over the c10d backend "mtia", one device per process,
started by torchrun (or torch.distributed.launch) with the environment variables they set:

    torchrun --standalone --nproc-per-node 2 -m torch_mtia.ddp_demo [--steps 5]

Each process takes the device LOCAL_RANK, joins the group from the env:// variables (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) with that device as device_id and no backend named (PyTorch picks the one
registered for the device type: "mtia"), and steps on its share of the same global batch; DDP averages the gradients
bucket by bucket with all_reduce on the device. Rank 0 prints each step's loss over the global batch
and, at the end, compares the parameters with one process trained on the whole batch on its device.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import torch_mtia  # noqa: F401  (the mtia device and its c10d backend)
from torch_mtia.demo_models import gpt_batch, make, train_step

__all__ = ["global_batches", "train", "reference", "largest_difference", "main"]

# Tolerance of the comparison with one process on the whole batch, on the same kind of device: the
# same kernels, but the gradients summed in another order (per share, then across ranks) and the
# matrix products blocked for other shapes. AdamW divides each step by the gradient's running RMS, so
# rounding differences in small gradients become differences in the parameters of up to lr times
# their relative size; observed: 2.3e-6 after 5 steps on 2 ranks, 4.1e-6 after 8 on 4.
RTOL, ATOL = 1e-4, 3e-5


def global_batches(steps, batch, seed=0, distinct=2):
    """The global batches of a run, the same on every rank, as (tokens, targets) on the CPU: distinct
    random batches in turn (a small data set seen again, so that the loss falls within a few steps)."""
    g = torch.Generator().manual_seed(seed)
    pool = [gpt_batch(g, batch=batch) for _ in range(distinct)]
    return [pool[i % distinct] for i in range(steps)]


def train(model, opt, batches, rank, world):
    """Steps model (a DDP module, or a plain one when world is 1) through batches, each rank on its
    contiguous share of each global batch (whose size world must divide). Returns the mean loss of
    each global batch on every rank (an all_reduce of the shares' losses when world > 1)."""
    device = next(model.parameters()).device
    losses = []
    for tokens, targets in batches:
        if tokens.shape[0] % world:
            raise ValueError(f"the global batch ({tokens.shape[0]}) is not divisible by the world "
                             f"size ({world})")
        share = tokens.shape[0] // world
        mine = [t[rank * share:(rank + 1) * share].to(device) for t in (tokens, targets)]
        loss = train_step(model, opt, mine).detach()
        if world > 1:
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(loss)
    return [loss.item() for loss in losses]


def reference(batches, device):
    """One process trained on device (a torch.device, the CPU included) on the whole of each batch,
    from the same initial weights and optimizer: (model, losses)."""
    model, make_opt, _ = make("gpt")
    model = model.to(device)
    return model, train(model, make_opt(model), batches, 0, 1)


def largest_difference(model, ref):
    """(name, largest |difference|, whether every tensor is within RTOL/ATOL) between model's
    parameters and ref's."""
    worst, worst_name, close = 0.0, None, True
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        got, want = p.detach().cpu(), q.detach().cpu()
        diff = (got - want).abs().max().item()
        if diff >= worst:
            worst, worst_name = diff, name
        close = close and torch.allclose(got, want, rtol=RTOL, atol=ATOL)
    return worst_name, worst, close


def main(argv=None):
    parser = argparse.ArgumentParser(prog="torchrun --nproc-per-node N -m torch_mtia.ddp_demo")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8, help="global batch (sequences per step)")
    parser.add_argument("--bucket-cap-mb", type=float, default=0.02,
                        help="DDP's gradient bucket size: small, so that the model's ~120 KB of "
                             "gradients make several buckets")
    # torch.distributed.launch passes --local-rank unless told --use-env; LOCAL_RANK has the same.
    parser.add_argument("--local-rank", "--local_rank", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if "LOCAL_RANK" not in os.environ:
        parser.error("run it under torchrun (or torch.distributed.launch): LOCAL_RANK is not set")

    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("mtia", local_rank)
    torch.mtia.set_device(device)
    # env://; the backend is the one registered for device_id's type: mtia. (With neither a backend
    # nor device_id, PyTorch 2.13 also picks mtia for mtia tensors, from the accelerator, but marks
    # the group's default backend as gloo, which DDP's construction asks for and does not find.)
    dist.init_process_group(device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    model, make_opt, _ = make("gpt")
    ddp = DistributedDataParallel(model.to(device), bucket_cap_mb=args.bucket_cap_mb)
    opt = make_opt(ddp)
    batches = global_batches(args.steps, args.batch)
    losses = train(ddp, opt, batches[:1], rank, world)  # the first step also builds DDP's buckets
    torch.mtia.synchronize()
    start = time.perf_counter()
    losses += train(ddp, opt, batches[1:], rank, world)
    torch.mtia.synchronize()
    step_s = (time.perf_counter() - start) / max(1, len(batches) - 1)
    buckets = len(ddp.reducer._get_zeros_like_grad_buckets())
    if rank == 0:
        print(f"DDP over {world} processes, backend {dist.get_backend()}, mtia:{local_rank} on rank 0, "
              f"global batch {args.batch} ({args.batch // world} per rank), "
              f"{sum(p.numel() for p in model.parameters())} parameters in {buckets} gradient buckets",
              flush=True)
        for step, loss in enumerate(losses, start=1):
            print(f"step {step}: loss {loss:.4f}")
        ref, _ = reference(batches, device)
        name, worst, close = largest_difference(model, ref)
        print(f"{step_s * 1e3:.1f} ms/step after the first; parameters after {args.steps} steps match "
              f"one process on the whole batch: {close} (largest difference {worst:.1e}, {name})",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
