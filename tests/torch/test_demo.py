"""python3 -m torch_mtia.demo runs and reports what it promises: device, streams, a graph speed-up with
the same result as eager, and a memory summary."""
import os
import subprocess
import sys


def test_demo_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "torch_mtia.demo"], capture_output=True, text=True, check=True,
                         env=os.environ, timeout=240).stdout
    assert "using privateuseone:0" in out
    assert "side-stream result: 131072 (expected 131072)" in out
    assert "same result: True" in out and "speed-up" in out
    assert "memory: allocated" in out and "after empty_cache" in out
