"""Random numbers on the device: the generator (torch.mtia.manual_seed, torch.Generator(device="mtia"),
get_rng_state/set_rng_state), reproducibility, distributions, dtype bounds and the CPU's argument
checks of uniform_, normal_ (and normal's tensor forms), bernoulli_/bernoulli, random_ (three forms),
exponential_, randperm and dropout (native_dropout forward and backward), none through the CPU
fallback; numbers that depend on the element's index only (not on strides or on how the launch is
split); and graph safety: a captured dropout draws fresh numbers on each replay and reproduces them
after re-seeding."""
import math
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import DEVICE_DTYPES, check_op, opinfos, same_layout_on_device  # noqa: E402
from torch.utils._pytree import tree_flatten, tree_map  # noqa: E402

DEV = torch.device("mtia", 0)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


@pytest.fixture(autouse=True)
def no_fallback():
    torch_mtia.reset_fallback_counts()
    yield
    assert torch_mtia.fallback_counts() == {}


def draw(fn, *shape, dtype=torch.float32, generator=None):
    t = torch.empty(*shape, dtype=dtype, device=DEV)
    fn(t, generator) if generator is not None else fn(t, None)
    return t.cpu()


OPS = {
    "uniform": lambda t, g: t.uniform_(-2, 3, generator=g),
    "normal": lambda t, g: t.normal_(1, 2, generator=g),
    "bernoulli": lambda t, g: t.bernoulli_(0.3, generator=g),
    "random": lambda t, g: t.random_(generator=g),
    "random_to": lambda t, g: t.random_(7, generator=g),
    "random_from_to": lambda t, g: t.random_(-3, 9, generator=g),
    "exponential": lambda t, g: t.exponential_(2.0, generator=g),
}
FLOAT_ONLY = {"uniform", "normal", "exponential"}


@pytest.mark.parametrize("op", sorted(OPS))
def test_same_seed_same_numbers(op):
    dtype = torch.float32 if op in FLOAT_ONLY or op == "bernoulli" else torch.int64
    torch.mtia.manual_seed(123)
    a = draw(OPS[op], 1000, dtype=dtype)
    b = draw(OPS[op], 1000, dtype=dtype)
    torch.mtia.manual_seed(123)
    assert torch.equal(a, draw(OPS[op], 1000, dtype=dtype))
    assert torch.equal(b, draw(OPS[op], 1000, dtype=dtype))
    assert not torch.equal(a, b)  # the offset moved on
    g = torch.Generator(device=DEV)
    g.manual_seed(123)
    assert torch.equal(a, draw(OPS[op], 1000, dtype=dtype, generator=g))
    g.manual_seed(124)
    assert not torch.equal(a, draw(OPS[op], 1000, dtype=dtype, generator=g))


def test_generator_objects_and_state():
    assert len(torch.mtia.default_generators) == torch.mtia.device_count()
    assert torch.mtia.default_generators[0].device == DEV
    torch.mtia.manual_seed(7)
    assert torch.mtia.initial_seed() == 7
    state = torch.mtia.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    a = torch.empty(100, device=DEV).uniform_().cpu()
    torch.mtia.set_rng_state(state)
    assert torch.equal(a, torch.empty(100, device=DEV).uniform_().cpu())
    # A generator's own state, and a user generator independent of the default one.
    g = torch.Generator(device=DEV).manual_seed(5)
    s = g.get_state()
    x = torch.empty(50, device=DEV).normal_(generator=g).cpu()
    torch.empty(50, device=DEV).normal_()  # the default generator does not disturb g
    g.set_state(s)
    assert torch.equal(x, torch.empty(50, device=DEV).normal_(generator=g).cpu())
    # torch.manual_seed seeds the device too.
    torch.manual_seed(9)
    y = torch.empty(10, device=DEV).uniform_().cpu()
    torch.mtia.manual_seed(9)
    assert torch.equal(y, torch.empty(10, device=DEV).uniform_().cpu())


def test_a_cpu_generator_is_refused():
    with pytest.raises(RuntimeError):
        torch.empty(4, device=DEV).uniform_(generator=torch.Generator())


def stats(x):
    x = x.double()
    return x.mean().item(), x.var().item()


