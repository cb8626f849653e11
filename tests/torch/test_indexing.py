"""Indexing on the device equals the CPU's, with no CPU fallback: PyTorch's own op_db samples
(opinfo_harness.check_op) for embedding, index_select, gather, scatter, scatter_add, index_add,
index_put, take_along_dim, masked_select, nonzero and __getitem__ (advanced indexing); gradients
against the CPU; an index out of range raises (the kernel faults the launch, which surfaces as a
RuntimeError at the next synchronising call, as CUDA's device-side asserts do: the device's fault
is sticky, so that test runs in a child process); embedding, its backward, cat, tril and
index_select captured in a torch.mtia graph and replayed."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_mtia

sys.path.insert(0, os.path.dirname(__file__))
from opinfo_harness import check_op  # noqa: E402

DEV = torch.device("mtia", 0)


@pytest.mark.parametrize("name", ["nn.functional.embedding", "index_select", "gather", "scatter",
                                  "scatter_add", "index_add", "index_put", "masked_select",
                                  "masked_scatter",
                                  "nonzero", "__getitem__"])
def test_opinfo_samples(name):
    assert check_op(name) > 0


def test_take_along_dim():
    # take_along_dim wraps negative indices with remainder (a pointwise operator, not this file's):
    # the gather it ends in is compared directly.
    x = torch.randn(4, 5)
    idx = torch.tensor([[0, 4, 2], [1, 1, 3], [4, 0, 0], [2, 3, 1]])
    assert torch.equal(torch.take_along_dim(x.to(DEV), idx.to(DEV), 1).cpu(),
                       torch.take_along_dim(x, idx, 1))


def test_embedding_functional_forms():
    w = torch.randn(10, 3)
    i = torch.tensor([[1, 2, 4], [4, 3, 9]])
    torch_mtia.reset_fallback_counts()
    for kwargs in ({}, {"padding_idx": 0}, {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0}):
        cw, dw = w.clone(), w.clone().to(DEV)
        assert torch.allclose(torch.nn.functional.embedding(i.to(DEV), dw, **kwargs).cpu(),
                              torch.nn.functional.embedding(i, cw, **kwargs), atol=1e-6)
        assert torch.allclose(dw.cpu(), cw, atol=1e-6)  # max_norm renormalises in place
    assert not torch_mtia.fallback_counts()


def grads(fn, *cpu_inputs):
    """fn's gradients on the CPU and on the device for the same float inputs (those requiring it)."""
    cpu_inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in cpu_inputs]
    dev_inputs = [t.detach().to(DEV).requires_grad_(t.requires_grad) for t in cpu_inputs]
    torch_mtia.reset_fallback_counts()
    out_d = fn(*dev_inputs)
    out_d.backward(torch.ones_like(out_d))
    fallbacks = torch_mtia.fallback_counts()
    out_c = fn(*cpu_inputs)
    out_c.backward(torch.ones_like(out_c))
    assert not fallbacks, fallbacks
    assert torch.allclose(out_d.detach().cpu(), out_c.detach(), atol=1e-5)
    for c, d in zip(cpu_inputs, dev_inputs):
        if c.requires_grad:
            assert torch.allclose(d.grad.cpu(), c.grad, atol=1e-5)


@pytest.mark.parametrize("padding_idx, scale", [(None, False), (2, False), (None, True), (1, True)])
def test_embedding_backward(padding_idx, scale):
    w = torch.randn(6, 4, requires_grad=True)
    i = torch.tensor([[1, 2, 1], [5, 2, 1]])
    weights = torch.randn(2, 3, 4)
    grads(lambda w: (torch.nn.functional.embedding(i.to(w.device), w, padding_idx=padding_idx,
                                                   scale_grad_by_freq=scale)
                     * weights.to(w.device)), w)


def test_index_select_gather_scatter_add_backward():
    x = torch.randn(5, 4, requires_grad=True)
    idx = torch.tensor([3, 0, 3, 1])
    grads(lambda x: x.index_select(0, idx.to(x.device)) * 2, x)
    gidx = torch.tensor([[0, 1, 0, 3], [4, 4, 2, 0]])
    grads(lambda x: x.gather(0, gidx.to(x.device)), x)
    src = torch.randn(2, 4, requires_grad=True)
    grads(lambda x, s: x.scatter_add(0, gidx.to(x.device), s), x, src)


def test_masked_select_backward():
    x = torch.randn(4, 5, requires_grad=True)
    mask = torch.randn(4, 5) > 0
    grads(lambda x: x.masked_select(mask.to(x.device)) * 3, x)


def test_advanced_indexing_backward():
    x = torch.randn(4, 5, 3, requires_grad=True)
    i, j = torch.tensor([0, 2, 2]), torch.tensor([[1], [3]])
    mask = torch.tensor([True, False, True, True, False])
    grads(lambda x: x[i.to(x.device)], x)
    grads(lambda x: x[:, i.to(x.device)], x)
    grads(lambda x: x[j.to(x.device), :, i.to(x.device)], x)  # separated: moved to the front
    grads(lambda x: x[:, mask.to(x.device)], x)
    grads(lambda x: x[1, None, i.to(x.device), 0:2], x)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    x = torch.randn(5, 4)
    idx = (torch.tensor([0, 3, 0, 1]), torch.tensor([1, 2, 1, 3]))
    v = torch.arange(4.)
    d = x.to(DEV)
    d.index_put_(tuple(t.to(DEV) for t in idx), v.to(DEV), accumulate=accumulate)
    expected = x.clone().index_put_(idx, v, accumulate=accumulate)
    if accumulate:
        assert torch.allclose(d.cpu(), expected)
    else:  # a repeated index takes one of its values, as on the CPU
        assert torch.equal(d.cpu()[2:], expected[2:])
    m = x > 0
    d = x.to(DEV)
    d[m.to(DEV)] = 0.0
    assert torch.equal(d.cpu(), x.masked_fill(m, 0.0))
    d = x.to(DEV)
    d[:, torch.tensor([0, 2], device=DEV)] = torch.ones(5, 1, device=DEV)
    e = x.clone()
    e[:, [0, 2]] = 1.0
    assert torch.equal(d.cpu(), e)


