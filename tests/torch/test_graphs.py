"""torch.mtia.MTIAGraph and torch.mtia.graph on the MTIA hooks' graph methods: a forward pass
(matmul, add, relu) captured once and replayed 100 times with new inputs equals eager execution; a
whole training step (forward, backward, SGD update) captured and replayed equals the CPU's; two
graphs share one pool; keep_graph, reset, and destroy (torch_mtia's, explicit or on collection)."""
import gc

import pytest
import torch

import torch_mtia

DEV = torch.device("mtia", 0)


def forward(x, w, b):
    return torch.relu(x @ w + b)


def test_capture_and_replay_with_new_inputs_equals_eager():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(16, 8, generator=g).to(DEV)
    b = torch.randn(8, generator=g).to(DEV)
    static_x = torch.zeros(4, 16, device=DEV)
    forward(static_x, w, b)  # warm-up outside capture
    graph = torch.mtia.MTIAGraph()
    with torch.mtia.graph(graph):
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
    # The backward is captured on the capturing side stream with the forward and the update, and is
    # replayed with them.
    g = torch.Generator().manual_seed(3)
    w_cpu = torch.randn(16, 8, generator=g).requires_grad_()
    b_cpu = torch.randn(8, generator=g).requires_grad_()
    w = w_cpu.detach().to(DEV).requires_grad_()
    b = b_cpu.detach().to(DEV).requires_grad_()
    static_x = torch.zeros(4, 16, device=DEV)
    side = torch.mtia.Stream(device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):  # warm-up: gradients allocated outside the capture
        forward(static_x, w, b).sum().backward()
    torch.mtia.current_stream().wait_stream(side)
    graph = torch.mtia.MTIAGraph()
    with torch.mtia.graph(graph, stream=side):  # on a side stream, as torch.cuda.graph captures
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
    graph = torch.mtia.MTIAGraph(keep_graph=True)
    torch.mtia.synchronize()
    graph.capture_begin((0, 0))  # upstream's capture_begin takes the pool: (0, 0) is the graph's own
    y = x * 3
    graph.capture_end()
    graph.instantiate()
    x.fill_(2.0)
    graph.replay()
    assert torch.equal(y.cpu(), torch.full((8,), 6.0))


def test_two_graphs_share_a_pool():
    pool = torch.mtia.graph_pool_handle()
    assert pool != (0, 0)
    x = torch.ones(32, device=DEV)
    g1, g2 = torch.mtia.MTIAGraph(), torch.mtia.MTIAGraph()
    with torch.mtia.graph(g1, pool=pool):
        y1 = x + 1
    with torch.mtia.graph(g2, pool=g1.pool()):
        y2 = y1 * 2
    assert g1.pool() == g2.pool() == pool
    x.fill_(5.0)
    g1.replay()
    g2.replay()
    assert torch.equal(y2.cpu(), torch.full((32,), 12.0))


def test_capturing_state_and_destroy_in_every_state():
    assert not torch_mtia.is_current_stream_capturing()
    g = torch.mtia.MTIAGraph()
    del g  # never captured
    x = torch.ones(16, device=DEV)
    g = torch.mtia.MTIAGraph()
    torch.mtia.synchronize()
    g.capture_begin((0, 0))
    assert torch_mtia.is_current_stream_capturing()
    y = x + x
    del g, y  # mid-capture: destroying ends the capture
    assert not torch_mtia.is_current_stream_capturing()
    assert torch.equal((x + x).cpu(), torch.full((16,), 2.0))  # eager work runs again
    g = torch.mtia.MTIAGraph()
    with torch.mtia.graph(g):
        z = x * 4
    g.reset()
    g.reset()  # idempotent
    with torch.mtia.graph(g):  # a reset graph captures again
        z = x * 5
    g.replay()
    assert torch.equal(z.cpu(), torch.full((16,), 5.0))


def test_replay_without_capture_is_an_error():
    g = torch.mtia.MTIAGraph()
    with pytest.raises(RuntimeError, match="mtiaGraphReplay"):
        g.replay()


def test_failed_capture_begin_restores_the_current_stream():
    g = torch.mtia.MTIAGraph()
    x = torch.zeros(8, device=DEV)
    with torch.mtia.graph(g):
        x.add_(1)
    before = torch.mtia.current_stream()
    side = torch.mtia.Stream(device=DEV)
    with pytest.raises(RuntimeError):
        with torch.mtia.graph(g, stream=side):  # g holds a graph already: capture_begin refuses
            x.add_(1)
    assert torch.mtia.current_stream() == before
    assert not torch_mtia.is_current_stream_capturing()


def test_collected_and_destroyed_graphs_release_their_handles():
    # PyTorch 2.13's _MTIAGraph never calls the hooks' mtiagraphDestroy: torch_mtia ties the handle
    # to the Python object, so that collection and destroy() release the graph.
    gc.collect()
    live = torch_mtia._C._live_graphs()
    x = torch.ones(8, device=DEV)
    g = torch.mtia.MTIAGraph()
    with torch.mtia.graph(g):
        y = x * 2
    assert torch_mtia._C._live_graphs() == live + 1
    g.replay()
    del g  # collected: destroyed
    gc.collect()
    assert torch_mtia._C._live_graphs() == live
    assert torch.equal(y.cpu(), torch.full((8,), 2.0))  # captured outputs outlive the graph

    g = torch.mtia.MTIAGraph(keep_graph=True)
    assert torch_mtia._C._live_graphs() == live + 1
    g.destroy()
    assert torch_mtia._C._live_graphs() == live
    g.destroy()  # idempotent
    with pytest.raises(RuntimeError):
        g.replay()  # the graph is gone
    del g
    gc.collect()
    assert torch_mtia._C._live_graphs() == live


def test_destroy_during_a_replay_waits_for_it():
    x = torch.ones(1 << 16, device=DEV)
    g = torch.mtia.MTIAGraph()
    with torch.mtia.graph(g):
        torch_mtia._C.sleep_on_stream(100_000)
        y = x + 1
    g.replay()
    g.destroy()  # waits for the replay in flight, then releases
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))
