"""Memory history with Python stacks, snapshot() keys and frames from this file, _dump_snapshot read by
pickle and by `mtia-mem summary`."""
import os
import pickle
import subprocess

import torch

import torch_mtia

DEV = torch_mtia.device(0)


def allocate_here():
    return torch.empty(1 << 16, device=DEV)


def test_snapshot_has_keys_and_python_frames(tmp_path):
    torch_mtia.record_memory_history(enabled="all", stacks="python", max_entries=0)
    try:
        keep = allocate_here()
        snap = torch_mtia.snapshot()
        assert {"segments", "device_traces"} <= set(snap)
        frames = [f for seg in snap["segments"] for blk in seg["blocks"] if blk["state"] == "active_allocated"
                  for f in blk.get("frames", [])]
        mine = [f for f in frames if f["filename"] == __file__]
        assert any(f["name"] == "allocate_here" for f in mine)
        assert any(f["name"] == "test_snapshot_has_keys_and_python_frames" for f in mine)
        trace = [e for device in snap["device_traces"] for e in device]
        assert any(e["action"] == "alloc" for e in trace)

        path = tmp_path / "snap.pickle"
        torch_mtia._dump_snapshot(str(path))
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
        torch_mtia.record_memory_history(enabled=None)


def test_boolean_form_of_record_memory_history():
    # True / False (the older boolean form) mean "all" and off.
    torch_mtia.record_memory_history(True)
    try:
        keep = allocate_here()
        trace = [e for device in torch_mtia.snapshot()["device_traces"] for e in device]
        assert any(e["action"] == "alloc" for e in trace)
        del keep
    finally:
        torch_mtia.record_memory_history(False)
    assert all(t == [] for t in torch_mtia.snapshot()["device_traces"])