def test_distributions():
    n = 1_000_000
    se = lambda var: 6 * math.sqrt(var / n)  # six standard errors of a mean
    torch.mtia.manual_seed(0)
    for dtype in FLOATS:
        m, v = stats(draw(lambda t, g: t.uniform_(), n, dtype=dtype))
        assert abs(m - 0.5) < se(1 / 12) + 1e-3 * (dtype in (torch.float16, torch.bfloat16)), dtype
        assert abs(v - 1 / 12) < 0.01 / 12 * 6, dtype
        x = draw(lambda t, g: t.uniform_(-2, 3), n, dtype=dtype)
        assert x.min() >= -2 and x.max() < 3, dtype
        m, v = stats(draw(lambda t, g: t.normal_(1, 2), n, dtype=dtype))
        assert abs(m - 1) < se(4) + 0.01 * (dtype == torch.bfloat16), dtype
        assert abs(v - 4) < 4 * 0.02, dtype
        m, v = stats(draw(lambda t, g: t.exponential_(2.0), n, dtype=dtype))
        assert abs(m - 0.5) < se(0.25) + 0.005 * (dtype == torch.bfloat16), dtype
        assert abs(v - 0.25) < 0.25 * 0.05, dtype
    for p in (0.0, 0.1, 0.5, 1.0):
        rate = draw(lambda t, g: t.bernoulli_(p), n).mean().item()
        assert abs(rate - p) < se(p * (1 - p)) + 1e-12
    pt = torch.linspace(0, 1, 11).repeat(100_000).to(DEV)
    b = torch.bernoulli(pt).cpu().view(100_000, 11).mean(0)
    assert torch.allclose(b, torch.linspace(0, 1, 11), atol=0.01)
    assert b[0] == 0 and b[-1] == 1


