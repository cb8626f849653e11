"""Layer norm, batch norm and the negative log likelihood loss on the device
(kernels/norm_kernels.cpp, kernels/loss_kernels.cpp): op_db samples against the CPU, gradients,
running statistics, channels-last inputs, no CPU fallback, and a capture + replay of a LayerNorm ->
softmax -> cross_entropy step in torch.mtia.graph."""
import os
import sys

import pytest
import torch
import torch.nn.functional as F
import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import check_op  # noqa: E402

DEV = torch.device("mtia", 0)
FLOATS = (torch.float32, torch.float64)

# op_db entries whose samples stay within these kernels. half and bfloat16 are left out where the
# CPU's own reduced-precision arithmetic (not a float accumulation) decides the last bits: a
# one-element layer norm (the CPU's 0.001 for an exact 0) and nll_loss's reduced sums; the device's
# results are the more accurate ones there.
OPINFOS = [
    ("native_layer_norm", None, FLOATS), ("nn.functional.layer_norm", None, None),
    ("native_batch_norm", None, None), ("_native_batch_norm_legit", None, None),
    ("_batch_norm_with_update", None, None), ("nn.functional.batch_norm", "", None),
    ("nn.functional.nll_loss", None, FLOATS),
]


@pytest.mark.parametrize("name,variant,dtypes", OPINFOS, ids=[n for n, _, _ in OPINFOS])
def test_opinfo(name, variant, dtypes):
    assert check_op(name, variant, dtypes=dtypes) > 0


def run_no_fallback(fn):
    torch_mtia.reset_fallback_counts()
    r = fn()
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}
    return r


def grads_on(fn, *cpu_inputs):
    """fn's value and input gradients on the CPU and on the device (float32)."""
    dev_inputs = [t.detach().to(DEV).requires_grad_(t.requires_grad) for t in cpu_inputs]
    out = fn(*cpu_inputs)
    ge = torch.autograd.grad(out, [t for t in cpu_inputs if t.requires_grad])

    def device():
        o = fn(*dev_inputs)
        return o, torch.autograd.grad(o, [t for t in dev_inputs if t.requires_grad])

    od, gd = run_no_fallback(device)
    torch.testing.assert_close(od.cpu(), out)
    for a, b in zip(gd, ge):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)


def test_layer_norm_grads():
    x = torch.randn(4, 6, 8, requires_grad=True)
    w = torch.randn(6, 8, requires_grad=True)
    b = torch.randn(6, 8, requires_grad=True)
    gy = torch.randn(4, 6, 8)

    def weighted(y):
        return (y * gy.to(y.device)).sum()

    grads_on(lambda x, w, b: weighted(F.layer_norm(x, (6, 8), w, b)), x, w, b)
    grads_on(lambda x: weighted(F.layer_norm(x, (8,))), x)
    # a non-contiguous input
    grads_on(lambda x, w: weighted(F.layer_norm(x.transpose(0, 1), (8,), w[0]).transpose(0, 1)),
             x, w)


def test_layer_norm_gradcheck_float64():
    x = torch.randn(3, 5, dtype=torch.float64, device=DEV, requires_grad=True)
    w = torch.randn(5, dtype=torch.float64, device=DEV, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, device=DEV, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: F.layer_norm(x, (5,), w, b), (x, w, b))


def test_layer_norm_stat_dtypes():
    x = torch.randn(2, 3, 4, dtype=torch.bfloat16)
    w = torch.randn(4)
    for weight in (w, w.bfloat16()):
        exp = torch.ops.aten.native_layer_norm(x, [4], weight, None, 1e-5)
        got = run_no_fallback(lambda: torch.ops.aten.native_layer_norm(
            x.to(DEV), [4], weight.to(DEV), None, 1e-5))
        for e, g in zip(exp, got):
            assert e.dtype == g.dtype and e.shape == g.shape
            torch.testing.assert_close(g.cpu(), e)


