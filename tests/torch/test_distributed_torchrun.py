"""torchrun starts DDP training on MTIA devices: torch_mtia.ddp_demo under
`torchrun --standalone --nproc-per-node 2 -m torch_mtia.ddp_demo`, whose ranks take their device from
LOCAL_RANK and join the group from torchrun's env:// variables with that device as device_id and no
backend named (PyTorch must pick the backend registered for mtia), train the GPT-style model with DDP
and compare it, on rank 0, with one process trained on the whole batch on its device."""
import os
import re
import subprocess
import sys

TIMEOUT_S = 240


def _torchrun():
    # The venv's torchrun script beside the interpreter; the same entry point through -m otherwise.
    script = os.path.join(os.path.dirname(sys.executable), "torchrun")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_trains_the_gpt_model_with_ddp_on_two_devices():
    steps = 3
    cmd = _torchrun() + ["--standalone", "--nproc-per-node", "2", "-m", "torch_mtia.ddp_demo",
                         "--steps", str(steps)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stdout
    text = out.stdout
    assert re.search(r"DDP over 2 processes, backend mtia, mtia:0 on rank 0, global batch 8 "
                     r"\(4 per rank\), \d+ parameters in ([4-9]|\d\d+) gradient buckets", text), text
    losses = [float(x) for x in re.findall(r"^step \d+: loss (\d+\.\d+)$", text, re.M)]
    assert len(losses) == steps, text
    # Cross-entropy over a 50-token vocabulary starts near log(50) = 3.9.
    assert 3.0 < losses[0] < 5.0, text
    assert re.search(rf"parameters after {steps} steps match one process on the whole batch: True",
                     text), text