@pytest.mark.parametrize("dtype", (torch.bool,) + INTS + FLOATS)
def test_random_ranges_and_dtype_bounds(dtype):
    torch.mtia.manual_seed(1)
    n = 20000
    x = draw(lambda t, g: t.random_(), n, dtype=dtype)
    if dtype == torch.bool:
        hi = 1
    elif dtype.is_floating_point:
        hi = 2 ** {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24,
                   torch.float64: 53}[dtype] + 1
    else:
        hi = torch.iinfo(dtype).max
    assert x.double().min() >= 0 and x.double().max() <= hi
    if dtype != torch.bool:
        assert len(torch.unique(x)) > min(100, hi // 2)
    x = draw(lambda t, g: t.random_(5 if dtype != torch.bool else 2), n, dtype=dtype)
    top = 4 if dtype != torch.bool else 1
    assert set(torch.unique(x.long()).tolist()) == set(range(top + 1))
    if dtype not in (torch.bool, torch.uint8):
        x = draw(lambda t, g: t.random_(-3, 3), n, dtype=dtype)
        assert set(torch.unique(x.long()).tolist()) == set(range(-3, 3))
    if dtype == torch.int64:  # the whole int64 range
        x = draw(lambda t, g: t.random_(-2**63, None), n, dtype=dtype)
        assert (x < 0).any() and (x > 2**62).any()


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_randperm_is_a_permutation(dtype):
    torch.mtia.manual_seed(2)
    n = 200 if dtype not in (torch.int8, torch.uint8) else 100
    p = torch.randperm(n, dtype=dtype, device=DEV).cpu()
    assert p.dtype == dtype
    assert torch.equal(p.long().sort().values, torch.arange(n))
    assert not torch.equal(p.long(), torch.arange(n))
    out = torch.empty(3, dtype=dtype, device=DEV)
    torch.randperm(n, out=out)
    assert out.shape == (n,)
    g = torch.Generator(device=DEV).manual_seed(4)
    a = torch.randperm(1000, device=DEV, generator=g).cpu()
    g.manual_seed(4)
    assert torch.equal(a, torch.randperm(1000, device=DEV, generator=g).cpu())
    assert torch.randperm(0, device=DEV).numel() == 0


def test_numbers_depend_on_the_element_index_only():
    # Strided outputs get per logical element what a contiguous one gets.
    for op in ("uniform", "normal", "bernoulli", "random_from_to", "exponential"):
        dtype = torch.float32 if op != "random_from_to" else torch.int32
        torch.mtia.manual_seed(3)
        ref = draw(OPS[op], 40, 30, dtype=dtype)
        torch.mtia.manual_seed(3)
        t = torch.empty(30, 40, dtype=dtype, device=DEV).t()
        OPS[op](t, None)
        assert torch.equal(t.cpu(), ref), op
        base = torch.full((40, 70), -7, dtype=dtype, device=DEV)
        torch.mtia.manual_seed(3)
        OPS[op](base[:, 5:65:2], None)
        b = base.cpu()
        assert torch.equal(b[:, 5:65:2], ref), op
        mask = torch.ones(40, 70, dtype=torch.bool)
        mask[:, 5:65:2] = False
        assert (b[mask] == -7).all(), op  # nothing else written
    # A larger launch (spread over several blocks) starts with the numbers of a small one.
    for dtype in (torch.float16, torch.float32, torch.float64):
        torch.mtia.manual_seed(4)
        small = draw(lambda t, g: t.normal_(), 101, dtype=dtype)
        torch.mtia.manual_seed(4)
        big = draw(lambda t, g: t.normal_(), 300_001, dtype=dtype)
        assert torch.equal(big[:101], small)


def test_half_and_bfloat16_round_once_and_respect_bounds():
    torch.mtia.manual_seed(5)
    for dtype in (torch.float16, torch.bfloat16):
        x = draw(lambda t, g: t.uniform_(0, 1), 200_000, dtype=dtype)
        assert x.max() < 1 and x.min() >= 0
        torch.mtia.manual_seed(6)
        f = draw(lambda t, g: t.normal_(), 1000, dtype=torch.float32)
        torch.mtia.manual_seed(6)
        h = draw(lambda t, g: t.normal_(), 1000, dtype=dtype)
        assert torch.equal(h, f.to(dtype))  # drawn in float, rounded once


def cpu_error(fn, dtype=torch.float32, shape=(4,)):
    try:
        fn(torch.empty(shape, dtype=dtype))
    except Exception as e:
        return e
    return None


@pytest.mark.parametrize("fn,dtype", [
    (lambda t: t.uniform_(3, 2), torch.float32),
    (lambda t: t.uniform_(0, 1e300), torch.float32),
    (lambda t: t.uniform_(), torch.int64),
    (lambda t: t.normal_(0, -1), torch.float32),
    (lambda t: t.normal_(), torch.int32),
    (lambda t: t.bernoulli_(1.5), torch.float32),
    (lambda t: t.bernoulli_(-0.1), torch.uint8),
    (lambda t: t.random_(5, 3), torch.int64),
    (lambda t: t.random_(0, 300), torch.uint8),
    (lambda t: t.random_(-1, 3), torch.uint8),
    (lambda t: t.random_(0), torch.int32),
    (lambda t: t.exponential_(0), torch.float32),
    (lambda t: t.exponential_(-1), torch.float64),
    (lambda t: t.expand(3, 4).uniform_(), torch.float32),
])
def test_argument_checks_as_the_cpu(fn, dtype):
    shape = (1, 4) if dtype is torch.float32 else (4,)
    expected = cpu_error(fn, dtype, shape)
    assert expected is not None
    with pytest.raises(type(expected)) as got:
        fn(torch.empty(shape, dtype=dtype, device=DEV))
    msg = str(expected).split("\n")[0].replace("_cpu", "")
    assert msg.split("\"")[0][:40] in str(got.value).replace("_mtia", ""), (str(expected), str(got.value))


def test_randperm_checks():
    for n, dtype in ((-1, torch.int64), (300, torch.int8), (3000, torch.float16), (3, torch.bool)):
        with pytest.raises(RuntimeError) as cpu:
            torch.randperm(n, dtype=dtype)
        with pytest.raises(type(cpu.value)) as dev:
            torch.randperm(n, dtype=dtype, device=DEV)
        assert str(cpu.value).split("\n")[0].replace("_cpu", "") == \
            str(dev.value).split("\n")[0].replace("_mtia", "")


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_forward_backward(dtype):
    torch.mtia.manual_seed(8)
    x_cpu = torch.randn(64, 33).to(dtype)
    x = x_cpu.to(DEV).requires_grad_()
    p = 0.3
    y = F.dropout(x, p, training=True)
    assert y.grad_fn is not None and "NativeDropout" in type(y.grad_fn).__name__
    gy = torch.randn(64, 33).to(dtype)
    y.backward(gy.to(DEV))
    yc, gx = y.detach().cpu(), x.grad.cpu()
    keep = yc != 0
    scale = torch.tensor(1 / (1 - p), dtype=torch.float64 if dtype == torch.float64 else torch.float32)
    expected = (x_cpu.to(scale.dtype) * scale).to(dtype)
    assert torch.equal(yc[keep], expected[keep])
    assert torch.equal(gx, torch.where(keep, (gy.to(scale.dtype) * scale).to(dtype), torch.zeros((), dtype=dtype)))
    rate = keep.float().mean().item()
    assert abs(rate - (1 - p)) < 0.05
    # The same state gives the same mask; native_dropout's mask is a bool tensor.
    torch.mtia.manual_seed(8)
    out, mask = torch.native_dropout(x.detach(), p, True)
    assert mask.dtype == torch.bool and torch.equal(mask.cpu(), keep)
    # The mask is bernoulli_(1 - p) drawn from the same state.
    torch.mtia.manual_seed(8)
    b = torch.empty(64, 33, device=DEV).bernoulli_(1 - p).cpu().bool()
    assert torch.equal(b, keep)


def test_dropout_edge_cases():
    x = torch.randn(10, 10, device=DEV, requires_grad=True)
    assert torch.equal(F.dropout(x, 0.0, True).detach().cpu(), x.detach().cpu())
    assert torch.equal(F.dropout(x, 0.5, False).detach().cpu(), x.detach().cpu())
    y = F.dropout(x, 1.0, True)
    assert (y.detach().cpu() == 0).all()
    y.sum().backward()
    assert (x.grad.cpu() == 0).all()
    with pytest.raises(ValueError):
        F.dropout(x, 1.5, True)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        torch.dropout(x, -0.5, True)
    out, mask = torch.native_dropout(x.detach(), 0.5, False)
    assert mask.cpu().all() and torch.equal(out.cpu(), x.detach().cpu())
    assert torch.native_dropout(torch.empty(0, device=DEV), 0.5, True)[0].numel() == 0
    # In place.
    z = torch.ones(1000, device=DEV)
    F.dropout(z, 0.5, True, inplace=True)
    assert set(torch.unique(z.cpu()).tolist()) == {0.0, 2.0}
    # Eval mode through a module.
    m = torch.nn.Dropout(0.5).eval()
    assert torch.equal(m(x).detach().cpu(), x.detach().cpu())


def test_native_dropout_backward_matches_cpu():
    assert check_op("native_dropout_backward") > 0


# op_db samples of random operators: values are not comparable with the CPU's, so only the result's
# dtype and shape, the argument errors and the absence of fallbacks are compared.
@pytest.mark.parametrize("name,variant", [
    ("uniform", None), ("normal", ""), ("normal", "in_place"), ("normal", "number_mean"),
    ("bernoulli", None), ("exponential", None), ("nn.functional.dropout", None),
    ("rand_like", None), ("randn_like", None), ("randint_like", None),
])
def test_op_db_samples_shapes_dtypes_errors(name, variant):
    checked = 0
    for op in opinfos(name, variant):
        for dtype in sorted(op.supported_dtypes("cpu"), key=str):
            if dtype not in DEVICE_DTYPES:
                continue
            for i, s in enumerate(op.sample_inputs("cpu", dtype, requires_grad=False)):
                where = f"{name} {dtype} sample {i}"
                try:
                    expected = op.op(s.input, *s.args, **s.kwargs)
                except Exception:
                    expected = None
                dev_args = tree_map(same_layout_on_device, (s.input, *s.args))
                dev_kwargs = tree_map(same_layout_on_device, s.kwargs)
                torch_mtia.reset_fallback_counts()
                try:
                    got = op.op(*dev_args, **dev_kwargs)
                    torch.mtia.synchronize()
                except Exception as e:
                    assert expected is None, f"{where}: the device raised {e!r}"
                    continue
                assert torch_mtia.fallback_counts() == {}, where
                assert expected is not None, f"{where}: the CPU raised, the device not"
                on_device = "device" not in s.kwargs and any(
                    isinstance(t, torch.Tensor) for t in tree_flatten((dev_args, dev_kwargs))[0])
                for c, d in zip(tree_flatten(expected)[0], tree_flatten(got)[0]):
                    if isinstance(c, torch.Tensor):
                        assert d.device.type == ("mtia" if on_device else "cpu"), where
                        assert d.dtype == c.dtype and d.shape == c.shape, where
                        d.cpu()
                checked += 1
    assert checked > 0


def test_normal_tensor_forms():
    torch.mtia.manual_seed(11)
    mean = (torch.arange(6, dtype=torch.float32).view(2, 3) * 100).to(DEV)
    std = torch.tensor([1.0, 2.0, 0.0], device=DEV)
    a = torch.normal(mean, std).cpu()
    assert a.shape == (2, 3) and torch.equal(a[:, 2], mean.cpu()[:, 2])
    assert (a - mean.cpu()).abs().max() < 20
    b = torch.normal(5.0, std).cpu()
    assert b.shape == (3,) and b[2] == 5.0
    c = torch.normal(mean, 0.0).cpu()
    assert torch.equal(c, mean.cpu())
    out = torch.empty(0, device=DEV)
    torch.normal(mean, std, out=out)
    assert out.shape == (2, 3)
    f = torch.normal(2.0, 3.0, size=(1000,), device=DEV)
    assert f.device == DEV and abs(f.cpu().mean().item() - 2) < 0.6


def capture_dropout(x, p=0.5):
    side = torch.mtia.Stream(device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        F.dropout(x, p, True)  # warm-up
    torch.mtia.current_stream().wait_stream(side)
    graph = torch.mtia.MTIAGraph()
    with torch.mtia.graph(graph, stream=side):
        y = F.dropout(x, p, True)
        u = torch.empty(16, device=DEV).uniform_()
    return graph, y, u


def test_captured_dropout_draws_fresh_numbers_on_each_replay():
    x = torch.ones(4096, device=DEV)
    torch.mtia.manual_seed(21)
    graph, y, u = capture_dropout(x)
    masks, us = [], []
    for _ in range(3):
        graph.replay()
        masks.append(y.cpu())
        us.append(u.cpu())
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])
    assert not torch.equal(us[0], us[1])
    for m in masks:
        assert set(torch.unique(m).tolist()) == {0.0, 2.0}
    # Eager draws after the replays do not repeat the graph's.
    e = F.dropout(x, 0.5, True).cpu()
    assert all(not torch.equal(e, m) for m in masks)
    graph.reset()

    # Re-seeded and recaptured: the same sequence.
    torch.mtia.manual_seed(21)
    graph2, y2, u2 = capture_dropout(x)
    for m, uu in zip(masks, us):
        graph2.replay()
        assert torch.equal(y2.cpu(), m)
        assert torch.equal(u2.cpu(), uu)
    # Re-seeding before replays (no recapture) reproduces them too.
    torch.mtia.manual_seed(21)
    torch.mtia.synchronize()
    # The warm-up in capture_dropout drew 4096 numbers before the capture: skip them the same way.
    F.dropout(x, 0.5, True)
    for m in masks:
        graph2.replay()
        assert torch.equal(y2.cpu(), m)
    graph2.reset()


