"""The foreach operators (torch._foreach_*) on the device against the CPU, from PyTorch's own foreach
OpInfo samples (foreach_unary_op_db, foreach_binary_op_db, foreach_pointwise_op_db and lerp): out of
place and in place, every dtype the device kernels handle, contiguous and non-contiguous lists. The
device runs them as batched launches of the pointwise kernel (csrc/ops_foreach.cpp); these tests also
pin what batching must keep: the order of effects when tensors of a list alias, lists that mix
batched and unbatched problems, and capture in a graph; and gradients against the CPU's."""
import os
import sys

import pytest
import torch
import torch_mtia
from torch.testing._internal import common_methods_invocations as cmi
from torch.utils._pytree import tree_flatten, tree_map

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import (DEV, DEVICE_DTYPES, _DTYPES, _LIMIT, _compare, _limit,  # noqa: E402
                            same_layout_copy, same_layout_on_device)

BATCHED = {"_foreach_" + n for n in (
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor",
    "frac", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid",
    "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "add", "sub", "mul", "div", "addcmul",
    "addcdiv", "clamp_max", "clamp_min", "maximum", "minimum", "lerp", "pow")}

OPS = [op for op in (cmi.foreach_unary_op_db + cmi.foreach_binary_op_db +
                     cmi.foreach_pointwise_op_db + cmi.foreach_other_op_db)
       if op.name in BATCHED]


def test_every_batched_operator_has_samples():
    assert {op.name for op in OPS} == BATCHED


def _run(fn, args, kwargs):
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001 - compared with the other side's
        return None, e


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("inplace", [False, True], ids=["out_of_place", "in_place"])
def test_foreach_matches_cpu(op, inplace):
    fn = op.inplace_variant if inplace else op.op
    if fn is None:
        pytest.skip("no such variant")
    checked = 0
    for dtype in sorted(op.supported_dtypes("cpu"), key=str):
        if dtype not in DEVICE_DTYPES or (_DTYPES is not None and dtype not in _DTYPES):
            continue
        # Non-contiguous lists reach the same C++ paths (one-dimensional problems of strided
        # tensors, released multi-dimensional ones): left to the unlimited sweep (the sanitizer
        # stages limit samples, and run these in a fraction of the time).
        for noncontiguous in (False, True) if _LIMIT is None else (False,):
            samples = _limit(list(op.sample_inputs("cpu", dtype, noncontiguous=noncontiguous)), 4)
            for i, s in enumerate(samples):
                where = f"{op.name}{'_' if inplace else ''} {dtype} " \
                        f"{'non' if noncontiguous else ''}contiguous sample {i}"
                cpu_args = tree_map(same_layout_copy, (s.input, *s.args))
                dev_args = tree_map(same_layout_on_device, (s.input, *s.args))
                dev_kwargs = tree_map(same_layout_on_device, s.kwargs)
                expected, cpu_error = _run(fn, cpu_args, s.kwargs)
                torch_mtia.reset_fallback_counts()
                got, dev_error = _run(fn, dev_args, dev_kwargs)
                if dev_error is None:
                    torch.mtia.synchronize()
                assert not torch_mtia.fallback_counts(), f"{where}: CPU fallback"
                assert (cpu_error is None) == (dev_error is None), \
                    f"{where}: CPU raised {cpu_error!r}, device raised {dev_error!r}"
                if cpu_error is not None:
                    continue
                if inplace:  # the results are the first list, changed in place
                    expected, got = cpu_args[0], dev_args[0]
                _compare(expected, got, True, where)
                checked += 1
    assert checked > 0


def test_aliased_tensors_keep_the_order_of_effects():
    # The same tensor three times: each step reads what the previous one wrote.
    a = torch.randn(7, generator=torch.Generator().manual_seed(0))
    d = a.to(DEV)
    torch._foreach_add_([a, a, a], [a, a, a])
    torch._foreach_add_([d, d, d], [d, d, d])
    torch.testing.assert_close(d.cpu(), a, rtol=0, atol=0)
    # One list's output is the next entry's input.
    x, y = torch.randn(5), torch.randn(5)
    dx, dy = x.to(DEV), y.to(DEV)
    torch._foreach_mul_([x, y], [y, x])
    torch._foreach_mul_([dx, dy], [dy, dx])
    torch.testing.assert_close((dx.cpu(), dy.cpu()), (x, y), rtol=0, atol=0)


