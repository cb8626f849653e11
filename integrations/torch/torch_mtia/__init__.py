"""torch_mtia: the MTIA runtime as PyTorch's ``privateuseone`` device, with a ``torch.mtia``-shaped API.

Importing it loads the extension (allocator, device guard, kernels registered for PrivateUse1), brings
the runtime up and registers this module as ``torch.privateuseone``. Tensors live on
``torch.device("privateuseone", i)``; ``torch_mtia.device(i)`` builds that device.
"""
import os
import sys

import torch

from . import _C, _autograd
from ._graphs import MTIAGraph, graph, graph_pool_handle, is_current_stream_capturing
from ._memory import (
    _dump_snapshot,
    attach_out_of_memory_observer,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    record_memory_history,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    snapshot,
)
from ._streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream

DEVICE_TYPE = "privateuseone"

_C._init(os.path.join(os.path.dirname(__file__), "libmtia_torch_kernels.so"))
_autograd.install()


def device(index=None):
    """The torch.device of MTIA device ``index`` (the current device when None)."""
    return torch.device(DEVICE_TYPE, current_device() if index is None else index)


def _index(d):
    if d is None:
        return -1
    if isinstance(d, torch.device):
        if d.type != DEVICE_TYPE:
            raise ValueError(f"torch_mtia: {d} is not an MTIA device")
        return -1 if d.index is None else d.index
    if isinstance(d, str):
        return _index(torch.device(d))
    return int(d)


def is_available():
    return _C.is_available()


def is_initialized():
    return True


def init():
    """The runtime is brought up at import; kept for torch.mtia's shape."""


def device_count():
    return _C.device_count()


def current_device():
    return _C.current_device()


def set_device(d):
    index = _index(d)
    if index >= 0:  # a negative index is a no-op, as in torch.mtia
        _C.set_device(index)


def synchronize(d=None):
    """Blocks until every stream of the device (default: the current one) is idle."""
    _C.synchronize(_index(d))


def get_device_capability(d=None):
    return tuple(_C.get_device_capability(_index(d)))


def get_device_properties(d=None):
    return _C.get_device_properties(_index(d))


def is_bf16_supported():
    return True


def show_config():
    return _C.show_config()


class _DeviceContext:
    """``with torch_mtia.device_context(i):`` switches the current device and restores it."""

    def __init__(self, d):
        self.index = _index(d)
        self.previous = -1

    def __enter__(self):
        if self.index >= 0:
            self.previous = _C.exchange_device(self.index)

    def __exit__(self, *exc):
        if self.previous >= 0:
            _C.set_device(self.previous)
        return False


def device_context(d):
    return _DeviceContext(d)


torch._register_device_module(DEVICE_TYPE, sys.modules[__name__])
