"""Shapes, factories and views on the device equal the CPU's, with no CPU fallback: op_db samples
for cat, stack, hstack, vstack, tril, triu, flip, roll, repeat and every view operator (views
alias their input: no copy); arange, linspace and eye against the CPU (op_db's factory samples
name the CPU device); .item() for every dtype; repeat/unfold values and aliasing; resize_ keeps
strides when the size does not change; gradients of cat and tril."""
import os
import sys

import pytest
import torch

import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import DEVICE_DTYPES, check_op  # noqa: E402

DEV = torch.device("mtia", 0)


@pytest.mark.parametrize("name", ["cat", "stack", "hstack", "vstack", "tril", "triu", "flip",
                                  "roll", "repeat"])
def test_opinfo_samples(name):
    assert check_op(name) > 0


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_opinfo_in_place(name):
    assert check_op(name, inplace=True) > 0


VIEWS = ["unfold", "diagonal", "unbind", "split", "chunk", "expand", "permute", "narrow", "select",
         "t", "transpose", "movedim", "squeeze", "unsqueeze", "view", "reshape", "as_strided",
         "view_as", "expand_as", "flatten", "unflatten", "split_with_sizes", "T", "mT"]


@pytest.mark.parametrize("name", sorted(set(VIEWS)))
def test_views_alias(name):
    # reshape and flatten copy when they must (as on the CPU): their samples are compared without
    # the aliasing check.
    assert check_op(name, is_view=name not in ("reshape", "flatten")) > 0


def test_repeat_and_unfold():
    base = torch.arange(6.).reshape(3, 2)
    d = base.to(DEV)
    torch_mtia.reset_fallback_counts()
    assert torch.equal(d.repeat(2, 1).cpu(), base.repeat(2, 1))
    assert torch.equal(d.repeat(1, 2, 3).cpu(), base.repeat(1, 2, 3))
    u = d.unfold(0, 2, 1)
    assert not torch_mtia.fallback_counts()
    assert torch.equal(u.cpu(), base.unfold(0, 2, 1))
    assert u.untyped_storage().data_ptr() == d.untyped_storage().data_ptr()
    u[1, 0, 1] = 42.0  # window 1, column 0, element 1: row 2, column 0 of the base
    assert d[2, 0].item() == 42.0


def test_unfold_backward():
    x = torch.randn(7, 3, requires_grad=True)
    xd = x.detach().to(DEV).requires_grad_()
    for size, step in ((3, 1), (2, 2), (3, 3)):
        w = torch.randn(x.unfold(0, size, step).shape)
        x.grad = xd.grad = None
        (x.unfold(0, size, step) * w).sum().backward()
        torch_mtia.reset_fallback_counts()
        (xd.unfold(0, size, step) * w.to(DEV)).sum().backward()
        assert not torch_mtia.fallback_counts()
        assert torch.allclose(xd.grad.cpu(), x.grad, atol=1e-6)


@pytest.mark.parametrize("dtype", DEVICE_DTYPES)
def test_item(dtype):
    values = torch.tensor([0, 1, 3, 100, -7]).to(dtype)
    d = values.to(DEV)
    torch_mtia.reset_fallback_counts()
    for k in range(len(values)):
        assert d[k].item() == values[k].item()
    assert not torch_mtia.fallback_counts()


def test_resize_strides():
    for base in (torch.zeros(3, 4), torch.zeros(3, 4, device=DEV)):
        t = base.t().resize_(4, 3)
        assert t.stride() == (1, 4)  # same size: the transposed strides stay
        t.resize_(2, 6)
        assert t.stride() == (6, 1)  # a new size: contiguous
        t.resize_(2, 6, memory_format=torch.contiguous_format)
        assert t.stride() == (6, 1)
    d = torch.arange(4., device=DEV)
    d.resize_(10)  # growth keeps the old elements
    assert torch.equal(d[:4].cpu(), torch.arange(4.))
    n = torch.zeros(1, 2, 3, 4, device=DEV).resize_(1, 2, 3, 4, memory_format=torch.channels_last)
    assert n.stride() == torch.zeros(1, 2, 3, 4).resize_(1, 2, 3, 4,
                                                        memory_format=torch.channels_last).stride()


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float64,
                                   torch.float16, torch.bfloat16])
def test_arange_linspace_eye(dtype):
    torch_mtia.reset_fallback_counts()
    for args in ((5,), (2, 11, 3), (-3, 4), (10, 0, -2)):
        assert torch.equal(torch.arange(*args, dtype=dtype, device=DEV).cpu(),
                           torch.arange(*args, dtype=dtype))
    if dtype.is_floating_point:
        for args in ((0, 1, 0.1), (1.5, -2.0, -0.25)):
            assert torch.allclose(torch.arange(*args, dtype=dtype, device=DEV).cpu(),
                                  torch.arange(*args, dtype=dtype), rtol=1e-2 if dtype in
                                  (torch.float16, torch.bfloat16) else 1e-6)
    for args in ((0, 1, 5), (-2, 10, 7), (3, 3, 1), (1, 2, 0), (0, 100, 13)):
        got = torch.linspace(*args, dtype=dtype, device=DEV).cpu()
        expected = torch.linspace(*args, dtype=dtype)
        assert torch.allclose(got.double(), expected.double(), rtol=1e-2, atol=1e-2), args
    out = torch.empty(3, dtype=dtype, device=DEV)
    torch.arange(0, 8, 2, out=out)
    assert torch.equal(out.cpu(), torch.arange(0, 8, 2, dtype=dtype))
    torch.linspace(0, 4, 5, out=out)
    assert torch.equal(out.cpu(), torch.linspace(0, 4, 5, dtype=dtype))
    assert torch.equal(torch.eye(3, 4, dtype=dtype, device=DEV).cpu(), torch.eye(3, 4, dtype=dtype))
    assert torch.equal(torch.full((2, 3), 7, dtype=dtype, device=DEV).cpu(),
                       torch.full((2, 3), 7, dtype=dtype))
    assert torch.equal(torch.ones(4, dtype=dtype, device=DEV).cpu(), torch.ones(4, dtype=dtype))
    assert not torch_mtia.fallback_counts()


def test_cat_promotion_empty_and_out():
    a = torch.randn(2, 3)
    b = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    e = torch.empty(0)
    got = torch.cat([a.to(DEV), b.to(DEV), e.to(DEV)], 0)
    assert got.dtype == torch.float32
    assert torch.equal(got.cpu(), torch.cat([a, b, e], 0))
    out = torch.empty(0, device=DEV)
    torch.cat([a.to(DEV), a.to(DEV)], 1, out=out)
    assert torch.equal(out.cpu(), torch.cat([a, a], 1))
    with pytest.raises(RuntimeError):
        torch.cat([a.to(DEV), torch.randn(3, 3, device=DEV)], 1)


def test_cat_tril_backward():
    a = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(2, 4, requires_grad=True)
    ad = a.detach().to(DEV).requires_grad_()
    bd = b.detach().to(DEV).requires_grad_()
    w = torch.randn(5, 4)
    (torch.cat([a, b]).tril(1) * w).sum().backward()
    torch_mtia.reset_fallback_counts()
    (torch.cat([ad, bd]).tril(1) * w.to(DEV)).sum().backward()
    assert not torch_mtia.fallback_counts()
    assert torch.allclose(ad.grad.cpu(), a.grad) and torch.allclose(bd.grad.cpu(), b.grad)
