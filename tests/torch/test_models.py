"""Whole training steps on the device: a GPT-style decoder with AdamW and a CNN with BatchNorm and SGD
(momentum), each run eagerly with no CPU fallback and compared with the same model on the CPU after
several steps, then captured as a torch.mtia.MTIAGraph (warm-up on a side stream, as CUDA-graph users
do) and replayed with new batches copied into the static inputs."""
import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_mtia

DEV = torch.device("mtia", 0)


class Block(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)
        self.register_buffer("causal", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        att = att.masked_fill(~self.causal[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=50, dim=32, heads=4, context=16, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads, context) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        logits = self.head(self.ln(self.blocks(x)))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class TinyCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d((1, 1)))
        self.fc = nn.Linear(16, classes)

    def forward(self, x, targets):
        return F.cross_entropy(self.fc(self.features(x).flatten(1)), targets)


def gpt_batch(g):
    idx = torch.randint(0, 50, (4, 16), generator=g)
    return idx, torch.roll(idx, -1, dims=1)


def cnn_batch(g):
    return torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)


def make(kind):
    torch.manual_seed(0)
    if kind == "gpt":
        model = TinyGPT()
        return model, lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1), gpt_batch
    model = TinyCNN()
    return model, lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True), cnn_batch


def train_step(model, opt, batch):
    opt.zero_grad(set_to_none=False)
    loss = model(*batch)
    loss.backward()
    opt.step()
    return loss


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
        torch.testing.assert_close(dev_loss.cpu(), cpu_loss, rtol=1e-4, atol=1e-5)
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}, "operators that left the device"
    for (name, c), d in zip(cpu_model.state_dict().items(), dev_model.state_dict().values()):
        torch.testing.assert_close(d.cpu(), c, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")


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
    graph = torch.mtia.MTIAGraph()
    dev_opt.zero_grad(set_to_none=False)
    with torch.mtia.graph(graph):
        static_loss = dev_model(*static)
        static_loss.backward()
        dev_opt.step()
    for _ in range(3):
        batch = make_batch(g)
        for s, b in zip(static, batch):
            s.copy_(b.to(DEV))
        graph.replay()
        cpu_opt.zero_grad(set_to_none=False)
        cpu_loss = cpu_model(*batch)
        cpu_loss.backward()
        cpu_opt.step()
        torch.testing.assert_close(static_loss.cpu(), cpu_loss, rtol=1e-4, atol=1e-5)
    torch.mtia.synchronize()
    assert torch_mtia.fallback_counts() == {}
    for (name, c), d in zip(cpu_model.state_dict().items(), dev_model.state_dict().values()):
        torch.testing.assert_close(d.cpu(), c, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")


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
