#!/usr/bin/env bash
# Python's pickle (Debian's python3) reads the runtime's pickle snapshot as the same document as its
# JSON snapshot (tuples read back as lists), and the document has PyTorch 2.x's keys and invariants
# (the default stream written as 0 in both).
# Usage: snapshot_python_check.sh HISTORY_DUMP
set -euo pipefail
dump=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$dump" "$work/s.json" "$work/s.pickle"
python3 - "$work/s.json" "$work/s.pickle" <<'PY'
import json, pickle, pickletools, sys
j = json.load(open(sys.argv[1]))
# Only the opcodes PyTorch's MemoryViz.js unpickler handles (reference notes 4.5), protocol 2 to 4.
allowed = {"PROTO", "FRAME", "MARK", "STOP", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "APPEND", "APPENDS",
           "SETITEM", "SETITEMS", "DICT", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "BININT", "BININT1",
           "BININT2", "LONG1", "BINFLOAT", "NEWTRUE", "NEWFALSE", "NONE", "SHORT_BINUNICODE", "BINUNICODE",
           "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET", "MEMOIZE"}
ops = {}
with open(sys.argv[2], "rb") as f:
    for op, arg, pos in pickletools.genops(f):
        ops[op.name] = ops.get(op.name, 0) + 1
        if op.name == "PROTO":
            assert 2 <= arg <= 4, f"protocol {arg}"
assert set(ops) <= allowed, f"opcodes MemoryViz.js cannot read: {set(ops) - allowed}"
raw = pickle.load(open(sys.argv[2], "rb"))
def lists(v):
    if isinstance(v, (list, tuple)): return [lists(x) for x in v]
    if isinstance(v, dict): return {k: lists(x) for k, x in v.items()}
    return v
# The pickle was taken second: its trace has one more "snapshot" entry (each snapshot records one).
extra = raw["device_traces"][0].pop()
assert extra["action"] == "snapshot", extra
assert lists(raw) == j, "the pickle and the JSON differ"
assert isinstance(raw["segments"][0]["segment_pool_id"], tuple), "segment_pool_id is a tuple, as PyTorch's"
assert set(j) == {"segments", "device_traces", "allocator_settings", "external_annotations"}, set(j)
pools = set()
for s in j["segments"]:
    assert sum(b["size"] for b in s["blocks"]) == s["total_size"]
    assert s["allocated_size"] == sum(b["size"] for b in s["blocks"] if b["state"] == "active_allocated")
    pools.add(tuple(s["segment_pool_id"]))
assert len(pools) == 2, pools
actions = {e["action"] for e in j["device_traces"][0]}
assert {"alloc", "free_requested", "free_completed", "segment_alloc", "snapshot"} <= actions, actions
alloc = next(e for e in j["device_traces"][0] if e["action"] == "alloc")
assert alloc["user_metadata"] == "step=1", alloc["user_metadata"]
assert alloc["frames"] and alloc["frames"][0]["name"] == "main", alloc["frames"][:2]
assert [a["stage"] for a in j["external_annotations"]] == ["START", "END"]
# Everything ran on the default stream, which PyTorch (and its viewer) writes as 0: in both formats.
for doc, name in ((j, "JSON"), (raw, "pickle")):
    assert all(s["stream"] == 0 for s in doc["segments"]), (name, [s["stream"] for s in doc["segments"]])
    assert all(e["stream"] == 0 for e in doc["device_traces"][0]), (name, {e["stream"] for e in doc["device_traces"][0]})
print("ok:", len(j["segments"]), "segments,", len(j["device_traces"][0]), "trace entries")
PY
