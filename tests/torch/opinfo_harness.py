"""PyTorch's own OpInfo samples (op_db) run on the CPU and on the device from tensors with identical
sizes, strides and storage offsets; shared by the conformance tests of each kernel family.

check_op(name) runs every sample of every OpInfo named `name` (all variants, or one) in each dtype the
CPU supports and the device kernels handle, then the OpInfo's reference inputs when it has them
(extremal values, large and broadcast operands, type promotion cases; at most REFERENCE_MAX of them
per dtype), and asserts for each:
- the device ran it without the CPU fallback (torch_mtia.fallback_counts() stays empty);
- both raise, or both return results equal within assert_close's tolerance for the dtype (NaN equal
  to NaN), of the same dtypes and shapes;
- for pointwise operators (UnaryUfuncInfo, BinaryUfuncInfo, and those named in POINTWISE), output
  strides equal to the CPU's;
- for view operators, results that alias their input.
"""
import os

import torch
import torch_mtia
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import BinaryUfuncInfo, UnaryUfuncInfo
from torch.utils._pytree import tree_flatten, tree_map

DEV = torch.device("mtia", 0)

# At most this many samples per operator and dtype when set (the sanitizer stages set it: their
# value lies in our C++ paths, which a few samples of each dtype reach, at a fraction of the time).
_LIMIT = int(os.environ["MTIA_OPINFO_MAX_SAMPLES"]) if os.environ.get("MTIA_OPINFO_MAX_SAMPLES") else None


# Only these dtypes when set (comma-separated names, e.g. "float32,float16"): the sanitizer stages
# take one of each kind of code path (float, double, half rounding, int64 arithmetic, bool).
_DTYPES = None
if os.environ.get("MTIA_OPINFO_DTYPES"):
    _DTYPES = {getattr(torch, name) for name in os.environ["MTIA_OPINFO_DTYPES"].split(",")}


# Reference inputs beyond the samples, per operator and dtype. Those with complex operands (the device
# has no complex dtypes), without any tensor operand (nothing runs on the device) or with operands of
# more than REFERENCE_MAX_NUMEL elements (the elementwise ones' million-element operands: minutes per
# sweep; test_pointwise pins the rounding cases they found) are left out.
REFERENCE_MAX = 40
REFERENCE_MAX_NUMEL = 1 << 16


def _usable(sample):
    leaves = tree_flatten(((sample.input, *sample.args), sample.kwargs))[0]
    if any(isinstance(x, complex) or isinstance(x, torch.Tensor) and x.is_complex() for x in leaves):
        return False
    tensors = [x for x in leaves if isinstance(x, torch.Tensor)]
    return bool(tensors) and all(t.numel() <= REFERENCE_MAX_NUMEL for t in tensors)


def samples_of(op, dtype, requires_grad, max_samples=None):
    """op's samples in dtype, then its reference inputs (limited as above), then _limit's cut."""
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=requires_grad))
    if op.reference_inputs_func is not None:
        extra = op.reference_inputs_func(op, "cpu", dtype, requires_grad)
        samples += [s for _, s in zip(range(REFERENCE_MAX), (s for s in extra if _usable(s)))]
    return _limit(samples, max_samples)


def _limit(samples, max_samples):
    limits = [n for n in (max_samples, _LIMIT) if n is not None]
    return samples[:min(limits)] if limits else samples

DEVICE_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                 torch.float16, torch.bfloat16, torch.float32, torch.float64)

# Pointwise operators that op_db does not describe as ufuncs.
POINTWISE = {"where", "addcmul", "addcdiv", "lerp", "clamp", "nn.functional.gelu",
             "nn.functional.silu", "nn.functional.softplus", "nn.functional.leaky_relu",
             "nn.functional.elu", "nn.functional.hardtanh", "nn.functional.threshold",
             "masked_fill", "nan_to_num"}


def opinfos(name, variant=None):
    found = [op for op in op_db
             if op.name == name and (variant is None or op.variant_test_name == variant)]
    assert found, f"no OpInfo named {name!r} (variant {variant!r})"
    return found


def same_layout_on_device(t):
    """t's elements on the device with t's sizes, strides and storage offset (the whole storage is
    copied, so that elements outside the view are there too)."""
    if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
        return t
    if t.layout != torch.strided or t.is_complex() or t.dtype not in DEVICE_DTYPES:
        return t
    storage_numel = t.untyped_storage().nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (storage_numel,), (1,))
    dev = torch.empty(storage_numel, dtype=t.dtype, device=DEV)
    dev.copy_(flat)
    out = dev.as_strided(t.size(), t.stride(), t.storage_offset())
    return out.requires_grad_(t.requires_grad) if t.requires_grad else out


def same_layout_copy(t):
    """A CPU copy of t's whole storage viewed with t's sizes, strides and offset (clone() would make
    a non-dense or overlapping tensor dense)."""
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
        return t
    copy = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage().clone(), t.storage_offset(),
                                              t.size(), t.stride())
    return copy.requires_grad_(t.requires_grad) if t.requires_grad else copy


def _compare(cpu, dev, pointwise, where):
    cpu_leaves, _ = tree_flatten(cpu)
    dev_leaves, _ = tree_flatten(dev)
    assert len(cpu_leaves) == len(dev_leaves), where
    for c, d in zip(cpu_leaves, dev_leaves):
        if not isinstance(c, torch.Tensor):
            if isinstance(c, float) and c != c:
                assert d != d, where
            else:
                assert c == d or isinstance(c, float) and abs(c - d) <= 1e-5 * max(1, abs(c)), \
                    f"{where}: {c} != {d}"
            continue
        assert isinstance(d, torch.Tensor) and d.device.type == "mtia", where
        assert d.dtype == c.dtype and d.shape == c.shape, \
            f"{where}: {d.dtype}{tuple(d.shape)} != {c.dtype}{tuple(c.shape)}"
        torch.testing.assert_close(d.cpu(), c, equal_nan=True, atol=None, rtol=None,
                                   msg=lambda m: f"{where}: {m}")
        if pointwise and c.numel() > 1:
            assert d.stride() == c.stride(), f"{where}: strides {d.stride()} != {c.stride()}"


