"""Arithmetic on the device equals the CPU's: add/sub/mul in Tensor and Scalar forms (broadcasting,
type promotion, in place), relu, mm/addmm, sum."""
import pytest
import torch

import torch_mtia

DEV = torch.device("mtia", 0)


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return (x * 10).to(dtype) if not dtype.is_floating_point else x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32])
def test_binary_tensor_forms(dtype):
    a, b = rand(4, 5, dtype=dtype, seed=1), rand(4, 5, dtype=dtype, seed=2)
    da, db = a.to(DEV), b.to(DEV)
    assert torch.equal((da + db).cpu(), a + b)
    assert torch.equal((da - db).cpu(), a - b)
    assert torch.equal((da * db).cpu(), a * b)
    assert torch.equal(torch.add(da, db, alpha=3).cpu(), torch.add(a, b, alpha=3))
    assert torch.equal(torch.sub(da, db, alpha=2).cpu(), torch.sub(a, b, alpha=2))


def test_broadcasting_strides_and_promotion():
    a = rand(3, 4, seed=3)
    row = rand(4, seed=4)
    ints = torch.arange(4)
    da = a.to(DEV)
    assert torch.allclose((da + row.to(DEV)).cpu(), a + row)
    assert torch.allclose((da.t() * rand(3, seed=5).to(DEV)).cpu(), a.t() * rand(3, seed=5))
    promoted = da + ints.to(DEV)
    assert promoted.dtype == torch.float32 and torch.allclose(promoted.cpu(), a + ints)
    assert (ints.to(DEV) * 2.5).dtype == torch.float32
    assert torch.equal((ints.to(DEV) * 2.5).cpu(), ints * 2.5)
    assert torch.equal((da + torch.tensor(1.5)).cpu(), a + 1.5)  # CPU scalar tensor


