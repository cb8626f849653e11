"""Convolution and pooling on the device (kernels/conv_kernels.cpp, kernels/pool_kernels.cpp,
csrc/ops_conv.cpp, csrc/ops_pool.cpp) equal the CPU's: PyTorch's OpInfo samples of conv1d, conv2d,
max_pool2d, avg_pool2d and adaptive_avg_pool2d; gradients of input, weight and bias (1-, 2- and 3-d,
stride, padding, dilation, groups, partial output masks) and of the pools; a CNN's forward and
backward without a CPU fallback in these operators; a conv + pool + linear forward captured in a
torch.mtia.graph and replayed."""
import copy
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import check_op  # noqa: E402

DEV = torch.device("mtia", 0)
OURS = {"aten::convolution_overrideable", "aten::convolution_backward_overrideable",
        "aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward",
        "aten::avg_pool2d", "aten::avg_pool2d_backward", "aten::_adaptive_avg_pool2d",
        "aten::_adaptive_avg_pool2d_backward", "aten::mm", "aten::addmm", "aten::bmm",
        "aten::convolution", "aten::_convolution"}


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def ours_fell_back():
    return set(torch_mtia.fallback_counts()) & OURS


@pytest.mark.parametrize("name", ["nn.functional.conv1d", "nn.functional.conv2d",
                                  "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool2d"])
def test_opinfo(name):
    assert check_op(name) > 0


def test_opinfo_max_pool2d():
    # 1,440 samples per dtype: all of them in float32, the first 150 in every other dtype.
    assert check_op("nn.functional.max_pool2d", dtypes={torch.float32}) > 0
    assert check_op("nn.functional.max_pool2d", max_samples=150) > 0


def grads_match(fn, tensors, need, tol=None):
    tol = tol or {}
    cpu = [t.detach().clone().requires_grad_(r) for t, r in zip(tensors, need)]
    dev = [t.detach().to(DEV).requires_grad_(r) for t, r in zip(tensors, need)]
    c_out, d_out = fn(*cpu), fn(*dev)
    torch.testing.assert_close(d_out.detach().cpu(), c_out.detach(), **tol)
    g = rand(*c_out.shape, seed=99)
    c_out.backward(g)
    d_out.backward(g.to(DEV))
    for c, d in zip(cpu, dev):
        if c.requires_grad:
            torch.testing.assert_close(d.grad.cpu(), c.grad, **tol)
        else:
            assert d.grad is None


CONV_CASES = [
    # (conv, input shape, weight shape, kwargs)
    (F.conv1d, (2, 4, 17), (6, 4, 3), dict(stride=2, padding=1)),
    (F.conv1d, (3, 6, 20), (6, 2, 5), dict(dilation=2, groups=3)),
    (F.conv2d, (2, 3, 9, 11), (8, 3, 3, 3), dict(padding=1)),
    (F.conv2d, (2, 4, 12, 10), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                                  groups=2)),
    (F.conv2d, (1, 8, 7, 7), (4, 8, 1, 1), {}),  # 1x1: the columns are the image itself
    (F.conv2d, (2, 3, 8, 8), (5, 3, 3, 3), dict(padding="same")),
    (F.conv3d, (2, 2, 5, 6, 7), (3, 2, 2, 3, 3), dict(stride=(1, 2, 1), padding=1)),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("mask", ["all", "no_input", "weight_only", "no_bias"])
def test_conv_gradients(case, mask):
    conv, xs, ws, kwargs = CONV_CASES[case]
    x, w, b = rand(*xs, seed=1), rand(*ws, seed=2), rand(ws[0], seed=3)
    need = {"all": (True, True, True), "no_input": (False, True, True),
            "weight_only": (False, True, False), "no_bias": (True, True, None)}[mask]
    torch_mtia.reset_fallback_counts()
    if need[2] is None:
        grads_match(lambda x, w: conv(x, w, None, **kwargs), (x, w), need[:2])
    else:
        grads_match(lambda x, w, b: conv(x, w, b, **kwargs), (x, w, b), need)
    assert not ours_fell_back(), torch_mtia.fallback_counts()


def test_conv_float64_gradcheck_and_reduced_precision():
    x = rand(1, 2, 5, 5, dtype=torch.float64, seed=4).to(DEV).requires_grad_()
    w = rand(3, 2, 3, 3, dtype=torch.float64, seed=5).to(DEV).requires_grad_()
    b = rand(3, dtype=torch.float64, seed=6).to(DEV).requires_grad_()
    assert torch.autograd.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
                                    (x, w, b))
    for dtype in (torch.bfloat16, torch.float16):
        x, w, b = rand(2, 3, 8, 8, dtype=dtype), rand(4, 3, 3, 3, dtype=dtype), rand(4, dtype=dtype)
        torch.testing.assert_close(F.conv2d(x.to(DEV), w.to(DEV), b.to(DEV), padding=1).cpu(),
                                   F.conv2d(x, w, b, padding=1))


@pytest.mark.parametrize("name", ["nn.functional.conv_transpose1d",
                                  "nn.functional.conv_transpose2d",
                                  "nn.functional.conv_transpose3d"])
def test_opinfo_transposed(name):
    assert check_op(name) > 0