def test_more_tensors_than_one_launch_holds_and_mixed_layouts():
    g = torch.Generator().manual_seed(1)
    # 40 tensors (three launches' worth), some of them strided views of two dimensions (launched
    # on their own, between the batched ones).
    base = [torch.randn(6, 8, generator=g) for _ in range(40)]
    cpu = [t if k % 7 else t[:, ::2] for k, t in enumerate(base)]
    dev_base = [t.to(DEV) for t in base]
    dev = [t if k % 7 else t[:, ::2] for k, t in enumerate(dev_base)]
    other = [torch.randn(t.shape, generator=g) for t in cpu]
    torch._foreach_addcmul_(cpu, other, other, value=0.5)
    torch._foreach_addcmul_(dev, [t.to(DEV) for t in other], [t.to(DEV) for t in other], value=0.5)
    for c, d in zip(base, dev_base):
        torch.testing.assert_close(d.cpu(), c)


def test_foreach_in_a_captured_graph_replays():
    xs = [torch.ones(n, device=DEV) for n in (3, 5, 1, 16)]
    s = torch.mtia.Stream()
    s.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(s):
        torch._foreach_mul_(xs, 0.5)  # warm-up, as capture recipes do
    torch.mtia.current_stream().wait_stream(s)
    graph = torch.mtia.MTIAGraph()
    with torch.mtia.graph(graph):
        torch._foreach_mul_(xs, 0.5)
        torch._foreach_add_(xs, xs, alpha=2.0)
    torch.mtia.synchronize()
    # The warm-up leaves 0.5; capturing runs nothing (as in CUDA); each replay multiplies by
    # 0.5 and then by 3.
    graph.replay()
    graph.replay()
    torch.mtia.synchronize()
    for x in xs:
        torch.testing.assert_close(x.cpu(), torch.full(x.shape, 0.5 * 1.5 * 1.5))


GRAD_OPS = ["_foreach_add", "_foreach_sub", "_foreach_mul", "_foreach_div", "_foreach_addcmul",
            "_foreach_addcdiv", "_foreach_lerp", "_foreach_pow", "_foreach_sqrt", "_foreach_exp",
            "_foreach_neg", "_foreach_reciprocal", "_foreach_sigmoid", "_foreach_maximum",
            "_foreach_clamp_min"]


@pytest.mark.parametrize("name", GRAD_OPS)
def test_foreach_gradients_match_the_cpu(name):
    op = next(o for o in OPS if o.name == name)
    checked = 0
    for i, s in enumerate(_limit(list(op.sample_inputs("cpu", torch.float32, requires_grad=True)), 8)):
        where = f"{name} grad sample {i}"
        cpu_args = (s.input, *s.args)
        # The first list's gradients (their formulas read the other operands too); PyTorch's own
        # backward refuses some samples' other operands on the CPU (addcdiv's empty tensor2).
        leaves = [t for t in s.input if t.requires_grad]
        try:
            cpu_out = op.op(*cpu_args, **s.kwargs)
        except Exception:  # noqa: BLE001 - a sample the CPU refuses has no gradient to compare
            continue
        mapping = {}

        def to_dev(t):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                mapping[id(t)] = same_layout_on_device(t.detach()).requires_grad_(True)
                return mapping[id(t)]
            return same_layout_on_device(t)

        dev_args = tree_map(to_dev, cpu_args)
        dev_kwargs = tree_map(to_dev, s.kwargs)
        g = torch.Generator().manual_seed(i)
        weights = [torch.randn(t.shape, generator=g) for t in cpu_out]
        try:
            expected = torch.autograd.grad(cpu_out, leaves, weights, allow_unused=True)
        except Exception:  # noqa: BLE001 - nothing to compare where the CPU's backward refuses
            continue
        torch_mtia.reset_fallback_counts()
        dev_out = op.op(*dev_args, **dev_kwargs)
        got = torch.autograd.grad(dev_out, [mapping[id(t)] for t in leaves],
                                  [w.to(DEV) for w in weights], allow_unused=True)
        torch.mtia.synchronize()
        assert not torch_mtia.fallback_counts(), f"{where}: CPU fallback"
        for e, d in zip(expected, got):
            assert (e is None) == (d is None), where
            if e is not None:
                torch.testing.assert_close(d.cpu(), e, rtol=1e-4, atol=1e-5, equal_nan=True,
                                           msg=lambda m: f"{where}: {m}")
        checked += 1
    assert checked > 0
