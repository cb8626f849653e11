"""python3 -m torch_mtia.demo runs and reports what it promises: device, streams, a graph speed-up (a
ratio, not asserted: timings are for benchmarks) with replays that compute the CPU's result from a new
input, and a memory summary."""
import os
import re
import subprocess
import sys


def test_demo_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "torch_mtia.demo"], capture_output=True, text=True, check=True,
                         env=os.environ, timeout=240).stdout
    assert "using privateuseone:0" in out
    assert "side-stream result: 131072 (expected 131072)" in out
    assert "same result as the CPU on a new input: True" in out
    assert re.search(r"eager \d+ us/step, replay \d+ us/step, speed-up \d+\.\d\dx", out), out
    assert "memory: allocated" in out and "after empty_cache" in out