@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_module_train_and_eval(channels_last):
    torch.manual_seed(0)
    cpu = torch.nn.BatchNorm2d(3, momentum=0.3)
    dev = torch.nn.BatchNorm2d(3, momentum=0.3).to(DEV)
    x = torch.randn(4, 3, 5, 6) * 2 + 1
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    xd = x.to(DEV)
    if channels_last:
        xd = xd.contiguous(memory_format=torch.channels_last)
    x.requires_grad_()
    xd.requires_grad_()
    for step in range(2):
        y = cpu(x)
        yd = run_no_fallback(lambda: dev(xd))
        torch.testing.assert_close(yd.cpu(), y, rtol=1e-4, atol=1e-5)
        if channels_last:
            assert yd.is_contiguous(memory_format=torch.channels_last)
        gy = torch.randn_like(y)
        (gx, gw, gb) = torch.autograd.grad(y, (x, cpu.weight, cpu.bias), gy)
        (gxd, gwd, gbd) = run_no_fallback(
            lambda: torch.autograd.grad(yd, (xd, dev.weight, dev.bias), gy.to(DEV)))
        for a, b in ((gxd, gx), (gwd, gw), (gbd, gb)):
            torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(dev.running_mean.cpu(), cpu.running_mean)
    torch.testing.assert_close(dev.running_var.cpu(), cpu.running_var)
    assert dev.num_batches_tracked.item() == 2
    cpu.eval()
    dev.eval()
    y = cpu(x)
    yd = run_no_fallback(lambda: dev(xd))
    torch.testing.assert_close(yd.cpu(), y, rtol=1e-4, atol=1e-5)
    (gx,) = torch.autograd.grad(y.sum(), x)
    (gxd,) = run_no_fallback(lambda: torch.autograd.grad(yd.sum(), xd))
    torch.testing.assert_close(gxd.cpu(), gx, rtol=1e-4, atol=1e-5)


def test_batch_norm_entry_points():
    # What F.batch_norm reaches for MTIA in PyTorch 2.13: native_batch_norm (through
    # _batch_norm_impl_index) forward and native_batch_norm_backward backward.
    x = torch.randn(5, 3, 4, device=DEV, requires_grad=True)
    rm, rv = torch.zeros(3, device=DEV), torch.ones(3, device=DEV)
    with torch.autograd.profiler.profile() as prof:
        y = F.batch_norm(x, rm, rv, training=True)
        y.sum().backward()
    names = {e.name for e in prof.function_events}
    assert "aten::native_batch_norm" in names
    assert "aten::native_batch_norm_backward" in names


def test_nll_loss_grads_and_options():
    torch.manual_seed(0)
    x = torch.randn(6, 5, requires_grad=True)
    t = torch.tensor([0, 4, 2, -100, 1, 4])
    w = torch.rand(5)
    for reduction in ("mean", "sum", "none"):
        for weight in (None, w):
            def f(x, reduction=reduction, weight=weight):
                wt = None if weight is None else weight.to(x.device)
                out = F.nll_loss(torch.log_softmax(x, 1), t.to(x.device), weight=wt,
                                 ignore_index=-100, reduction=reduction)
                return out.sum() if reduction == "none" else out
            grads_on(f, x)


def test_nll_loss2d_and_total_weight():
    x = torch.randn(2, 4, 3, 3).log_softmax(1)
    t = torch.randint(0, 4, (2, 3, 3))
    w = torch.rand(4)
    for red in (0, 1, 2):
        exp = torch.ops.aten.nll_loss2d_forward(x, t, w, red, 1)
        got = run_no_fallback(lambda: torch.ops.aten.nll_loss2d_forward(
            x.to(DEV), t.to(DEV), w.to(DEV), red, 1))
        for e, g in zip(exp, got):
            assert e.shape == g.shape
            torch.testing.assert_close(g.cpu(), e)
        go = torch.rand(exp[0].shape)
        ge = torch.ops.aten.nll_loss2d_backward(go, x, t, w, red, 1, exp[1])
        gg = run_no_fallback(lambda: torch.ops.aten.nll_loss2d_backward(
            go.to(DEV), x.to(DEV), t.to(DEV), w.to(DEV), red, 1, got[1]))
        torch.testing.assert_close(gg.cpu(), ge)


