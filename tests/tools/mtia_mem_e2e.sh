#!/usr/bin/env bash
# mtia-mem end to end: generate each workload, replay it with and without
# expandable segments and check the JSON report; check that python3 reads the
# generator's pickles as its JSON, and that the same snapshot pickled by
# python3 (protocols 2 to 5) or by us replays to the same figures as its JSON;
# then the edges: out of memory (counted, not fatal), blocks from before the
# trace, devices the machine lacks, PyTorch 1.13 files, malformed input.
# Usage: mtia_mem_e2e.sh MTIA_MEM
set -euo pipefail
mem=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export MTIA_SIM_DEVICES=2 MTIA_SIM_MEMORY=16GiB

fail() { echo "FAIL: $*" >&2; exit 1; }

check_report() { # report.json [max_ooms] -> fails unless the figures are sane
  python3 - "$1" "${2:-0}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
keys = ["peak_reserved_bytes", "peak_allocated_bytes", "reserved_over_allocated", "num_device_alloc",
        "num_device_free", "num_alloc_retries", "num_ooms", "ops", "ns_per_op"]
missing = [k for k in keys if k not in r]
assert not missing, f"missing keys {missing}"
assert r["peak_allocated_bytes"] > 0 and r["peak_reserved_bytes"] >= r["peak_allocated_bytes"], r
assert abs(r["reserved_over_allocated"] - r["peak_reserved_bytes"] / r["peak_allocated_bytes"]) < 1e-4, r
assert r["ops"] > 0 and r["ns_per_op"] > 0 and r["num_device_alloc"] > 0, r
assert r["num_device_free"] <= r["num_device_alloc"], r
assert r["num_ooms"] <= int(sys.argv[2]), r
PY
}

figures() { # report.json -> the figures that must not depend on the file format
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.pop("ns_per_op"); [d.pop("ns_per_op") for d in r["devices"]]; print(json.dumps(r, sort_keys=True))' "$1"
}

for workload in train train-varlen kv-cache; do
  steps=2
  [[ $workload == kv-cache ]] && steps=60
  "$mem" generate --workload "$workload" --steps $steps --seed 7 -o "$work/$workload.json" >"$work/gen.txt"
  grep -q "trace entries" "$work/gen.txt" || fail "generate said: $(cat "$work/gen.txt")"
  "$mem" generate --workload "$workload" --steps $steps --seed 7 -o "$work/$workload.pickle" >/dev/null
  "$mem" generate --workload "$workload" --steps $steps --seed 7 --format json -o "$work/again.json" >/dev/null
  cmp -s "$work/$workload.json" "$work/again.json" || fail "$workload: the same seed wrote another trace"
  # Python reads our pickle as our JSON.
  python3 - "$work/$workload.json" "$work/$workload.pickle" <<'PY' || fail "$workload: python3 reads our pickle differently"
import json, pickle, sys
j = json.load(open(sys.argv[1]))
def lists(v):  # the pickle's tuples (pool ids) are JSON's lists
    if isinstance(v, (list, tuple)): return [lists(x) for x in v]
    if isinstance(v, dict): return {k: lists(x) for k, x in v.items()}
    return v
p = lists(pickle.load(open(sys.argv[2], "rb")))
assert j == p, "JSON and pickle differ"
assert set(j) >= {"segments", "device_traces", "allocator_settings", "external_annotations"}
for e in j["device_traces"][0]:
    assert {"action", "addr", "size", "stream", "time_us", "frames"} <= set(e), e
PY
  for conf in "" "expandable_segments:True"; do
    "$mem" replay "$work/$workload.json" ${conf:+--conf "$conf"} --json >"$work/report.json"
    check_report "$work/report.json"
  done
  "$mem" replay "$work/$workload.json" --json >"$work/from_json.json"
  "$mem" replay "$work/$workload.pickle" --json >"$work/from_pickle.json"
  [[ "$(figures "$work/from_json.json")" == "$(figures "$work/from_pickle.json")" ]] ||
    fail "$workload: our pickle replays differently from our JSON"
  for protocol in 2 3 4 5; do
    python3 -c 'import json,pickle,sys; pickle.dump(json.load(open(sys.argv[1])), open(sys.argv[2], "wb"), protocol=int(sys.argv[3]))' \
      "$work/$workload.json" "$work/py.pickle" "$protocol"
    "$mem" replay "$work/py.pickle" --json >"$work/from_pickle.json"
    [[ "$(figures "$work/from_json.json")" == "$(figures "$work/from_pickle.json")" ]] ||
      fail "$workload: python3's pickle of protocol $protocol replays differently from JSON"
  done
  echo "$workload: ok"
done

# The text report.
"$mem" replay "$work/train.json" >"$work/text.txt"
grep -q "reserved/allocated" "$work/text.txt" && grep -q "ns per op" "$work/text.txt" || fail "text report: $(cat "$work/text.txt")"

