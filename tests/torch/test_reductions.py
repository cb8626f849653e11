"""Reductions, scans and softmax on the device (kernels/reduce_kernels.cpp): PyTorch's own op_db
samples against the CPU, out= and dtype= forms, the CPU's dtype rules and errors, gradients, and no
CPU fallback."""
import os
import sys

import pytest
import torch
import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import check_op  # noqa: E402

DEV = torch.device("mtia", 0)

# (name, variant) of op_db entries whose samples stay within the reduction and softmax kernels.
OPINFOS = [
    ("sum", None), ("mean", None), ("prod", None), ("amax", None), ("amin", None),
    ("argmax", None), ("argmin", None), ("max", "reduction_with_dim"),
    ("min", "reduction_with_dim"), ("max", "reduction_no_dim"), ("min", "reduction_no_dim"),
    ("var", None), ("std", None), ("var_mean", None), ("std_mean", None),
    ("linalg.vector_norm", None), ("norm", ""), ("norm", "fro"), ("norm", "inf"),
    ("all", None), ("any", None), ("logsumexp", None), ("cumsum", None), ("cumprod", None),
    ("softmax", ""), ("softmax", "with_dtype"), ("log_softmax", ""),
    ("log_softmax", "with_dtype"), ("_softmax_backward_data", None),
]


@pytest.mark.parametrize("name,variant", OPINFOS, ids=[f"{n}.{v}" if v else n for n, v in OPINFOS])
def test_opinfo(name, variant):
    assert check_op(name, variant) > 0


def no_fallback(fn):
    torch_mtia.reset_fallback_counts()
    r = fn()
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}
    return r


def test_dtype_rules():
    i = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    d = i.to(DEV)
    assert no_fallback(lambda: d.sum()).dtype == torch.int64
    assert no_fallback(lambda: d.sum(1, dtype=torch.float64)).dtype == torch.float64
    assert no_fallback(lambda: d.prod(0)).dtype == torch.int64
    assert no_fallback(lambda: d.cumsum(1)).dtype == torch.int64
    assert no_fallback(lambda: torch.logsumexp(d, 1)).dtype == torch.get_default_dtype()
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        d.mean()
    torch.testing.assert_close(no_fallback(lambda: d.mean(1, dtype=torch.float32)).cpu(),
                               i.mean(1, dtype=torch.float32))
    assert no_fallback(lambda: d.to(torch.uint8).all()).dtype == torch.uint8
    assert no_fallback(lambda: d.any(1)).dtype == torch.bool


def test_out_forms():
    x = torch.randn(4, 5, 6)
    d = x.to(DEV)
    out = torch.empty(0, device=DEV)
    no_fallback(lambda: torch.sum(d, (0, 2), keepdim=True, out=out))
    torch.testing.assert_close(out.cpu(), x.sum((0, 2), keepdim=True))
    out = torch.empty(0, device=DEV)
    no_fallback(lambda: torch.mean(d, 1, out=out))
    torch.testing.assert_close(out.cpu(), x.mean(1))
    out = torch.empty(0, device=DEV)
    no_fallback(lambda: torch.amax(d, (1, 2), out=out))
    torch.testing.assert_close(out.cpu(), x.amax((1, 2)))
    v, idx = torch.empty(0, device=DEV), torch.empty(0, dtype=torch.long, device=DEV)
    no_fallback(lambda: torch.max(d, 2, out=(v, idx)))
    ev, ei = x.max(2)
    torch.testing.assert_close(v.cpu(), ev)
    torch.testing.assert_close(idx.cpu(), ei)
    out = torch.empty(0, dtype=torch.long, device=DEV)
    no_fallback(lambda: torch.argmin(d, 0, out=out))
    torch.testing.assert_close(out.cpu(), x.argmin(0))
    out = torch.empty(0, device=DEV)
    no_fallback(lambda: torch.cumsum(d, 1, out=out))
    torch.testing.assert_close(out.cpu(), x.cumsum(1))
    e = d.clone()
    no_fallback(lambda: e.cumsum_(2))
    torch.testing.assert_close(e.cpu(), x.cumsum(2))
    # a strided out: the kernel writes through its strides
    out = torch.empty(8, 6, device=DEV)[::2]
    no_fallback(lambda: torch.sum(d, 1, out=out))
    torch.testing.assert_close(out.cpu(), x.sum(1))


def test_nan_and_first_index():
    x = torch.tensor([[1.0, 3.0, 3.0, float("nan"), 2.0, float("nan")], [5.0, 5.0, 1.0, 0.0, 5.0, 2.0]])
    d = x.to(DEV)
    for fn in (lambda t: t.max(1), lambda t: t.min(1), lambda t: t.argmax(1), lambda t: t.argmin(1),
               lambda t: t.amax(1), lambda t: t.max(), lambda t: t.argmax(),
               lambda t: torch.linalg.vector_norm(t, float("inf"), 1), lambda t: t.logsumexp(1)):
        torch.testing.assert_close(no_fallback(lambda: fn(d)), fn(x), equal_nan=True,
                                   check_device=False)


