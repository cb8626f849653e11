"""torch_mtia: the MTIA runtime as PyTorch 2.13's own ``mtia`` device.

Importing it (``import torch`` does, through PyTorch's ``torch.backends`` entry point, once the
package is installed) loads the extension, which registers with PyTorch:

- the MTIA hooks (``at::MTIAHooksInterface``), behind every ``torch.mtia`` function and
  ``torch.mtia.MTIAGraph``;
- the device allocator of ``DeviceType::MTIA`` (the runtime's caching allocator) and the device
  guard (``torch.Stream``/``torch.Event`` of type mtia);
- the kernels of ``DispatchKey::MTIA``, with the CPU fallback for the other operators.

The runtime starts when PyTorch first initialises the device (``torch.mtia.init()``, the first MTIA
tensor, ``torch.mtia.device_count()``...), not at import. Use PyTorch's own API: ``torch.device("mtia")``,
``torch.mtia.*``, ``torch.mtia.MTIAGraph``, ``torch.mtia.graph``. What upstream has no Python for is
here: ``torch_mtia.memory`` (snapshot files, free memory, more statistics), ``fallback_counts``,
``is_current_stream_capturing`` and ``show_config``.
"""
import atexit
import os
import traceback

import torch

from . import _C, _graphs, memory

__all__ = ["memory", "distributed", "fallback_counts", "reset_fallback_counts", "device_operators",
           "is_current_stream_capturing", "show_config", "stream_priority_range"]

_C._set_kernel_module(os.path.join(os.path.dirname(__file__), "libmtia_torch_kernels.so"))
if not _C._hooks_are_ours():
    raise ImportError(
        "torch_mtia: PyTorch created its MTIA hooks before torch_mtia was loaded (something asked "
        "for an MTIA device first); import torch_mtia right after torch, or install the package so "
        "that `import torch` loads it")


def _install_generators():
    torch.mtia.default_generators = _C._default_generators()


# torch.mtia.default_generators is empty until the backend fills it; upstream's _lazy_init runs the
# queued calls right after initialising the device, before the seeds queued by manual_seed.
if torch.mtia.is_initialized():
    _install_generators()
else:
    torch.mtia._queued_calls.append((_install_generators, traceback.format_stack()))

_graphs.install()

from . import distributed  # noqa: E402  (registers the c10d backend "mtia")


def _load_gemm_choices():
    from . import gemm_tuning
    gemm_tuning._load_at_init()


# The tuned GEMM choices cached on disk (torch_mtia.gemm_tuning) are keyed by the device's name:
# installed once the device is initialised, not at import.
if torch.mtia.is_initialized():
    _load_gemm_choices()
else:
    torch.mtia._queued_calls.append((_load_gemm_choices, traceback.format_stack()))


def _allow_capturable_optimizers():
    """PyTorch 2.13's optimizers take capturable=True (step counts and bias corrections kept on the
    device, so that a captured optimizer step replays with the right step) only on the devices that
    torch.optim.optimizer._get_capturable_supported_devices lists: cuda, xpu, hpu, the privateuse1
    backend and xla. mtia is missing from that list (its foreach and fused lists have it), although its
    graphs replay exactly as CUDA's. The list is widened with mtia here, in torch.optim and in each
    optimizer module that imported the function."""
    import importlib

    import torch.optim.optimizer as base

    original = base._get_capturable_supported_devices
    if getattr(original, "_torch_mtia", False):
        return

    def supported(supports_xla=True):
        devices = original(supports_xla)
        return devices if "mtia" in devices else devices + ["mtia"]

    supported._torch_mtia = True
    for name in ("optimizer", "adadelta", "adam", "adamw", "adamax", "asgd", "nadam", "radam",
                 "rmsprop", "rprop"):
        try:
            module = importlib.import_module("torch.optim." + name)
        except ImportError:
            continue
        if getattr(module, "_get_capturable_supported_devices", None) is original:
            module._get_capturable_supported_devices = supported


_allow_capturable_optimizers()


def _drain_autograd_threads():
    # Note [autograd threads at exit] (csrc/autograd_exit.h): without this, an exit right after a
    # backward over MTIA tensors can abort in PyTorch's autograd device thread.
    if torch.mtia.is_initialized():
        _C._drain_autograd_threads()


atexit.register(_drain_autograd_threads)


def fallback_counts():
    """How often each operator ran through the CPU fallback since the last reset, by name."""
    return dict(_C.fallback_counts())


def reset_fallback_counts():
    _C.reset_fallback_counts()


def device_operators():
    """The ATen operators (name.overload) registered with an MTIA device kernel, sorted. Functional and
    in-place forms of PyTorch's structured operators run through their out= overload listed here;
    operators that PyTorch decomposes (CompositeImplicitAutograd) run as the operators they
    decompose into. Anything else goes through the CPU fallback (fallback_counts())."""
    names = []
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(name, "MTIA"):
            names.append(name[len("aten::"):])
    return sorted(names)


def is_current_stream_capturing():
    """True while the current stream captures work into a graph (as torch.cuda's)."""
    return _C.is_current_stream_capturing()


def show_config():
    """The runtime's version, driver, device count and allocator settings."""
    return _C.show_config()


def stream_priority_range():
    """(least, greatest) stream priority; lower numbers are higher priorities, as CUDA's."""
    return tuple(_C.stream_priority_range())


def _autoload():
    """PyTorch's ``torch.backends`` entry point: importing this package is all it takes."""
