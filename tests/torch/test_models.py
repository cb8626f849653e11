"""Whole training steps on the device: a GPT-style decoder with AdamW and a CNN with BatchNorm and SGD
(momentum), each run eagerly with no CPU fallback and compared with the same model on the CPU after
several steps, then captured as a torch.mtia.MTIAGraph (warm-up on a side stream, as CUDA-graph users
do) and replayed with new batches copied into the static inputs."""
import copy

import pytest
import torch

import torch_mtia
from torch_mtia.demo_models import capture_step, make, train_step

DEV = torch.device("mtia", 0)


@pytest.mark.parametrize("kind", ["gpt", "cnn"])
def test_eager_training_matches_the_cpu_without_fallback(kind):
    cpu_model, make_opt, make_batch = make(kind)
    dev_model = copy.deepcopy(cpu_model).to(DEV)
    cpu_opt, dev_opt = make_opt(cpu_model), make_opt(dev_model)
    g = torch.Generator().manual_seed(1)
    torch_mtia.reset_fallback_counts()
    for _ in range(4):
        batch = make_batch(g)
        cpu_loss = train_step(cpu_model, cpu_opt, batch)
        dev_loss = train_step(dev_model, dev_opt, [t.to(DEV) for t in batch])
        torch.testing.assert_close(dev_loss.cpu(), cpu_loss, rtol=1e-3, atol=1e-4)
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}, "operators that left the device"
    for (name, c), d in zip(cpu_model.state_dict().items(), dev_model.state_dict().values()):
        torch.testing.assert_close(d.cpu(), c, rtol=1e-3, atol=1e-4, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("kind", ["gpt", "cnn"])
def test_captured_training_step_replays_like_eager(kind):
    cpu_model, make_opt, make_batch = make(kind)
    dev_model = copy.deepcopy(cpu_model).to(DEV)
    cpu_opt, dev_opt = make_opt(cpu_model), make_opt(dev_model)
    g = torch.Generator().manual_seed(2)
    first = make_batch(g)
    static = [t.to(DEV) for t in first]
    side = torch.mtia.Stream()
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        for _ in range(2):  # warm-up: optimizer state exists, kernels and allocations seen
            train_step(dev_model, dev_opt, static)
    torch.mtia.current_stream().wait_stream(side)
    for _ in range(2):
        train_step(cpu_model, cpu_opt, first)
    torch_mtia.reset_fallback_counts()
    graph, static_loss = capture_step(dev_model, dev_opt, static)
    for _ in range(3):
        batch = make_batch(g)
        for s, b in zip(static, batch):
            s.copy_(b.to(DEV))
        graph.replay()
        cpu_opt.zero_grad(set_to_none=False)
        cpu_loss = cpu_model(*batch)
        cpu_loss.backward()
        cpu_opt.step()
        torch.testing.assert_close(static_loss.cpu(), cpu_loss, rtol=1e-3, atol=1e-4)
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}
    for (name, c), d in zip(cpu_model.state_dict().items(), dev_model.state_dict().values()):
        torch.testing.assert_close(d.cpu(), c, rtol=1e-3, atol=1e-4, msg=lambda m: f"{name}: {m}")


def test_an_operator_without_a_device_kernel_is_named_when_captured():
    x = torch.randn(8, device=DEV)
    torch.sin(x)  # warm-up outside the capture
    graph = torch.mtia.MTIAGraph()
    with pytest.raises(RuntimeError, match=r"aten::i0(\.out)? has no MTIA device kernel"):
        with torch.mtia.graph(graph):
            torch.sin(x)
            torch.i0(x)
    assert not torch_mtia.is_current_stream_capturing()
    ops = torch_mtia.device_operators()
    assert {"add.out", "mm", "_softmax", "native_layer_norm"} <= set(ops)
    assert "i0" not in ops and "cos" not in ops  # cos runs through cos.out