def test_scatter_reduce_forms():
    x = torch.randn(3, 5)
    idx = torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    src = torch.randn(2, 5)
    for reduce in ("add", "multiply"):
        assert torch.allclose(x.to(DEV).scatter(0, idx.to(DEV), src.to(DEV), reduce=reduce).cpu(),
                              x.scatter(0, idx, src, reduce=reduce))
        assert torch.allclose(x.to(DEV).scatter_(0, idx.to(DEV), 2.5, reduce=reduce).cpu(),
                              x.clone().scatter_(0, idx, 2.5, reduce=reduce))
    assert torch.equal(x.to(DEV).scatter(1, idx.to(DEV), 7.0).cpu(), x.scatter(1, idx, 7.0))


def test_nonzero_layout():
    x = torch.tensor([[0, 1, 2], [3, 0, 0]])
    got = x.to(DEV).nonzero()
    assert got.device.type == "mtia"
    assert torch.equal(got.cpu(), x.nonzero()) and got.stride() == x.nonzero().stride()
    assert torch.equal(torch.argwhere(x.to(DEV)).cpu(), torch.argwhere(x))


def run_child(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("expr, words", [
    ("x.index_select(0, torch.tensor([1, 7], device=d))", "index_select: index 7"),
    ("x.gather(1, torch.tensor([[0], [-1], [0], [0]], device=d))", "gather: index -1"),
    ("x[torch.tensor([0, 4], device=d)]", "index: index 4"),
    ("torch.nn.functional.embedding(torch.tensor([9], device=d), x)", "index 9"),
])
def test_out_of_range_index_raises(expr, words):
    # The CPU raises at once; the device at the next synchronising call (the kernel faults).
    r = run_child(f"""
        import torch, torch_mtia
        d = torch.device("mtia", 0)
        x = torch.randn(4, 3, device=d)
        try:
            y = {expr}
            torch.mtia.synchronize()
        except RuntimeError as e:
            print("RAISED", e)
        else:
            print("NO ERROR")
        """)
    assert "RAISED" in r.stdout and words in r.stdout, r.stdout + r.stderr
    with pytest.raises((IndexError, RuntimeError)):  # gather's is a RuntimeError on the CPU
        eval(expr, {"torch": torch, "x": torch.randn(4, 3), "d": "cpu"})


def test_capture_embedding_cat_tril_index_select():
    g = torch.Generator().manual_seed(5)
    w_cpu = torch.randn(8, 4, generator=g).requires_grad_()
    w = w_cpu.detach().to(DEV).requires_grad_()
    static_i = torch.zeros(4, dtype=torch.long, device=DEV)
    pick = torch.tensor([0, 3, 5], device=DEV)

    def step(w, i, pick):
        e = torch.nn.functional.embedding(i, w, padding_idx=0)  # 4 x 4
        y = torch.cat([e, e.tril(-1)], 0).index_select(0, pick)
        (y * y).sum().backward()
        return y

    side = torch.mtia.Stream(device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        step(w, static_i, pick)
    torch.mtia.current_stream().wait_stream(side)
    graph = torch.mtia.MTIAGraph()
    torch_mtia.reset_fallback_counts()
    with torch.mtia.graph(graph, stream=side):
        static_y = step(w, static_i, pick)
    assert not torch_mtia.fallback_counts()
    for r in range(3):
        i = torch.randint(0, 8, (4,), generator=g)
        static_i.copy_(i)
        w.grad.zero_()
        graph.replay()
        w_cpu.grad = None
        y = step(w_cpu, i, pick.cpu())
        torch.mtia.synchronize()
        assert torch.allclose(static_y.detach().cpu(), y.detach(), atol=1e-6), f"replay {r}"
        assert torch.allclose(w.grad.cpu(), w_cpu.grad, atol=1e-5), f"replay {r}: grad"
    graph.reset()


def test_wide_rows_over_several_blocks():
    # Rows moved whole, with a launch split over blocks at points that are not row boundaries.
    g = torch.Generator().manual_seed(7)
    w = torch.randn(300, 100, generator=g)
    i = torch.randint(0, 300, (513,), generator=g)
    wd, idd = w.to(DEV), i.to(DEV)
    torch_mtia.reset_fallback_counts()
    assert torch.equal(wd.index_select(0, idd).cpu(), w.index_select(0, i))
    assert torch.equal(torch.nn.functional.embedding(idd.view(27, 19), wd).cpu(),
                       torch.nn.functional.embedding(i.view(27, 19), w))
    assert torch.equal(wd[idd].cpu(), w[i])
    x = torch.randn(4, 300, 40, generator=g)
    assert torch.equal(x.to(DEV)[:, idd].cpu(), x[:, i])
    v = torch.randn(513, 100, generator=g)
    got = wd.clone().index_put_((idd,), v.to(DEV), accumulate=True).cpu()
    assert torch.allclose(got, w.clone().index_put_((i,), v, accumulate=True), atol=1e-5)
    assert not torch_mtia.fallback_counts()
