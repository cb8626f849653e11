"""torch.distributed on MTIA tensors: the c10d backend ``mtia``.

Importing torch_mtia imports this module, which registers the backend with
``torch.distributed.Backend.register_backend("mtia", ..., devices=["mtia"])``: a process group created
with ``backend="mtia"`` (or ``"cpu:gloo,mtia:mtia"``, or ``device_id=torch.device("mtia", i)``, or no
backend on a machine whose accelerator is mtia, though DistributedDataParallel then fails: the
integration's README says why) runs its collectives on MTIA tensors here, ordered on the caller's
current stream as NCCL's are:
``wait()`` on the returned work makes the current stream wait, it does not block the host
(``wait(timeout=...)`` does, and raises naming the collective when the timeout passes). A rank that
dies or does not arrive makes the others raise within the group's timeout with an error naming it.

One device per rank. When every rank of a group uses one simulated machine of one host (at most 8
ranks), the ranks reduce with device kernels straight from each other's device memory (IPC handles
exchanged through the group's store); otherwise, or when any rank sets MTIA_DIST_FORCE_CROSS_HOST=1,
the group stages its tensors through pinned host memory and runs gloo (the README's torch.distributed
section). Implemented: broadcast, all_reduce (SUM, AVG, PRODUCT, MIN, MAX;
bool SUM/AVG is or, PRODUCT is and; integer AVG truncates), reduce, all_gather, all_gather_into_tensor,
all_gather_coalesced, gather, scatter, reduce_scatter, reduce_scatter_tensor, all_to_all_single (equal
or split sizes, empty splits included), all_to_all (lists), barrier, and the coalesced
all_gather_into_tensor / reduce_scatter_tensor that ``_coalescing_manager`` (FSDP) issues.

Point-to-point (send, recv, isend, irecv, recv from any source, batch_isend_irecv) involves only the
two ranks: each ordered pair has a channel of its own (a staging buffer of the sender, IPC events, a
sequence of store keys), set up at its first message and served by a thread per side, so posting
never blocks. Messages between a pair match as gloo's do: per tag, in posting order; tags must be
non-negative; a receive of another size than the message fails on both sides. ``wait()`` on a
point-to-point work blocks the host until the peer posted its side (as gloo's), then orders the
current stream after the copies (as NCCL's). all_to_all with split sizes and lists runs over these
channels. Sending to one's own rank is refused (copy the tensor). ``monitored_barrier`` is gloo's
alone (torch.distributed refuses it for other backends, NCCL included); sparse all_reduce is refused
(the device has no sparse tensors); the backend does not declare coalescing support, so
``batch_isend_irecv`` posts each operation on its own (one work each), and ``_coalescing_manager``
is used without a device.
``MTIA_DIST_STAGING_BYTES`` (default 4 MiB, the same in every rank) sets the size of each of the two
staging buffers per rank, and so of each synchronised step of a collective (and of each chunk of a
point-to-point message).
"""

import torch.distributed as _dist

from . import _C

__all__ = ["BACKEND", "is_available"]

BACKEND = "mtia"


def is_available():
    """Whether this PyTorch has torch.distributed (and the backend is registered)."""
    return _dist.is_available() and hasattr(_C, "_dist_create_backend")


def _create_backend(store, rank, world_size, timeout):
    return _C._dist_create_backend(store, rank, world_size, timeout)


if is_available() and BACKEND not in _dist.Backend.backend_list:
    _dist.Backend.register_backend(BACKEND, _create_backend, devices=["mtia"])
