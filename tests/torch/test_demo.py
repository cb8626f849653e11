"""python3 -m torch_mtia.demo runs and reports what it promises: device, streams, a graph speed-up (a
ratio, not asserted: timings are for benchmarks) with replays that compute the CPU's result from a new
input, a memory summary, and a snapshot that `mtia-mem summary` reads."""
import os
import re
import subprocess
import sys


def test_demo_runs_as_a_module(tmp_path):
    path = tmp_path / "demo.pickle"
    out = subprocess.run([sys.executable, "-m", "torch_mtia.demo", "--snapshot", str(path)], capture_output=True,
                         text=True, check=True, env=os.environ, timeout=240).stdout
    assert "using mtia:0" in out
    assert "side-stream result: 131072 (expected 131072)" in out
    assert "same result as the CPU on a new input: True" in out
    assert re.search(r"eager \d+ us/step, replay \d+ us/step, speed-up \d+\.\d\dx", out), out
    # The GEMM configuration of each of the model's product shapes (tuned ones only where a cache
    # of this machine has them).
    assert re.search(r"GEMM choices for the GPT step's \d+ product shapes", out), out
    assert re.search(r"  float32 mm \d+x\d+ @ \d+x\d+ \(\d+ calls?, class \(m, n, k, batch\) <= "
                     r"\(\d+, \d+, \d+, 1\)\): .* \((not tuned|tuned, from the cache)\)", out), out
    assert "memory: allocated" in out and "after empty_cache" in out
    assert f"snapshot written to {path}" in out
    # Both builds pass the mtia-mem path (tests/torch/CMakeLists.txt, meson.build): never skipped.
    tool = os.environ.get("MTIA_MEM")
    assert tool and os.access(tool, os.X_OK), f"MTIA_MEM must name the mtia-mem executable, got {tool!r}"
    summary = subprocess.run([tool, "summary", str(path)], capture_output=True, text=True, check=True).stdout
    assert "device 0" in summary and "demo.py" in summary, summary
