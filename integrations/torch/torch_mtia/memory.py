"""What torch_mtia adds to ``torch.mtia``'s memory functions: PyTorch 2.13's ``torch.mtia`` has
``memory_stats``, ``memory_allocated``, ``max_memory_allocated``, ``reset_peak_memory_stats``,
``empty_cache``, ``record_memory_history``, ``snapshot`` and ``attach_out_of_memory_observer``; these
fill in what ``torch.cuda.memory`` users also reach for."""
import torch

from . import _C

__all__ = ["memory_stats_flat", "memory_reserved", "max_memory_reserved",
           "reset_accumulated_memory_stats", "mem_get_info", "_dump_snapshot"]


def _index(device):
    from torch.mtia._utils import _get_device_index

    index = _get_device_index(device, optional=True)
    return -1 if index is None else index


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else key, inner, out)
    else:
        out[prefix] = value


def memory_stats_flat(device=None):
    """torch.mtia.memory_stats in torch.cuda.memory_stats' flat form ("allocated_bytes.all.current")."""
    flat = {}
    _flatten("", torch.mtia.memory_stats(device), flat)
    return dict(sorted(flat.items()))


def memory_reserved(device=None):
    return torch.mtia.memory_stats(device).get("dram", {}).get("reserved_bytes", 0)


def max_memory_reserved(device=None):
    return torch.mtia.memory_stats(device).get("dram", {}).get("peak_reserved_bytes", 0)


def reset_accumulated_memory_stats(device=None):
    torch.mtia.init()
    _C.reset_accumulated_memory_stats(_index(device))


def mem_get_info(device=None):
    """(free, total) bytes of the device, across every process using it."""
    torch.mtia.init()
    return tuple(_C.mem_get_info(_index(device)))


def _dump_snapshot(filename="dump_snapshot.pickle"):
    """Writes torch.mtia.snapshot() as the pickle that PyTorch's memory viewer and ``mtia-mem``
    read (as torch.cuda.memory._dump_snapshot)."""
    torch.mtia.init()
    _C.dump_snapshot(str(filename))
