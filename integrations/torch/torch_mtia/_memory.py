"""Memory statistics, the cache, history recording, snapshots and out-of-memory observers."""
import pickle

from . import _C


def _device_index(device):
    from . import _index

    return _index(device)


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else key, inner, out)
    else:
        out[prefix] = value


def memory_stats(device=None):
    """The caching allocator's statistics of the device: ``["dram"]["allocated_bytes"]`` and
    ``["dram"]["peak_bytes"]`` as torch.mtia reads them, PyTorch's nested DeviceStats under their own
    names, and the flat keys torch.cuda.memory_stats() gives (``allocated_bytes.all.current``, ...)."""
    nested = _C.memory_stats(_device_index(device))
    stats = {}
    _flatten("", nested, stats)
    stats.update(nested)
    allocated = nested["allocated_bytes"]["all"]
    reserved = nested["reserved_bytes"]["all"]
    stats["dram"] = {
        "allocated_bytes": allocated["current"],
        "peak_bytes": allocated["peak"],
        "reserved_bytes": reserved["current"],
        "peak_reserved_bytes": reserved["peak"],
        "num_ooms": nested["num_ooms"],
    }
    return stats


def memory_allocated(device=None):
    return memory_stats(device)["dram"]["allocated_bytes"]


def max_memory_allocated(device=None):
    return memory_stats(device)["dram"]["peak_bytes"]


def memory_reserved(device=None):
    return memory_stats(device)["dram"]["reserved_bytes"]


def max_memory_reserved(device=None):
    return memory_stats(device)["dram"]["peak_reserved_bytes"]


def reset_peak_memory_stats(device=None):
    _C.reset_peak_memory_stats(_device_index(device))


def reset_accumulated_memory_stats(device=None):
    _C.reset_accumulated_memory_stats(_device_index(device))


def empty_cache():
    """Returns the cached blocks nothing uses to the devices (private graph pools keep theirs)."""
    _C.empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes of the device, across every process using it."""
    return tuple(_C.mem_get_info(_device_index(device)))


def record_memory_history(enabled="all", stacks="python", max_entries=0):
    """enabled: None (off), "state" (who allocated each live block) or "all" (also a ring of the last
    max_entries actions; 0: the runtime's default); True and False, the older boolean form, mean "all"
    and None. stacks: "python", "cpp" or "all"."""
    if enabled is True:
        enabled = "all"
    elif enabled is False:
        enabled = None
    _C.record_memory_history(enabled, stacks, max_entries)


def snapshot():
    """PyTorch's memory snapshot dict: segments with their blocks and frames, device_traces, ..."""
    return pickle.loads(_C.memory_snapshot())


def _dump_snapshot(filename="dump_snapshot.pickle"):
    """Writes the snapshot as a pickle that PyTorch's memory viewer and ``mtia-mem`` read."""
    _C.dump_snapshot(str(filename))


def attach_out_of_memory_observer(observer):
    """observer(device, requested_bytes, device_total, device_free) is called before an out-of-memory
    error is raised."""
    _C.attach_out_of_memory_observer(observer)
