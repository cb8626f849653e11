"""Memory history with Python stacks through torch.mtia.record_memory_history, torch.mtia.snapshot()
keys and frames from this file, torch_mtia.memory._dump_snapshot read by pickle and by
`mtia-mem summary`."""
import os
import pickle
import subprocess

import pytest
import torch

import torch_mtia
from torch_mtia import memory

DEV = torch.device("mtia", 0)
# torch.mtia.record_memory_history does nothing before the device is initialised.
torch.mtia.init()


def allocate_here():
    return torch.empty(1 << 16, device=DEV)


def test_snapshot_has_keys_and_python_frames(tmp_path):
    torch.mtia.record_memory_history(enabled="all", stacks="python", max_entries=0)
    try:
        keep = allocate_here()
        snap = torch.mtia.snapshot()
        assert {"segments", "device_traces"} <= set(snap)
        frames = [f for seg in snap["segments"] for blk in seg["blocks"] if blk["state"] == "active_allocated"
                  for f in blk.get("frames", [])]
        mine = [f for f in frames if f["filename"] == __file__]
        assert any(f["name"] == "allocate_here" for f in mine)
        assert any(f["name"] == "test_snapshot_has_keys_and_python_frames" for f in mine)
        trace = [e for device in snap["device_traces"] for e in device]
        assert any(e["action"] == "alloc" for e in trace)

        path = tmp_path / "snap.pickle"
        memory._dump_snapshot(str(path))
        with open(path, "rb") as f:
            dumped = pickle.load(f)
        assert "segments" in dumped
        # Both builds pass the mtia-mem path (tests/torch/CMakeLists.txt, meson.build): never skipped.
        tool = os.environ.get("MTIA_MEM")
        assert tool and os.access(tool, os.X_OK), f"MTIA_MEM must name the mtia-mem executable, got {tool!r}"
        out = subprocess.run([tool, "summary", str(path)], capture_output=True, text=True, check=True).stdout
        # the live block of 256 KiB is attributed to this file's function
        assert "device 0" in out and "256.00 KiB" in out
        assert "allocate_here (" + __file__ in out
        del keep
    finally:
        torch.mtia.record_memory_history(enabled=None)


def test_history_off_and_bad_arguments():
    # None turns the history off (upstream's form; the 1.13 integration also took True/False).
    torch.mtia.record_memory_history("all", "python")
    try:
        keep = allocate_here()
        trace = [e for device in torch.mtia.snapshot()["device_traces"] for e in device]
        assert any(e["action"] == "alloc" for e in trace)
        del keep
    finally:
        torch.mtia.record_memory_history(None)
    assert all(t == [] for t in torch.mtia.snapshot()["device_traces"])
    with pytest.raises(RuntimeError, match="enabled must be"):
        torch.mtia.record_memory_history("sometimes")
    with pytest.raises(RuntimeError, match="stacks must be"):
        torch.mtia.record_memory_history("all", "fortran")


def test_snapshot_written_by_the_hooks_to_a_path(tmp_path):
    # The hooks' memorySnapshot with a local path (what torch_mtia.memory._dump_snapshot calls).
    keep = allocate_here()
    path = tmp_path / "direct.pickle"
    memory._dump_snapshot(path)
    with open(path, "rb") as f:
        dumped = pickle.load(f)
    sizes = [blk["size"] for seg in dumped["segments"] for blk in seg["blocks"] if blk["state"] == "active_allocated"]
    assert 1 << 18 in sizes
    del keep