def check_op(name, variant=None, dtypes=None, is_view=False, max_samples=None, inplace=False):
    """Runs op_db's samples of `name`; returns how many samples it compared."""
    checked = 0
    for op in opinfos(name, variant):
        pointwise = isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo)) or op.name in POINTWISE
        fn = op.get_inplace() if inplace else op.op
        if fn is None:
            continue
        for dtype in sorted(op.supported_dtypes("cpu"), key=str):
            if dtype not in DEVICE_DTYPES or (dtypes is not None and dtype not in dtypes):
                continue
            if _DTYPES is not None and dtype not in _DTYPES:
                continue
            samples = samples_of(op, dtype, False, max_samples)
            for i, s in enumerate(samples):
                where = f"{op.name}{'.' + op.variant_test_name if op.variant_test_name else ''} " \
                        f"{dtype} sample {i}"
                cpu_args = (s.input, *s.args)
                dev_args = tree_map(same_layout_on_device, cpu_args)
                dev_kwargs = tree_map(same_layout_on_device, s.kwargs)
                if inplace:  # the device's inputs are copies too: the same layout, overlap included
                    cpu_args = tree_map(same_layout_copy, cpu_args)
                try:
                    expected = fn(*cpu_args, **s.kwargs)
                except Exception as e:  # the device must refuse it too
                    cpu_error = e
                else:
                    cpu_error = None
                torch_mtia.reset_fallback_counts()
                try:
                    got = fn(*dev_args, **dev_kwargs)
                    torch.mtia.synchronize()
                except Exception as e:
                    assert cpu_error is not None, f"{where}: the device raised {e!r}"
                    continue
                finally:
                    fallbacks = torch_mtia.fallback_counts()
                assert not fallbacks, f"{where}: ran through the CPU fallback: {fallbacks}"
                assert cpu_error is None, f"{where}: the CPU raised {cpu_error!r}, the device not"
                _compare(expected, got, pointwise, where)
                if is_view:
                    base = dev_args[0]
                    for g in tree_flatten(got)[0]:
                        if isinstance(g, torch.Tensor):
                            assert g.untyped_storage().data_ptr() == \
                                base.untyped_storage().data_ptr(), f"{where}: not a view"
                checked += 1
    return checked


def check_grad(name, variant=None, dtype=torch.float32, max_samples=None):
    """Gradients of op_db's samples of `name` on the device against the CPU's: the same outputs'
    gradients (deterministic random weights) flow back to every input that requires grad; no CPU
    fallback in the forward or the backward. Returns how many samples it compared."""
    checked = 0
    for op in opinfos(name, variant):
        if not op.supports_autograd or dtype not in op.supported_dtypes("cpu"):
            continue
        samples = _limit(list(op.sample_inputs("cpu", dtype, requires_grad=True)), max_samples)
        for i, s in enumerate(samples):
            where = f"{op.name}{'.' + op.variant_test_name if op.variant_test_name else ''} " \
                    f"grad {dtype} sample {i}"
            cpu_args = (s.input, *s.args)
            cpu_inputs = [t for t in tree_flatten((cpu_args, s.kwargs))[0]
                          if isinstance(t, torch.Tensor) and t.requires_grad]
            if not cpu_inputs:
                continue
            try:
                cpu_out = op.op(*cpu_args, **s.kwargs)
            except Exception:
                continue
            cpu_outs = [t for t in tree_flatten(cpu_out)[0]
                        if isinstance(t, torch.Tensor) and t.requires_grad]
            if not cpu_outs:
                continue
            g = torch.Generator().manual_seed(i)
            weights = [torch.randn(t.shape, generator=g, dtype=t.dtype) for t in cpu_outs]
            expected = torch.autograd.grad(cpu_outs, cpu_inputs, weights, allow_unused=True)
            mapping = {}

            def to_dev(t):
                if isinstance(t, torch.Tensor) and t.requires_grad:
                    d = same_layout_on_device(t.detach()).requires_grad_(True)
                    mapping[id(t)] = d
                    return d
                return same_layout_on_device(t)

            dev_args = tree_map(to_dev, cpu_args)
            dev_kwargs = tree_map(to_dev, s.kwargs)
            dev_inputs = [mapping[id(t)] for t in cpu_inputs]
            torch_mtia.reset_fallback_counts()
            dev_out = op.op(*dev_args, **dev_kwargs)
            dev_outs = [t for t in tree_flatten(dev_out)[0]
                        if isinstance(t, torch.Tensor) and t.requires_grad]
            got = torch.autograd.grad(dev_outs, dev_inputs, [w.to(DEV) for w in weights],
                                      allow_unused=True)
            torch.mtia.synchronize()
            fallbacks = torch_mtia.fallback_counts()
            assert not fallbacks, f"{where}: ran through the CPU fallback: {fallbacks}"
            for e, d in zip(expected, got):
                assert (e is None) == (d is None), where
                if e is not None:
                    # A little wider than assert_close's float32 default: the CPU's vectorised
                    # transcendental functions (Sleef) and libm differ in the last bits, which
                    # gradients like pow's x**y * log(x) carry.
                    torch.testing.assert_close(d.cpu(), e, equal_nan=True, rtol=1e-4, atol=1e-5,
                                               msg=lambda m: f"{where}: {m}")
            checked += 1
    return checked