def test_errors_as_cpu():
    e = torch.empty(0, 3, device=DEV)
    with pytest.raises(IndexError):
        e.max(0)
    with pytest.raises(RuntimeError, match="Expected reduction dim"):
        e.max()
    with pytest.raises(RuntimeError, match="cannot compute the inf norm"):
        torch.linalg.vector_norm(e, float("inf"))
    torch.testing.assert_close(e.sum(0).cpu(), torch.zeros(3))
    torch.testing.assert_close(e.prod(0).cpu(), torch.ones(3))
    with pytest.raises(RuntimeError):
        torch.ones(3, dtype=torch.int64, device=DEV).var()


def test_large_float32_sum_accuracy():
    # 2^24 ones: a float running total stops at 2^24; the CPU's cascade and our double do not.
    x = torch.full((1 << 22,), 1.1)
    torch.testing.assert_close(x.to(DEV).sum().cpu(), x.sum())
    h = torch.full((5000,), 1.0, dtype=torch.float16)
    torch.testing.assert_close(h.to(DEV).sum().cpu(), h.sum())


def test_gradients_float32():
    x = torch.randn(3, 4, 5, requires_grad=True)
    d = x.detach().to(DEV).requires_grad_()
    fns = [lambda t: t.sum(1).sum(), lambda t: torch.softmax(t, 1).pow(2).sum(),
           lambda t: (torch.log_softmax(t, 2) * torch.arange(5.0, device=t.device)).sum()]
    for f in fns:
        (g,) = torch.autograd.grad(f(x), x)
        torch_mtia.reset_fallback_counts()
        (gd,) = torch.autograd.grad(f(d), d)
        torch.testing.assert_close(gd.cpu(), g)


def test_softmax_backward_no_fallback():
    x = torch.randn(6, 7, requires_grad=True)
    d = x.detach().to(DEV).requires_grad_()
    gy = torch.randn(6, 7)
    for fn in (torch.softmax, torch.log_softmax):
        y = fn(d, 0)
        torch_mtia.reset_fallback_counts()
        (g,) = torch.autograd.grad(y, d, gy.to(DEV))
        torch.mtia.synchronize()
        assert torch_mtia.fallback_counts() == {}
        (ge,) = torch.autograd.grad(fn(x, 0), x, gy)
        torch.testing.assert_close(g.cpu(), ge)


def test_softmax_gradcheck_float64():
    x = torch.randn(3, 5, dtype=torch.float64, device=DEV, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.softmax(t, 1), (x,))
    assert torch.autograd.gradcheck(lambda t: torch.log_softmax(t, 0), (x,))


def test_half_to_float():
    # The CPU refuses half_to_float (CUDA's path for softmax(x, dtype=float) of a half x); the
    # device takes it, as CUDA: the result is the float softmax of the half values.
    x = torch.randn(4, 9, dtype=torch.float16)
    got = no_fallback(lambda: torch.ops.aten._softmax(x.to(DEV), 1, True))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), torch.softmax(x.float(), 1))
    g = no_fallback(lambda: torch.ops.aten._softmax_backward_data(
        torch.ones(4, 9, device=DEV), got, 1, torch.float16))
    assert g.dtype == torch.float16


def test_sum_backward_and_mean_backward():
    x = torch.randn(4, 5, requires_grad=True)
    d = x.detach().to(DEV).requires_grad_()
    d.sum(1).backward(torch.ones(4, device=DEV))
    torch.testing.assert_close(d.grad.cpu(), torch.ones(4, 5))


@pytest.mark.parametrize("n", [1 << 16, (1 << 16) + 7, 3_000_001])
def test_full_sum_in_shares(n):
    # One large sum runs as per-block float64 partial sums and a second launch that adds them.
    x = torch.randn(n)
    d = x.to(DEV)
    torch.testing.assert_close(no_fallback(lambda: d.sum()).cpu(), x.sum(), rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(d.mean().cpu(), x.mean())
    torch.testing.assert_close(d.double().sum().cpu(), x.double().sum())
    torch.testing.assert_close(d.half().mean().cpu(), x.half().mean())
    y = torch.randn(600, 700)
    yd = y.to(DEV)
    torch.testing.assert_close(yd[::2, 1::3].sum().cpu(), y[::2, 1::3].sum(), rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(yd.t().mean((0, 1), keepdim=True).cpu(),
                               y.t().mean((0, 1), keepdim=True))
