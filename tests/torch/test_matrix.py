"""Matrix products on the device (kernels/matrix_kernels.cpp, csrc/ops_matrix.cpp) equal the CPU's:
PyTorch's own OpInfo samples of mm, bmm, addmm, baddbmm, addmv, mv, dot, matmul and linear, the
in-place and out= forms, transposed, strided and overlapping operands, the once-rounded bfloat16
addmm, exact integer products, products split over several blocks, and gradients through matmul,
nn.Linear and attention's q @ k^T / att @ v."""
import os
import sys

import pytest
import torch

import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import check_op  # noqa: E402

DEV = torch.device("mtia", 0)
MATRIX_OPS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addmv", "aten::mv",
              "aten::dot", "aten::addmm_", "aten::baddbmm_", "aten::addmv_"}


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return (x * 10).to(dtype) if not dtype.is_floating_point else x.to(dtype)


@pytest.mark.parametrize("name", ["mm", "bmm", "addmm", "baddbmm", "addmv", "mv", "dot", "matmul",
                                  "nn.functional.linear"])
def test_opinfo(name):
    assert check_op(name) > 0


@pytest.mark.parametrize("name", ["addmm", "baddbmm", "addmv"])
def test_opinfo_inplace(name):
    assert check_op(name, inplace=True) > 0


def no_matrix_fallback():
    return not (set(torch_mtia.fallback_counts()) & MATRIX_OPS)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
def test_transposed_strided_and_expanded_operands(dtype):
    a, b = rand(40, 30, dtype=dtype, seed=1), rand(50, 40, dtype=dtype, seed=2)
    # The same views of the CPU's and the device's copies of a and b.
    cases = [
        lambda a, b: (a.t(), b.t()),               # transposed: BLAS transposes
        lambda a, b: (a[::2], b[:30, ::3]),             # row and column steps: copies
        lambda a, b: (a[:, 1:21], b[3:23, 5:40]),       # leading dimension above the size
        lambda a, b: (a[:1].expand(7, 30), b[:30, :4]),  # stride 0: copied
        lambda a, b: (a[:, :1], b[:1, :9]),             # k == 1
    ]
    da, db = a.to(DEV), b.to(DEV)
    torch_mtia.reset_fallback_counts()
    for case in cases:
        x, y = case(a, b)
        dx, dy = case(da, db)
        assert dx.stride() == x.stride()
        torch.testing.assert_close(torch.mm(dx, dy).cpu(), torch.mm(x, y))
        torch.testing.assert_close(torch.matmul(dx.t(), dx).cpu(), torch.matmul(x.t(), x))
        torch.testing.assert_close(torch.mv(dx, dy[:, 0]).cpu(), torch.mv(x, y[:, 0]))
    assert no_matrix_fallback(), torch_mtia.fallback_counts()


def test_out_forms_resize_transposed_out_and_aliasing():
    a, b, c = rand(6, 5, seed=3), rand(5, 4, seed=4), rand(6, 4, seed=5)
    da, db, dc = a.to(DEV), b.to(DEV), c.to(DEV)
    out = torch.empty(0, device=DEV)
    torch.mm(da, db, out=out)
    assert out.shape == (6, 4)
    torch.testing.assert_close(out.cpu(), a @ b)
    # An out= with column-major strides.
    tout = torch.empty(4, 6, device=DEV).t()
    torch.addmm(dc, da, db, beta=0.5, alpha=2.0, out=tout)
    assert tout.stride() == (1, 6)
    torch.testing.assert_close(tout.cpu(), torch.addmm(c, a, b, beta=0.5, alpha=2.0))
    # In place, and an out that is an operand.
    ref = c.clone().addmm_(a, b, alpha=-1.0)
    dc.addmm_(da, db, alpha=-1.0)
    torch.testing.assert_close(dc.cpu(), ref)
    sq, dsq = rand(5, 5, seed=6), rand(5, 5, seed=6).to(DEV)
    torch.mm(dsq, dsq, out=dsq)
    torch.testing.assert_close(dsq.cpu(), sq @ sq)
    # bmm.out, baddbmm_, addmv.out, mv.out, dot.out
    x, y, z = rand(3, 4, 5, seed=7), rand(3, 5, 2, seed=8), rand(3, 4, 2, seed=9)
    o = torch.empty(3, 4, 2, device=DEV)
    torch.bmm(x.to(DEV), y.to(DEV), out=o)
    torch.testing.assert_close(o.cpu(), torch.bmm(x, y))
    dz = z.to(DEV)
    dz.baddbmm_(x.to(DEV), y.to(DEV), beta=2, alpha=0.5)
    torch.testing.assert_close(dz.cpu(), z.clone().baddbmm_(x, y, beta=2, alpha=0.5))
    v, w = rand(5, seed=10), rand(6, seed=11)
    ov = torch.empty(6, device=DEV)
    torch.addmv(w.to(DEV), a.to(DEV), v.to(DEV), out=ov)
    torch.testing.assert_close(ov.cpu(), torch.addmv(w, a, v))
    torch.mv(a.to(DEV), v.to(DEV), out=ov)
    torch.testing.assert_close(ov.cpu(), torch.mv(a, v))
    od = torch.empty((), device=DEV)
    torch.dot(v.to(DEV), v.to(DEV), out=od)
    torch.testing.assert_close(od.cpu(), torch.dot(v, v))


