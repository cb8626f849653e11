"""The pointwise operators on the device against the CPU: PyTorch's own op_db samples (functional,
in-place), out= resizing and casting rules, the layout of new outputs for inputs of every memory order,
the CPU's float-to-integer conversions, and a capture of an optimizer-like chain of pointwise ops."""
import os
import sys
import warnings

import pytest
import torch

import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import check_grad, check_op  # noqa: E402

DEV = torch.device("mtia", 0)

UNARY = """abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh
tanh asinh acosh atanh erf erfc sigmoid floor ceil round trunc frac sign sgn reciprocal bitwise_not
logical_not isnan isinf isfinite isposinf isneginf signbit nan_to_num square positive""".split()
ACTIVATIONS = """nn.functional.relu nn.functional.silu nn.functional.gelu nn.functional.softplus
nn.functional.leaky_relu nn.functional.elu nn.functional.hardtanh nn.functional.threshold
nn.functional.hardsigmoid nn.functional.hardswish nn.functional.relu6""".split()
BINARY = """add sub mul div true_divide floor_divide remainder fmod pow maximum minimum fmax fmin atan2
hypot copysign xlogy eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or
bitwise_xor bitwise_left_shift bitwise_right_shift""".split()
TERNARY = "lerp where addcmul addcdiv clamp clamp_min clamp_max masked_fill fill".split()