def test_scalar_forms_and_in_place():
    a = rand(6, seed=6)
    d = a.to(DEV)
    assert torch.allclose((d + 2).cpu(), a + 2)
    assert torch.allclose((d - 0.5).cpu(), a - 0.5)
    assert torch.allclose((d * -3).cpu(), a * -3)
    e = a.to(DEV)
    e.add_(d, alpha=2)
    e.sub_(d)
    e.mul_(d)
    assert torch.allclose(e.cpu(), (a + 2 * a - a) * a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
def test_threshold_backward_equals_cpu(dtype):
    # relu's backward, run on the device (no CPU fallback): strided and broadcast operands, NaN inputs
    # pass the gradient as on the CPU, an integer tensor with a fractional threshold.
    grad = rand(6, 5, dtype=dtype, seed=7)
    x = rand(5, 6, dtype=dtype, seed=8).t()  # non-contiguous
    if dtype.is_floating_point:
        x[0, 0] = float("nan")
    for threshold in (0, 0.5, -1.5, 0.1):  # 0.1 is rounded to the opmath type, as on the CPU
        expected = torch.ops.aten.threshold_backward(grad, x, threshold)
        got = torch.ops.aten.threshold_backward(grad.to(DEV), x.to(DEV), threshold)
        assert got.device == DEV and got.dtype == expected.dtype
        assert torch.equal(got.cpu(), expected), threshold
    row = rand(5, dtype=dtype, seed=9)  # the gradient broadcast along rows
    expected = torch.ops.aten.threshold_backward(row, x, 0)
    assert torch.equal(torch.ops.aten.threshold_backward(row.to(DEV), x.to(DEV), 0).cpu(), expected)


def test_threshold_backward_takes_cpu_scalars_and_refuses_other_cpu_tensors():
    x = torch.ones(3, device=DEV)
    # A 0-dim CPU tensor stands beside device tensors, as in every pointwise op (CUDA's rule too).
    got = torch.ops.aten.threshold_backward(torch.tensor(2.0), x, 0)
    assert got.device == DEV and torch.equal(got.cpu(), torch.full((3,), 2.0))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ops.aten.threshold_backward(x, torch.ones(3), 0)


def test_threshold_backward_rounds_the_threshold_to_the_opmath_type():
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.tensor([0.1, 0.3, 0.09], dtype=dtype)
        grad = torch.ones(3, dtype=dtype)
        for threshold in (0.1, 0.3):
            expected = torch.ops.aten.threshold_backward(grad, x, threshold)
            got = torch.ops.aten.threshold_backward(grad.to(DEV), x.to(DEV), threshold)
            assert torch.equal(got.cpu(), expected), (dtype, threshold)


def test_in_place_overlap_is_refused_as_on_the_cpu():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    d = a.to(DEV)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        d.add_(d.t())  # partial overlap of the written tensor and an input
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.zeros(3, device=DEV).expand(3, 3).add_(torch.ones(3, 3, device=DEV))
    x = torch.arange(8.0).to(DEV)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[1:].copy_(x[:-1])
    d.add_(d)  # full overlap is element by element: allowed
    d.mul_(d)
    assert torch.equal(d.cpu(), (a + a) * (a + a))
    d.copy_(d)  # the same elements: nothing to do
    assert torch.equal(d.cpu(), (a + a) * (a + a))


def test_copy_broadcasts_the_source():
    row = torch.tensor([1.0, 2.0, 3.0])
    dst = torch.zeros(2, 3, device=DEV)
    dst.copy_(row)  # host to device
    assert torch.equal(dst.cpu(), row.expand(2, 3))
    dst.copy_(torch.tensor([5.0, 6.0, 7.0], device=DEV))  # device to device
    assert torch.equal(dst.cpu(), torch.tensor([5.0, 6.0, 7.0]).expand(2, 3))
    host = torch.zeros(2, 3, dtype=torch.float64)
    host.copy_(row.to(DEV))  # device to host, with a dtype change
    assert torch.equal(host, row.to(torch.float64).expand(2, 3))
    with pytest.raises(RuntimeError):
        dst.copy_(torch.ones(4, device=DEV))


def test_alpha_and_bool_subtraction_checks_match_the_cpu():
    i = torch.arange(4).to(DEV)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.add(i, i, alpha=0.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        i.add_(i, alpha=0.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.add(i, 1, alpha=0.5)
    b = torch.tensor([True, False]).to(DEV)
    with pytest.raises(RuntimeError, match="two bool tensors is not supported"):
        b - b
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        torch.ones(2, device=DEV) - b
    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
        torch.add(torch.ones(2, device=DEV), torch.ones(2, device=DEV), alpha=True)
    assert torch.equal(torch.add(b, b, alpha=True).cpu(), torch.add(b.cpu(), b.cpu(), alpha=True))


def test_addmm_with_beta_zero_ignores_self_and_keeps_infinities():
    m1 = torch.tensor([[1e30]])
    m2 = torch.tensor([[1e30]])
    nan = torch.tensor([[float("nan")]])
    for alpha in (1, 2):
        expected = torch.addmm(nan, m1, m2, beta=0, alpha=alpha)
        got = torch.addmm(nan.to(DEV), m1.to(DEV), m2.to(DEV), beta=0, alpha=alpha)
        assert torch.equal(got.cpu(), expected), alpha


def test_relu_mm_addmm_sum():
    a, b = rand(5, 7, seed=7), rand(7, 3, seed=8)
    bias = rand(3, seed=9)
    da, db = a.to(DEV), b.to(DEV)
    assert torch.equal(torch.relu(da).cpu(), torch.relu(a))
    assert torch.equal(torch.relu(da.t()).cpu(), torch.relu(a.t()))
    assert torch.allclose((da @ db).cpu(), a @ b, atol=1e-5)
    assert torch.allclose((db.t() @ da.t()).cpu(), b.t() @ a.t(), atol=1e-5)  # strided operands
    assert torch.allclose(torch.addmm(bias.to(DEV), da, db).cpu(), torch.addmm(bias, a, b), atol=1e-5)
    assert torch.allclose(torch.addmm(bias.to(DEV), da, db, beta=0.5, alpha=2).cpu(),
                          torch.addmm(bias, a, b, beta=0.5, alpha=2), atol=1e-5)
    assert torch.allclose(da.sum().cpu(), a.sum(), atol=1e-5)
    assert torch.allclose(da.sum(0).cpu(), a.sum(0), atol=1e-5)
    assert torch.allclose(da.sum(1, keepdim=True).cpu(), a.sum(1, keepdim=True), atol=1e-5)
    ints = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    s = ints.to(DEV).sum(1)
    assert s.dtype == torch.int64 and torch.equal(s.cpu(), ints.sum(1))
    assert torch.equal(torch.mm(ints.to(DEV), ints.t().to(DEV)).cpu(), ints @ ints.t())  # host path for ints


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_arithmetic_equals_cpu(dtype):
    a, b = rand(4, 5, dtype=dtype, seed=6), rand(4, 5, dtype=dtype, seed=7)
    da, db = a.to(DEV), b.to(DEV)
    assert (da + db).dtype == dtype
    assert torch.equal((da + db).cpu(), a + b)
    assert torch.equal((da - db).cpu(), a - b)
    assert torch.equal((da * db).cpu(), a * b)
    assert torch.equal((da * 3).cpu(), a * 3)
    assert torch.equal(torch.relu(da).cpu(), torch.relu(a.float()).to(dtype))  # no CPU half relu here


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_sum_accumulates_wide(dtype):
    # A running total kept in half stops growing at 2048 (2049 is not representable); the CPU
    # accumulates in float32 and rounds once.
    ones = torch.ones(4096, dtype=dtype)
    assert ones.to(DEV).sum().item() == ones.sum().item() == 4096
    x = rand(64, 48, dtype=dtype, seed=8)
    dx = x.to(DEV)
    for got, want in [(dx.sum(), x.sum()), (dx.sum(0), x.sum(0)), (dx.t().sum(1), x.t().sum(1)),
                      (dx.sum(1, keepdim=True), x.sum(1, keepdim=True))]:
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        # the CPU's order of additions differs; both round one wide total
        assert torch.allclose(got.cpu().float(), want.float(), rtol=1e-2, atol=1e-2)
    assert dx.sum(dtype=torch.float32).dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_cpu_scalar_tensor_either_side(dtype):
    # torch.tensor(0.1) * x: the CPU converts the scalar to x's dtype first.
    x = rand(3, 4, dtype=dtype, seed=9)
    dx = x.to(DEV)
    s = torch.tensor(0.1)
    for got, want in [(s * dx, s * x), (dx * s, x * s), (s + dx, s + x), (s - dx, s - x), (dx - s, x - s)]:
        assert got.device == DEV and got.dtype == want.dtype == dtype
        assert torch.equal(got.cpu(), want)
    i = torch.tensor(3)
    assert torch.equal((i * dx).cpu(), i * x)
    with pytest.raises(RuntimeError):
        torch.tensor(1.0).add_(dx)  # a CPU tensor cannot take a device result in place


def test_listed_operators_run_on_device_kernels_not_the_cpu_fallback():
    """The values above would be the same through the CPU fallback; the fallback's counts tell that the
    MTIA kernels ran (and that an operator without one does fall back)."""
    a, b = rand(5, 7, seed=10), rand(7, 3, seed=11)
    ints = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    torch.mtia.synchronize()
    torch_mtia.reset_fallback_counts()
    da, db, di = a.to(DEV), b.to(DEV), ints.to(DEV)  # _copy_from host to device
    bias = torch.empty(3, device=DEV).fill_(0.5)     # empty.memory_format, fill_.Scalar
    results = [
        da + da, da - da, da * da, da + 2, da - 2, da * 2, torch.add(da, da, alpha=2),  # add/sub/mul
        di + di, di * 3,
        torch.relu(da), torch.relu(da.t()),                                              # relu
        da @ db, torch.mm(da, db), torch.addmm(bias, da, db, beta=0.5, alpha=2),         # mm, addmm
        da.sum(), da.sum(0), di.sum(1),                                                  # sum
        da.view(7, 5), da.reshape(35), da.t().reshape(35),                               # view, _reshape_alias, copy
        da.as_strided((2, 2), (1, 2), 3), torch.empty_strided((2, 3), (1, 2), device=DEV),
        da.clone(), da.to(torch.float64), da.to(DEV, copy=True),                         # device-to-device copies
    ]
    inplace = da.clone()
    inplace.add_(da).sub_(db.sum()).mul_(2).zero_()
    inplace.resize_(40).fill_(1)
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}, "operators that left the device"
    host = [r.cpu() for r in results]                                                # device to host
    assert torch.allclose(host[0], a + a) and torch.equal(host[7], ints + ints) and torch.equal(host[8], ints * 3)
    assert torch_mtia.fallback_counts() == {}
    torch.i0(da)  # no MTIA kernel: the fallback runs it, and counts it
    counts = torch_mtia.fallback_counts()
    assert [name for name in counts if name.startswith("aten::i0")] and all(n >= 1 for n in counts.values()), counts
    torch_mtia.reset_fallback_counts()
    assert torch_mtia.fallback_counts() == {}