def test_a_replay_draws_what_eager_launches_draw_from_the_same_state():
    x = torch.randn(1000, device=DEV)
    torch.mtia.manual_seed(31)
    graph, y, u = capture_dropout(x, 0.25)
    state = torch.mtia.get_rng_state()
    graph.replay()
    replayed_y, replayed_u = y.cpu(), u.cpu()
    torch.mtia.set_rng_state(state)
    eager_y = F.dropout(x, 0.25, True).cpu()
    eager_u = torch.empty(16, device=DEV).uniform_().cpu()
    assert torch.equal(replayed_y, eager_y) and torch.equal(replayed_u, eager_u)
    graph.reset()


def test_captured_user_generator_and_randperm():
    g = torch.Generator(device=DEV).manual_seed(3)
    side = torch.mtia.Stream(device=DEV)
    graph = torch.mtia.MTIAGraph()
    with torch.mtia.graph(graph, stream=side):
        p = torch.randperm(50, device=DEV, generator=g)
        b = torch.empty(50, device=DEV).bernoulli_(0.5, generator=g)
    first = []
    for _ in range(2):
        graph.replay()
        first.append((p.cpu(), b.cpu()))
    assert not torch.equal(first[0][0], first[1][0])
    assert torch.equal(first[0][0].sort().values, torch.arange(50))
    g.manual_seed(3)
    for pp, bb in first:
        graph.replay()
        assert torch.equal(p.cpu(), pp) and torch.equal(b.cpu(), bb)
    graph.reset()
