"""torch.distributed on MTIA tensors: the c10d backend ``mtia``.

Importing torch_mtia imports this module, which registers the backend with
``torch.distributed.Backend.register_backend("mtia", ..., devices=["mtia"])``: a process group created
with ``backend="mtia"`` (or ``"cpu:gloo,mtia:mtia"``, or no backend on a machine whose accelerator is
mtia) runs its collectives on MTIA tensors here, ordered on the caller's current stream as NCCL's are:
``wait()`` on the returned work makes the current stream wait, it does not block the host
(``wait(timeout=...)`` does, and raises naming the collective when the timeout passes). A rank that
dies or does not arrive makes the others raise within the group's timeout with an error naming it.

For now every rank of a group must use one simulated machine of one host (one device per rank, at most
8 ranks); the ranks reduce with device kernels straight from each other's device memory (IPC handles
exchanged through the group's store). Implemented: broadcast, all_reduce (SUM, AVG, PRODUCT, MIN, MAX;
bool SUM/AVG is or, PRODUCT is and; integer AVG truncates), reduce, all_gather, all_gather_into_tensor,
gather, scatter, reduce_scatter, reduce_scatter_tensor, all_to_all_single with equal splits, barrier.
The other collectives raise RuntimeError naming them.
``MTIA_DIST_STAGING_BYTES`` (default 4 MiB, the same in every rank) sets the size of each of the two
staging buffers per rank, and so of each synchronised step of a collective.
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
