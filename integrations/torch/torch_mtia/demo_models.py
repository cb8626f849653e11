"""Small models that exercise the device end to end: a GPT-style decoder (token and position
embeddings, LayerNorm, causal multi-head attention with softmax, a GELU MLP, cross-entropy) and a CNN
(Conv2d, BatchNorm2d, ReLU, max-pool, adaptive average pool, Linear, cross-entropy). Used by the
demo, the benchmarks (bench/torch_models.py) and the tests (tests/torch/test_models.py)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["TinyGPT", "TinyCNN", "make", "train_step", "capture_step", "gpt_batch", "cnn_batch"]


class Block(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        # No bias: a key bias has an exactly zero gradient (softmax ignores a shift shared by a
        # query's scores), so Adam would turn its rounding noise into full-size steps whose direction
        # differs between any two machines.
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
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


def gpt_batch(g, batch=4, context=16, vocab=50):
    idx = torch.randint(0, vocab, (batch, context), generator=g)
    return idx, torch.roll(idx, -1, dims=1)


def cnn_batch(g, batch=8, size=16):
    return (torch.randn(batch, 3, size, size, generator=g),
            torch.randint(0, 10, (batch,), generator=g))


def make(kind):
    """(model, optimizer factory, batch factory) for "gpt" (AdamW) or "cnn" (SGD, nesterov momentum),
    with the same initial weights every time."""
    torch.manual_seed(0)
    if kind == "gpt":
        model = TinyGPT()
        # capturable on the device: the step count and bias corrections stay there, so a captured
        # step replays with the right step (as CUDA graphs need too); the CPU does not take it.
        return model, lambda m: torch.optim.AdamW(
            m.parameters(), lr=1e-2, weight_decay=0.1,
            capturable=next(m.parameters()).device.type != "cpu"), gpt_batch
    model = TinyCNN()
    return model, lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True), cnn_batch


def train_step(model, opt, batch):
    """One training step: gradients zeroed in place (so that a captured step keeps its buffers),
    forward, backward, optimizer step; returns the loss."""
    opt.zero_grad(set_to_none=False)
    loss = model(*batch)
    loss.backward()
    opt.step()
    return loss


def capture_step(model, opt, batch):
    """One training step on the static tensors of batch, captured as a torch.mtia.MTIAGraph (after
    the caller's warm-up; nothing runs until the graph is replayed). Returns (graph, loss), loss
    being the static tensor each replay writes. The gradients are made inside the capture, from the
    graph's pool, as PyTorch's whole-network capture recipe does: the replayed backward then writes
    them instead of adding to them."""
    graph = torch.mtia.MTIAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.mtia.graph(graph):
        loss = model(*batch)
        loss.backward()
        opt.step()
    return graph, loss