def test_beta_zero_ignores_nan_and_k_zero():
    a, b = rand(3, 4, seed=12), rand(4, 2, seed=13)
    nan = torch.full((3, 2), float("nan"))
    got = torch.addmm(nan.to(DEV), a.to(DEV), b.to(DEV), beta=0)
    torch.testing.assert_close(got.cpu(), a @ b)
    got = torch.addmm(rand(3, 2, seed=14).to(DEV), torch.empty(3, 0, device=DEV),
                      torch.empty(0, 2, device=DEV), beta=3)
    torch.testing.assert_close(got.cpu(), 3 * rand(3, 2, seed=14))
    assert torch.mm(torch.empty(0, 4, device=DEV), b.to(DEV)).shape == (0, 2)


def test_bfloat16_addmm_rounds_once_as_cpu():
    a, b, s = (rand(64, 96, seed=15).bfloat16(), rand(96, 80, seed=16).bfloat16(),
               rand(80, seed=17).bfloat16())
    assert torch.equal(torch.addmm(s.to(DEV), a.to(DEV), b.to(DEV), beta=0.7, alpha=1.3).cpu(),
                       torch.addmm(s, a, b, beta=0.7, alpha=1.3))
    assert torch.equal(torch.nn.functional.linear(a.to(DEV), b.t().to(DEV), s.to(DEV)).cpu(),
                       torch.nn.functional.linear(a, b.t(), s))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_integer_products_exact(dtype):
    big = 2 ** 40 if dtype == torch.int64 else 1000
    a = torch.randint(-big, big, (7, 9), dtype=torch.int64).to(dtype)
    b = torch.randint(-big, big, (9, 5), dtype=torch.int64).to(dtype)
    s = torch.randint(-big, big, (5,), dtype=torch.int64).to(dtype)
    assert torch.equal(torch.mm(a.to(DEV), b.to(DEV)).cpu(), torch.mm(a, b))
    assert torch.equal(torch.addmm(s.to(DEV), a.to(DEV), b.to(DEV), beta=3, alpha=-2).cpu(),
                       torch.addmm(s, a, b, beta=3, alpha=-2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_large_products_over_several_blocks(dtype):
    # Sums of 200 products: the CPU's BLAS and ours add in different orders, so float32 results
    # differ by a few units in the last place of the terms (atol), not of the result.
    tol = dict(atol=1e-4, rtol=1e-5) if dtype == torch.float32 else {}
    a, b = rand(300, 200, dtype=dtype, seed=18), rand(200, 150, dtype=dtype, seed=19)
    torch.testing.assert_close(torch.mm(a.to(DEV), b.to(DEV)).cpu(), torch.mm(a, b), **tol)
    x, y = rand(9, 70, 60, dtype=dtype, seed=20), rand(9, 60, 50, dtype=dtype, seed=21)
    torch.testing.assert_close(torch.bmm(x.to(DEV), y.to(DEV)).cpu(), torch.bmm(x, y), **tol)


def grads(fn, *tensors):
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    out = fn(*leaves)
    out.backward(torch.ones_like(out))
    return out.detach(), [t.grad for t in leaves]


def test_gradients_linear_matmul_attention():
    torch_mtia.reset_fallback_counts()
    w, bias, x = rand(16, 24, seed=22), rand(16, seed=23), rand(3, 5, 24, seed=24)
    lin = lambda x, w, b: torch.nn.functional.linear(x, w, b)  # noqa: E731
    for shape_x in [x, x[0]]:
        c_out, c_grads = grads(lin, shape_x, w, bias)
        d_out, d_grads = grads(lin, shape_x.to(DEV), w.to(DEV), bias.to(DEV))
        torch.testing.assert_close(d_out.cpu(), c_out)
        for c, d in zip(c_grads, d_grads):
            torch.testing.assert_close(d.cpu(), c)
    q, k, v = rand(2, 4, 6, 8, seed=25), rand(2, 4, 6, 8, seed=26), rand(2, 4, 6, 8, seed=27)
    att = lambda q, k, v: (q @ k.transpose(-2, -1) * 0.5) @ v  # noqa: E731
    c_out, c_grads = grads(att, q, k, v)
    d_out, d_grads = grads(att, q.to(DEV), k.to(DEV), v.to(DEV))
    torch.testing.assert_close(d_out.cpu(), c_out)
    for c, d in zip(c_grads, d_grads):
        torch.testing.assert_close(d.cpu(), c)
    for shapes in [((5,), (5,)), ((4, 5), (5,)), ((5,), (5, 3)), ((2, 4, 5), (5, 3))]:
        a, b = rand(*shapes[0], seed=28), rand(*shapes[1], seed=29)
        c_out, c_grads = grads(torch.matmul, a, b)
        d_out, d_grads = grads(torch.matmul, a.to(DEV), b.to(DEV))
        torch.testing.assert_close(d_out.cpu(), c_out)
        for c, d in zip(c_grads, d_grads):
            torch.testing.assert_close(d.cpu(), c)
    assert no_matrix_fallback(), torch_mtia.fallback_counts()


def test_float64_gradcheck():
    a = rand(4, 3, dtype=torch.float64, seed=30).to(DEV).requires_grad_()
    b = rand(3, 5, dtype=torch.float64, seed=31).to(DEV).requires_grad_()
    s = rand(5, dtype=torch.float64, seed=32).to(DEV).requires_grad_()
    assert torch.autograd.gradcheck(lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=2),
                                    (s, a, b))


def test_refuses_as_cpu():
    a = torch.ones(2, 3, device=DEV)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        torch.mm(a, a)
    with pytest.raises(RuntimeError):
        torch.mm(a, torch.ones(3, 2, dtype=torch.float64, device=DEV))
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.mm(a.bool(), a.t().bool())
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        torch.dot(a, a)