TRANSPOSED_CASES = [
    (F.conv_transpose1d, (2, 4, 7), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (F.conv_transpose2d, (2, 4, 5, 6), (4, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0),
                                                          dilation=(1, 2), groups=2)),
    (F.conv_transpose2d, (1, 3, 4, 4), (3, 5, 1, 1), {}),
    (F.conv_transpose3d, (1, 2, 3, 4, 3), (2, 3, 2, 2, 2), dict(stride=2, output_padding=1)),
]


@pytest.mark.parametrize("case", range(len(TRANSPOSED_CASES)))
def test_transposed_conv_gradients(case):
    conv, xs, ws, kwargs = TRANSPOSED_CASES[case]
    channels = ws[1] * kwargs.get("groups", 1)
    x, w, b = rand(*xs, seed=10), rand(*ws, seed=11), rand(channels, seed=12)
    torch_mtia.reset_fallback_counts()
    grads_match(lambda x, w, b: conv(x, w, b, **kwargs), (x, w, b), (True, True, True))
    grads_match(lambda x, w: conv(x, w, None, **kwargs), (x, w), (False, True))
    assert not ours_fell_back(), torch_mtia.fallback_counts()


POOLS = [
    lambda x: F.max_pool2d(x, 2),
    lambda x: F.max_pool2d(x, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2), ceil_mode=True),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    lambda x: F.avg_pool2d(x, (2, 3), divisor_override=5),
    lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
    lambda x: F.adaptive_avg_pool2d(x[0], 5),  # unbatched
]


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pool_gradients(case):
    x = rand(2, 3, 11, 9, seed=7)
    torch_mtia.reset_fallback_counts()
    grads_match(POOLS[case], (x,), (True,))
    # channels-last input: read through a contiguous copy, same values
    xc = x.to(memory_format=torch.channels_last)
    torch.testing.assert_close(POOLS[case](xc.to(DEV)).cpu(), POOLS[case](xc))
    assert not ours_fell_back(), torch_mtia.fallback_counts()


def test_max_pool_nan_and_indices_and_out():
    x = rand(1, 2, 6, 6, seed=8)
    x[0, 0, 1, 1] = float("nan")
    out, idx = F.max_pool2d(x.to(DEV), 3, return_indices=True)
    c_out, c_idx = F.max_pool2d(x, 3, return_indices=True)
    torch.testing.assert_close(out.cpu(), c_out, equal_nan=True)
    assert torch.equal(idx.cpu(), c_idx)
    o, i = torch.empty(0, device=DEV), torch.empty(0, dtype=torch.long, device=DEV)
    torch.ops.aten.max_pool2d_with_indices.out(x.to(DEV), [3], [3], [0], [1], False, out=o,
                                               indices=i)
    torch.testing.assert_close(o.cpu(), c_out, equal_nan=True)
    assert torch.equal(i.cpu(), c_idx)


def test_pool_refuses_as_cpu():
    x = torch.ones(1, 1, 4, 4, device=DEV)
    with pytest.raises(RuntimeError, match="pad should be"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool2d(x, 5)
    with pytest.raises(RuntimeError, match="3D or 4D"):
        F.max_pool2d(torch.ones(4, 4, device=DEV), 2)


def cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, padding=1, groups=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d((1, 1)), torch.nn.Flatten(), torch.nn.Linear(8, 5))


def test_cnn_forward_backward_without_fallback_in_these_operators():
    # BatchNorm2d and AdaptiveAvgPool2d((1, 1)) (which PyTorch computes as mean over H and W) are
    # other families' operators: only this family's are checked here.
    model = cnn()
    dev_model = copy.deepcopy(model).to(DEV)
    x = rand(4, 3, 16, 16, seed=9)
    torch_mtia.reset_fallback_counts()
    out = dev_model(x.to(DEV))
    out.square().sum().backward()
    assert not ours_fell_back(), torch_mtia.fallback_counts()
    ref = model(x)
    ref.square().sum().backward()
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), atol=1e-5, rtol=1e-4)
    for (name, p), q in zip(model.named_parameters(), dev_model.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_conv_pool_linear_forward_in_a_graph():
    torch.manual_seed(1)
    conv, lin = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Linear(4 * 4 * 4, 6)

    def forward(x, conv, lin):
        y = F.max_pool2d(torch.relu(conv(x)), 2)
        y = F.avg_pool2d(y, 2, stride=1, padding=1, count_include_pad=False)
        y = F.adaptive_avg_pool2d(y, (4, 4))
        return lin(y.flatten(1))

    dconv, dlin = copy.deepcopy(conv).to(DEV), copy.deepcopy(lin).to(DEV)
    static_x = torch.zeros(2, 3, 8, 8, device=DEV)
    side = torch.mtia.Stream(device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.no_grad():
        with torch.mtia.stream(side):
            forward(static_x, dconv, dlin)  # warm-up
        torch.mtia.current_stream().wait_stream(side)
        graph = torch.mtia.MTIAGraph()
        torch_mtia.reset_fallback_counts()
        with torch.mtia.graph(graph, stream=side):
            static_y = forward(static_x, dconv, dlin)
        assert not torch_mtia.fallback_counts()
        for i in range(3):
            x = rand(2, 3, 8, 8, seed=20 + i)
            static_x.copy_(x)
            graph.replay()
            torch.testing.assert_close(static_y.cpu(), forward(x, conv, lin), msg=f"replay {i}")
    graph.reset()
