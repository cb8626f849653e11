"""MTIAGraph: a forward pass (matmul, add, relu) captured once and replayed 100 times with new inputs
equals eager execution; a whole training step (forward, backward, SGD update) captured and replayed
equals the CPU's; two graphs share one pool."""
import pytest
import torch

import torch_mtia

DEV = torch_mtia.device(0)


def forward(x, w, b):
    return torch.relu(x @ w + b)


def test_capture_and_replay_with_new_inputs_equals_eager():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(16, 8, generator=g).to(DEV)
    b = torch.randn(8, generator=g).to(DEV)
    static_x = torch.zeros(4, 16, device=DEV)
    forward(static_x, w, b)  # warm-up outside capture
    graph = torch_mtia.MTIAGraph()
    with torch_mtia.graph(graph):
        static_y = forward(static_x, w, b)
    assert graph.pool() != (0, 0)
    for i in range(100):
        x = torch.randn(4, 16, generator=g)
        static_x.copy_(x)
        graph.replay()
        eager = forward(x.to(DEV), w, b)
        assert torch.allclose(static_y.cpu(), eager.cpu(), atol=1e-6), f"replay {i}"
    graph.reset()


def test_captured_training_step_equals_cpu():
    # The backward runs on the device's default stream (1.13's engine), not on the capturing side
    # stream: it joins the capture through the event of torch_mtia's fence and is replayed with the
    # forward and the update.
    g = torch.Generator().manual_seed(3)
    w_cpu = torch.randn(16, 8, generator=g).requires_grad_()
    b_cpu = torch.randn(8, generator=g).requires_grad_()
    w = w_cpu.detach().to(DEV).requires_grad_()
    b = b_cpu.detach().to(DEV).requires_grad_()
    static_x = torch.zeros(4, 16, device=DEV)
    side = torch_mtia.Stream()
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):  # warm-up: gradients allocated outside the capture
        forward(static_x, w, b).sum().backward()
    torch_mtia.current_stream().wait_stream(side)
    graph = torch_mtia.MTIAGraph()
    with torch_mtia.graph(graph, stream=side):  # on a side stream, as torch.cuda.graph captures
        forward(static_x, w, b).sum().backward()  # accumulates into the gradients of the warm-up
        with torch.no_grad():
            w.sub_(w.grad, alpha=0.01)
            b.sub_(b.grad, alpha=0.01)
            w.grad.zero_()
            b.grad.zero_()
    w.grad.zero_()
    b.grad.zero_()
    for i in range(10):
        x = torch.randn(4, 16, generator=g)
        static_x.copy_(x)
        graph.replay()
        forward(x, w_cpu, b_cpu).sum().backward()
        with torch.no_grad():
            w_cpu.sub_(w_cpu.grad, alpha=0.01)
            b_cpu.sub_(b_cpu.grad, alpha=0.01)
            w_cpu.grad.zero_()
            b_cpu.grad.zero_()
        assert torch.allclose(w.detach().cpu(), w_cpu.detach(), atol=1e-5), f"replay {i}: weights"
        assert torch.allclose(b.detach().cpu(), b_cpu.detach(), atol=1e-5), f"replay {i}: bias"
    graph.reset()


def test_keep_graph_instantiate_and_explicit_capture():
    x = torch.ones(8, device=DEV)
    graph = torch_mtia.MTIAGraph(keep_graph=True)
    torch_mtia.synchronize()
    graph.capture_begin()
    y = x * 3
    graph.capture_end()
    graph.instantiate()
    x.fill_(2.0)
    graph.replay()
    assert torch.equal(y.cpu(), torch.full((8,), 6.0))


def test_two_graphs_share_a_pool():
    pool = torch_mtia.graph_pool_handle()
    assert pool != (0, 0)
    x = torch.ones(32, device=DEV)
    g1, g2 = torch_mtia.MTIAGraph(), torch_mtia.MTIAGraph()
    with torch_mtia.graph(g1, pool=pool):
        y1 = x + 1
    with torch_mtia.graph(g2, pool=g1.pool()):
        y2 = y1 * 2
    assert g1.pool() == g2.pool() == pool
    x.fill_(5.0)
    g1.replay()
    g2.replay()
    assert torch.equal(y2.cpu(), torch.full((32,), 12.0))


def test_capturing_state_and_destroy_in_every_state():
    assert not torch_mtia.is_current_stream_capturing()
    g = torch_mtia.MTIAGraph()
    del g  # never captured
    x = torch.ones(16, device=DEV)
    g = torch_mtia.MTIAGraph()
    torch_mtia.synchronize()
    g.capture_begin()
    assert torch_mtia.is_current_stream_capturing()
    y = x + x
    del g, y  # mid-capture: destroying ends the capture
    assert not torch_mtia.is_current_stream_capturing()
    assert torch.equal((x + x).cpu(), torch.full((16,), 2.0))  # eager work runs again
    g = torch_mtia.MTIAGraph()
    with torch_mtia.graph(g):
        z = x * 4
    g.reset()
    g.reset()  # idempotent
    with torch_mtia.graph(g):  # a reset graph captures again
        z = x * 5
    g.replay()
    assert torch.equal(z.cpu(), torch.full((16,), 5.0))


def test_replay_without_capture_is_an_error():
    g = torch_mtia.MTIAGraph()
    with pytest.raises(RuntimeError, match="mtiaGraphReplay"):
        g.replay()


def test_failed_capture_begin_restores_the_current_stream():
    g = torch_mtia.MTIAGraph()
    x = torch.zeros(8, device=DEV)
    with torch_mtia.graph(g):
        x.add_(1)
    before = torch_mtia.current_stream()
    side = torch_mtia.Stream()
    with pytest.raises(RuntimeError):
        with torch_mtia.graph(g, stream=side):  # g holds a graph already: capture_begin refuses
            x.add_(1)
    assert torch_mtia.current_stream() == before
    assert not torch_mtia.is_current_stream_capturing()