def test_nll_loss_gradcheck_float64():
    x = torch.randn(4, 3, dtype=torch.float64, device=DEV, requires_grad=True)
    t = torch.tensor([0, 2, 1, 2], device=DEV)
    w = torch.rand(3, dtype=torch.float64, device=DEV)
    assert torch.autograd.gradcheck(lambda x: F.nll_loss(x, t, weight=w), (x,))


def test_nll_loss_checks():
    x = torch.randn(3, 4, device=DEV)
    with pytest.raises(RuntimeError, match="Expected input batch_size"):
        torch.ops.aten.nll_loss_forward(x, torch.tensor([0, 1], device=DEV), None, 1, -100)
    with pytest.raises(RuntimeError, match="weight tensor should be defined"):
        torch.ops.aten.nll_loss_forward(x, torch.tensor([0, 1, 2], device=DEV),
                                        torch.ones(3, device=DEV), 1, -100)
    with pytest.raises(RuntimeError, match="expected target dtype"):
        torch.ops.aten.nll_loss_forward(x, torch.tensor([0, 1, 2], dtype=torch.int32, device=DEV),
                                        None, 1, -100)
    # An operand left on the CPU is refused on the host (the kernel would fault the device).
    t = torch.tensor([0, 1, 2], device=DEV)
    with pytest.raises(RuntimeError, match="same device"):
        torch.ops.aten.nll_loss_backward(torch.tensor(1.0, device=DEV), x, t, None, 1, -100,
                                         torch.tensor(3.0))
    g = torch.ops.aten.nll_loss_backward(torch.tensor(1.0, device=DEV), x, t, None, 1, -100,
                                         torch.tensor(3.0, device=DEV))
    assert g.device == DEV


def test_cross_entropy_on_device():
    x = torch.randn(8, 10, requires_grad=True)
    t = torch.randint(0, 10, (8,))
    grads_on(lambda x: F.cross_entropy(x, t.to(x.device)), x)
    x4 = torch.randn(2, 3, 4, 4, requires_grad=True)
    t4 = torch.randint(0, 3, (2, 4, 4))
    grads_on(lambda x: F.cross_entropy(x, t4.to(x.device), reduction="sum"), x4)


def test_graph_capture_layer_norm_softmax_cross_entropy():
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(16).to(DEV)
    x = torch.randn(8, 16, device=DEV, requires_grad=True)
    t = torch.randint(0, 16, (8,), device=DEV)

    def step():
        h = ln(x)
        p = torch.softmax(h, 1)
        loss = F.cross_entropy(h * p, t)
        gx, gw, gb = torch.autograd.grad(loss, (x, ln.weight, ln.bias))
        return loss, gx, gw, gb

    s = torch.mtia.Stream()
    s.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(s):
        for _ in range(2):  # warm-up, as CUDA-graph users do
            step()
    torch.mtia.current_stream().wait_stream(s)
    torch.mtia.synchronize()
    g = torch.mtia.MTIAGraph()
    torch_mtia.reset_fallback_counts()
    with torch.mtia.graph(g):
        outs = step()
    assert torch_mtia.fallback_counts() == {}
    new_x = torch.randn(8, 16)
    with torch.no_grad():
        x.copy_(new_x.to(DEV))
    g.replay()
    torch.mtia.synchronize()
    xc = new_x.clone().requires_grad_()
    lnc = torch.nn.LayerNorm(16)
    lnc.load_state_dict({k: v.cpu() for k, v in ln.state_dict().items()})
    h = lnc(xc)
    loss = F.cross_entropy(h * torch.softmax(h, 1), t.cpu())
    exp = (loss, *torch.autograd.grad(loss, (xc, lnc.weight, lnc.bias)))
    for a, b in zip(outs, exp):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)