# Out of memory is counted and the allocation skipped, not fatal.
"$mem" replay "$work/train.json" --device-memory 2GiB --json >"$work/oom.json"
python3 - "$work/oom.json" <<'PY' || fail "out of memory: $(cat "$work/oom.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["num_ooms"] > 0 and r["skipped_allocs"] > 0, r
assert r["peak_reserved_bytes"] <= 2 << 30, r
PY
"$mem" replay "$work/train.json" --device-memory 2GiB | grep "ran out of memory" >/dev/null || fail "text report without OOMs"

# A snapshot as torch writes it (segments, frames, several streams, devices 0 and 1, a block allocated
# before the trace began), pickled by python3.
python3 - "$work/torch.pickle" "$work/two_devices_too_many.json" "$work/old.pickle" <<'PY'
import json, pickle, sys
frames = [{"filename": "model.py", "line": 12, "name": "forward"}]
def entry(action, addr, size, stream=0):
    return {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": 1700000000000000,
            "frames": frames, "compile_context": "", "user_metadata": ""}
dev0 = [entry("free_requested", 5 << 40, 4096), entry("free_completed", 5 << 40, 4096),
        entry("segment_alloc", 1 << 40, 2 << 20)]
for i in range(50):
    dev0 += [entry("alloc", (1 << 40) + i * 8192, 4000 + i, 0 if i % 3 else 94000000000000)]
for i in range(50):
    stream = 0 if i % 3 else 94000000000000
    dev0 += [entry("free_requested", (1 << 40) + i * 8192, 4000 + i, stream),
             entry("free_completed", (1 << 40) + i * 8192, 4000 + i, stream)]
dev0 += [{"action": "oom", "device_free": 0, "size": 1 << 30, "stream": 0, "time_us": 1, "frames": []},
         {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 2, "frames": []}]
dev1 = [entry("alloc", 7 << 40, 1 << 20), entry("free_requested", 7 << 40, 1 << 20)]
segments = [{"device": 0, "address": 1 << 40, "total_size": 2 << 20, "allocated_size": 0, "active_size": 0,
             "requested_size": 0, "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
             "is_expandable": False, "frames": frames,
             "blocks": [{"address": 1 << 40, "size": 2 << 20, "requested_size": 0, "state": "inactive",
                         "frames": []}]}]
snap = {"segments": segments, "device_traces": [dev0, dev1],
        "allocator_settings": {"expandable_segments": False, "PYTORCH_CUDA_ALLOC_CONF": ""},
        "external_annotations": [{"name": "step", "stage": "START", "device": 0, "time_us": 1}]}
pickle.dump(snap, open(sys.argv[1], "wb"))
json.dump({"segments": [], "device_traces": [[], [], [entry("alloc", 8, 512)]]}, open(sys.argv[2], "w"))
pickle.dump([{"device": 0, "address": 4096, "total_size": 2 << 20, "allocated_size": 0, "active_size": 0,
              "stream": 0, "segment_type": "small", "blocks": [{"size": 2 << 20, "state": "inactive"}]}],
            open(sys.argv[3], "wb"), protocol=2)
PY
"$mem" replay "$work/torch.pickle" --json >"$work/torch.json"
check_report "$work/torch.json"
python3 - "$work/torch.json" <<'PY' || fail "torch-shaped snapshot: $(cat "$work/torch.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert [d["device"] for d in r["devices"]] == [0, 1], r
assert r["devices"][0]["preexisting_blocks"] == 1 and r["devices"][0]["streams"] == 2, r
assert r["devices"][0]["ops"] == 101 and r["devices"][1]["ops"] == 2, r
PY

# Clear errors.
expect_error() { # expected-text command...
  local text=$1
  shift
  if "$@" >"$work/out" 2>"$work/err"; then fail "accepted: $*"; fi
  grep -q -- "$text" "$work/err" || fail "$*: expected '$text' in: $(cat "$work/err")"
}
expect_error "cannot open" "$mem" replay "$work/missing.json"
expect_error "expandable_segments" "$mem" replay "$work/train.json" --conf "expandable_segments:Yes"
expect_error "train, train-varlen or kv-cache" "$mem" generate --workload nosuch -o "$work/x.json"
expect_error "allocates on device 2, but the simulated machine has 2 device(s)" \
  "$mem" replay "$work/two_devices_too_many.json"
expect_error "no trace to replay" "$mem" replay "$work/old.pickle"
head -c 1000 "$work/train.pickle" >"$work/truncated.pickle"
expect_error "malformed pickle: offset" "$mem" replay "$work/truncated.pickle"
head -c 1000 "$work/train.json" >"$work/truncated.json"
expect_error "not a JSON snapshot" "$mem" replay "$work/truncated.json"
expect_error "device-memory 12XB" "$mem" replay "$work/train.json" --device-memory 12XB
expect_error "MTIA_SIM_MEMORY" "$mem" replay "$work/train.json" --device-memory 1KiB
expect_error "device-memory-budget" "$mem" generate --workload train --device-memory-budget 100MiB -o "$work/x.json"
echo "mtia-mem end to end: ok"