@pytest.mark.parametrize("name", UNARY + ACTIVATIONS + BINARY + TERNARY)
def test_opinfo_samples_match_the_cpu(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert check_op(name) > 0


@pytest.mark.parametrize("name", UNARY + ACTIVATIONS + BINARY + TERNARY)
def test_gradients_match_the_cpu(name):
    """Float32 gradients of every sample, forward and backward on the device."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_grad(name)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "sin", "exp", "clamp", "masked_fill",
                                  "nn.functional.relu", "addcmul", "addcdiv", "lerp", "pow", "eq"])
def test_inplace_forms_match_the_cpu(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(name, inplace=True)


def layouts(shape=(4, 6, 5, 3)):
    base = torch.randn(*shape)
    yield "contiguous", base
    yield "transposed", base.transpose(0, 3)
    yield "permuted", base.permute(2, 0, 3, 1)
    yield "channels_last", base.contiguous(memory_format=torch.channels_last)
    yield "sliced", base[:, ::2, 1:, :]
    yield "expanded", torch.randn(1, 6, 1, 3).expand(*shape)


def on_device(t):
    """t on the device with the same sizes, strides and storage offset."""
    from opinfo_harness import same_layout_on_device
    return same_layout_on_device(t)


@pytest.mark.parametrize("layout,x", list(layouts()), ids=lambda v: v if isinstance(v, str) else "")
def test_new_outputs_take_the_cpu_layout(layout, x):
    y = torch.randn(x.shape[-1])
    mask = x > 0
    cases = [
        (torch.relu, (x,)), (torch.sin, (x,)), (lambda a: a * 2, (x,)), (torch.add, (x, y)),
        (torch.where, (mask, x, y)), (torch.floor_divide, (x, y)),
        (lambda a, m: a.masked_fill(m, 1.0), (x, mask)), (torch.nn.functional.hardtanh, (x,)),
        (lambda a: a.to(torch.float64), (x,)), (torch.clone, (x,)),
    ]
    for fn, args in cases:
        expected = fn(*args)
        got = fn(*[on_device(a) for a in args])
        assert got.stride() == expected.stride(), (layout, fn, got.stride(), expected.stride())
        torch.testing.assert_close(got.cpu(), expected)


def test_relu_keeps_a_transposed_layout():
    x = torch.randn(1024, 1024).t()
    got = torch.relu(on_device(x))
    assert got.stride() == (1, 1024) and torch.equal(got.cpu(), torch.relu(x))


def test_out_forms_resize_cast_and_refuse_as_the_cpu():
    a, b = torch.randn(3, 4), torch.randn(4)
    out = torch.empty(0, device=DEV)
    torch.add(on_device(a), on_device(b), out=out)
    assert out.shape == (3, 4) and torch.equal(out.cpu(), a + b)
    wrong = torch.empty(2, 2, device=DEV)
    with pytest.warns(UserWarning, match="resized"):
        torch.mul(on_device(a), 2, out=wrong)
    assert torch.equal(wrong.cpu(), a * 2)
    ints = torch.empty(3, 4, dtype=torch.int64, device=DEV)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.add(on_device(a), 1, out=ints)
    wide = torch.empty(3, 4, dtype=torch.float64, device=DEV)
    torch.sub(on_device(a), on_device(b), out=wide)
    assert torch.equal(wide.cpu(), (a - b).double())
    flags = torch.empty(3, 4, dtype=torch.float32, device=DEV)
    torch.lt(on_device(a), 0, out=flags)
    assert torch.equal(flags.cpu(), (a < 0).float())
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        on_device(b).add_(on_device(a))
    overlapping = torch.zeros(1, device=DEV).expand(4)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        overlapping.add_(1)
    with pytest.raises(RuntimeError, match="same device"):
        on_device(a) + torch.ones(3, 4)


def test_float_to_integer_conversions_match_the_cpu():
    v = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e9, -3e9, 1e20, 300.7, -300.7,
                      -1.5, 255.9, 256.0, -129.0, 1e5, -40000.0])
    for src in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        x = v.to(src)
        for dst in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool):
            assert torch.equal(x.to(DEV).to(dst).cpu(), x.to(dst)), (src, dst)
            assert torch.equal(x.to(DEV)[::2].to(dst).cpu(), x[::2].to(dst)), (src, dst)


def test_half_and_bfloat16_round_as_the_cpu():
    for dtype in (torch.float16, torch.bfloat16):
        a = torch.randn(257).to(dtype) * 10
        b = torch.randn(257).to(dtype) * 10
        da, db = a.to(DEV), b.to(DEV)
        assert torch.equal(torch.add(da, db, alpha=0.1).cpu(), torch.add(a, b, alpha=0.1))
        assert torch.equal(torch.sub(da, db, alpha=-3.125).cpu(), torch.sub(a, b, alpha=-3.125))
        assert torch.equal((da * 0.1).cpu(), a * 0.1)
        assert torch.equal((da / 3).cpu(), a / 3)
        assert torch.equal(torch.addcmul(da, da, db, value=3.14).cpu(),
                           torch.addcmul(a, a, b, value=3.14))


def test_half_and_bfloat16_add_and_division_round_as_the_cpu_at_every_length():
    # The CPU's add with alpha rounds differently inside its vector loop (two vectors at a time, then
    # one more) and in its scalar tail; floor division between 16-bit tensors rounds every step;
    # a one-value divisor is read once in float and the quotient rounded once.
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float16, torch.bfloat16):
        for n in (31, 33, 49, 63, 65, 97, 121, 169):
            a = (torch.randn(n, generator=g) * 10).to(dtype)
            b = (torch.randn(n, generator=g) * 0.01).to(dtype)
            da, db = a.to(DEV), b.to(DEV)
            assert torch.equal(torch.add(da, db, alpha=3.14).cpu(), torch.add(a, b, alpha=3.14))
            for mode in ("trunc", "floor"):
                for divisor, dev_divisor in ((b, db), (b[:1], db[:1]), (0.0123, 0.0123)):
                    expected = torch.div(a, divisor, rounding_mode=mode)
                    got = torch.div(da, dev_divisor, rounding_mode=mode).cpu()
                    assert torch.equal(got, expected), (dtype, n, mode, divisor)
            assert torch.equal(torch.floor_divide(da, db).cpu(), torch.floor_divide(a, b))
    # Each step of the half floor division rounded (between tensors of more than one element):
    # float steps would give -1924.
    a = torch.tensor([8.84375, 1.0], dtype=torch.float16)
    b = torch.tensor([-0.0045967102, 1.0], dtype=torch.float16)
    assert torch.floor_divide(a, b)[0].item() == -1923.0
    assert torch.floor_divide(a.to(DEV), b.to(DEV))[0].item() == -1923.0


def test_pointwise_ops_run_without_the_fallback_and_replay_in_a_graph():
    """An AdamW-like update of pointwise ops only, captured and replayed with new gradients."""
    torch.manual_seed(0)
    p = torch.randn(64, 32)
    grads = [torch.randn(64, 32) for _ in range(3)]

    def step(param, grad, m, v):
        m.mul_(0.9).add_(grad, alpha=0.1)
        v.mul_(0.999).addcmul_(grad, grad, value=0.001)
        denom = (v / 0.5).sqrt_().add_(1e-8)
        param.mul_(1 - 1e-3 * 0.01).addcdiv_(m, denom, value=-1e-3)

    cpu = [p.clone(), torch.zeros_like(p), torch.zeros_like(p)]
    dev = [t.to(DEV) for t in cpu]
    static_grad = torch.zeros(64, 32, device=DEV)
    side = torch.mtia.Stream()
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        static_grad.copy_(grads[0].to(DEV))
        step(*[dev[0], static_grad, dev[1], dev[2]])  # warm-up on the side stream
    torch.mtia.current_stream().wait_stream(side)
    step(cpu[0], grads[0], cpu[1], cpu[2])
    torch_mtia.reset_fallback_counts()
    graph = torch.mtia.MTIAGraph()
    with torch.mtia.graph(graph):
        step(dev[0], static_grad, dev[1], dev[2])
    for g in grads[1:]:
        static_grad.copy_(g.to(DEV))
        graph.replay()
        step(cpu[0], g, cpu[1], cpu[2])
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}
    for c, d in zip(cpu, dev):
        torch.testing.assert_close(d.cpu(), c)


def test_pow_with_a_zero_exponent_fills_ones_and_resizes_out():
    x = torch.tensor([float("nan"), 2.0, -3.0])
    got = torch.pow(on_device(x), 0)
    assert torch.equal(got.cpu(), torch.ones(3))
    out = torch.empty(0, device=DEV)
    torch.pow(on_device(x), 0, out=out)
    assert out.shape == (3,) and torch.equal(out.cpu(), torch.ones(3))
