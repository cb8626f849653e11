"""A small MLP's training step on the device matches the same step on the CPU."""
import copy

import torch

import torch_mtia

DEV = torch.device("mtia", 0)


def test_mlp_training_step_matches_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16)
    target = torch.randn(8, 4)
    cpu_model = copy.deepcopy(model)
    dev_model = copy.deepcopy(model).to(DEV)
    results = []
    for m, device in ((cpu_model, "cpu"), (dev_model, DEV)):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss = ((m(x.to(device)) - target.to(device)) ** 2).mean()
            loss.backward()
            opt.step()
        results.append((loss.item(), [p.detach().cpu() for p in m.parameters()]))
    (cpu_loss, cpu_params), (dev_loss, dev_params) = results
    assert abs(cpu_loss - dev_loss) < 1e-5
    for c, d in zip(cpu_params, dev_params):
        assert torch.allclose(c, d, atol=1e-5)
    assert all(p.device == DEV for p in dev_model.parameters())
