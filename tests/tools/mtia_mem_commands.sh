#!/usr/bin/env bash
# mtia-mem's snapshot subcommands on the committed fixtures (tests/tools/fixtures, figures worked out in
# make_fixtures.py): summary, diff and trace figures checked exactly through their --json output (and
# the text output for the same figures), export round trips JSON -> pickle -> JSON and python3's pickle
# reading ours, plot's page, and bad files refused with exit 1 and the file's name; then the same tools
# on a snapshot our runtime writes (RUNTIME_SNAPSHOT, the program runtime_snapshot.c).
# Usage: mtia_mem_commands.sh MTIA_MEM FIXTURES_DIR RUNTIME_SNAPSHOT
set -euo pipefail
mem=$1
fx=$2
writer=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# run NAME args...: stdout to $work/NAME, and stderr must stay empty on success.
run() {
  local name=$1
  shift
  "$mem" "$@" >"$work/$name" 2>"$work/$name.err" || fail "$*: exit $? ($(cat "$work/$name.err"))"
  [[ ! -s $work/$name.err ]] || fail "$*: wrote to stderr: $(cat "$work/$name.err")"
}

check() { # python3 code with r = the parsed JSON of $work/$1
  local file=$1
  shift
  python3 - "$work/$file" "$@" <<PY || fail "$file: $(cat "$work/$file")"
import json, sys
r = json.load(open(sys.argv[1]))
$(cat)
PY
}

# summary
run summary.json summary "$fx/two_devices.json" --json
check summary.json <<'PY'
MiB = 1 << 20
d0, d1 = r["devices"]
assert r["shape"] == "PyTorch 2.x snapshot"
assert (d0["device"], d0["segments"], d0["expandable_segments"]) == (0, 5, 1), d0
assert d0["reserved_bytes"] == 44 * MiB and d0["allocated_bytes"] == 28835840 and d0["active_bytes"] == 30932992, d0
assert d0["inactive_bytes"] == 15204352 and d0["inactive_split_bytes"] == 13107200, d0
assert d0["largest_free_block_bytes"] == 6 * MiB and abs(d0["fragmentation"] - (1 - 6 / 14.5)) < 1e-12, d0
assert d0["private_pools"] == [{"pool_id": [1, 7], "segments": 1, "reserved_bytes": 4 * MiB,
                                "allocated_bytes": 3 * MiB}], d0["private_pools"]
assert [(s["site"], s["blocks"], s["bytes"]) for s in d0["top_sites"]] == [
    ("adam_step (optim.py:7)", 2, 16 * MiB), ("forward (model.py:42)", 2, 8 * MiB + MiB // 2),
    ("capture (graph.py:5)", 1, 3 * MiB)], d0["top_sites"]
assert d0["top_sites"][1]["frames"][0].startswith("c10::cuda::CUDACachingAllocator"), d0["top_sites"][1]
assert (d1["device"], d1["reserved_bytes"], d1["fragmentation"], d1["private_pools"]) == (1, 8 * MiB, 0, []), d1
PY
run summary.txt summary "$fx/two_devices.json" --top 1
grep -q "reserved *44.00 MiB  (46137344 bytes)" "$work/summary.txt" || fail "summary text: $(cat "$work/summary.txt")"
grep -q "fragmentation *0.586" "$work/summary.txt" && grep -q "pool (1, 7): 1 segment, 4.00 MiB reserved" "$work/summary.txt" ||
  fail "summary text: $(cat "$work/summary.txt")"
grep -q "(2 more sites)" "$work/summary.txt" || fail "summary --top 1: $(cat "$work/summary.txt")"
# Counts are checked with a readable refusal (CLI11's own check printed "not in range 0.000000 to 1.79e308").
for bad in 0 -1 nan 1.5; do
  if "$mem" summary "$fx/two_devices.json" --top "$bad" >"$work/top.out" 2>&1; then fail "--top $bad accepted"; fi
  grep -q -- "--top: got $bad; give a whole number of allocation sites, 1 or more" "$work/top.out" ||
    fail "--top $bad: $(cat "$work/top.out")"
done
if "$mem" generate --workload train --steps -1 -o "$work/x.json" >"$work/steps.out" 2>&1; then fail "--steps -1 accepted"; fi
grep -q -- "--steps: got -1; give a whole number of steps, 0 or more" "$work/steps.out" || fail "--steps -1: $(cat "$work/steps.out")"
run summary113.json summary "$fx/torch_1_13.pickle" --json
check summary113.json <<'PY'
d = r["devices"][0]
assert r["shape"] == "PyTorch 1.13 list of segments"
assert (d["segments"], d["reserved_bytes"], d["allocated_bytes"], d["inactive_bytes"], d["inactive_split_bytes"],
        d["largest_free_block_bytes"], d["fragmentation"]) == (2, 6 << 20, 1 << 20, 5 << 20, 3 << 20, 3 << 20, 0.4), d
assert [(s["site"], s["bytes"]) for s in d["top_sites"]] == [("build (old.py:3)", 1 << 20)], d
PY

# trace
run trace.json trace "$fx/two_devices.json" --json
check trace.json <<'PY'
d0, d1 = r["devices"]
assert r["has_trace"] is True
assert (d0["entries"], d0["peak_bytes"], d0["peak_entry"], d0["end_bytes"]) == (9, 31922944, 4, 28422944), d0
assert d0["peak_time_us"] == 1700000002500000 and d0["peak_time"] == "2023-11-14T22:13:22.500000Z", d0
assert d0["peak_offset_s"] == 2.5 and d0["span_s"] == 4, d0
assert (d0["prelude_bytes"], d0["prelude_blocks"]) == (15631488, 3), d0
assert (d0["allocs"], d0["frees"], d0["allocs_per_s"], d0["frees_per_s"]) == (4, 2, 1.0, 0.5), d0
assert d0["ooms"] == [{"time_us": 1700000003500000, "size": 20 << 20, "device_free": 1 << 20, "stream": 0,
                       "site": "forward (model.py:42)"}], d0["ooms"]
assert [(s["site"], s["blocks"], s["bytes"]) for s in d0["live_at_peak"]] == [
    ("adam_step (optim.py:7)", 2, 16 << 20), ("forward (model.py:42)", 1, 8000000),
    ("attention (model.py:50)", 1, 4000000), ("capture (graph.py:5)", 1, 3 << 20)], d0["live_at_peak"]
assert (d1["device"], d1["peak_bytes"], d1["peak_entry"], d1["allocs"], d1["frees"]) == (1, 9 << 20, 0, 1, 1), d1
assert abs(d1["allocs_per_s"] - 5000) < 1e-6, d1
PY
run trace.txt trace "$fx/two_devices.json"
grep -q "peak live .*(31922944 bytes) at 2023-11-14T22:13:22.500000Z (+2.500000 s), entry 4" "$work/trace.txt" ||
  fail "trace text: $(cat "$work/trace.txt")"
grep -q "allocations *4 (1.0/s)" "$work/trace.txt" || fail "trace text: $(cat "$work/trace.txt")"
run trace113.txt trace "$fx/torch_1_13.pickle"
grep -q "no trace" "$work/trace113.txt" || fail "trace of a 1.13 file: $(cat "$work/trace113.txt")"
run trace113.json trace "$fx/torch_1_13.pickle" --json
check trace113.json <<'PY'
assert r["has_trace"] is False and "no trace" in r["note"] and r["devices"] == [], r
PY

# diff
run diff.json diff "$fx/diff_before.json" "$fx/diff_after.pickle" --json
check diff.json <<'PY'
MiB = 1 << 20
assert (r["new_blocks"], r["new_bytes"], r["freed_blocks"], r["freed_bytes"]) == (3, 7 * MiB, 1, 2 * MiB), r
assert (r["before_live_blocks"], r["before_live_bytes"], r["after_live_blocks"], r["after_live_bytes"]) == (
    2, 3 * MiB, 4, 8 * MiB), r
assert [(s["site"], s["blocks"], s["bytes"]) for s in r["new_sites"]] == [
    ("project (layer.py:3)", 2, 6 * MiB), ("accumulate (grad.py:1)", 1, MiB)], r["new_sites"]
assert r["devices"] == [{"device": 0, "new_blocks": 3, "new_bytes": 7 * MiB, "freed_blocks": 1,
                         "freed_bytes": 2 * MiB}], r
PY
run diff.txt diff "$fx/diff_before.json" "$fx/diff_after.pickle"
grep -q "freed since .*: 1 blocks, 2.00 MiB (2097152 bytes)" "$work/diff.txt" || fail "diff text: $(cat "$work/diff.txt")"
run same.json diff "$fx/two_devices.json" "$fx/two_devices.json" --json
check same.json <<'PY'
assert r["new_blocks"] == 0 and r["freed_blocks"] == 0 and r["new_sites"] == [], r
PY

# export: JSON -> pickle -> JSON keeps everything; python3 reads our pickle as our JSON; 1.13 becomes 2.x.
run export1 export "$fx/two_devices.json" -o "$work/a.pickle"
run export2 export "$work/a.pickle" -o "$work/b.json"
run export3 export "$work/b.json" --format pickle -o "$work/c.out"
cmp -s "$work/a.pickle" "$work/c.out" || fail "export: the pickle of the exported JSON differs from the first pickle"
python3 - "$fx/two_devices.json" "$work/a.pickle" "$work/b.json" <<'PY' || fail "export round trip"
import json, pickle, sys
def lists(v):  # tuples (pool ids) in the pickle are JSON's lists
    if isinstance(v, (list, tuple)): return [lists(x) for x in v]
    if isinstance(v, dict): return {k: lists(x) for k, x in v.items()}
    return v
original = json.load(open(sys.argv[1]))
ours = pickle.load(open(sys.argv[2], "rb"))
again = json.load(open(sys.argv[3]))
assert isinstance(ours["segments"][2]["segment_pool_id"], tuple)
assert lists(ours) == again, "python3 reads our pickle differently from our JSON"
for key in original:
    assert lists(original[key]) == again[key], f"{key} changed in the round trip"
assert type(again["allocator_settings"]["garbage_collection_threshold"]) is float
e = again["device_traces"][1][0]
assert (e["pool_id"], e["user_metadata"], e["compile_context"]) == ([2, 1], "batch=3", "Torch-Compiled Region: 0/0"), e
PY
run export113 export "$fx/torch_1_13.pickle" -o "$work/old.json" --json
check export113 <<'PY'
assert r["shape"] == "PyTorch 1.13 list of segments" and r["format"] == "json", r
assert (r["segments"], r["trace_entries"]) == (2, 0), r
PY
python3 - "$work/old.json" <<'PY' || fail "1.13 export: $(head -c 600 "$work/old.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert isinstance(s, dict) and s["device_traces"] == [] and len(s["segments"]) == 2, s
b = s["segments"][0]["blocks"][0]
assert (b["address"], b["requested_size"], b["frames"][0]["name"]) == (1 << 30, 1000000, "build"), b
assert s["segments"][0]["blocks"][1]["address"] == (1 << 30) + (1 << 20)
PY

# plot: one page, three sections per device, nothing fetched from elsewhere.
run plot.txt plot "$fx/two_devices.json" -o "$work/plot.html"
for text in "Active memory over time" "Segment map" "Top allocation sites" 'id="device-0"' 'id="device-1"' "<svg" \
  "adam_step (optim.py:7)" "live memory (MiB)" "time since the first entry (s)" "active_pending_free"; do
  grep -qF "$text" "$work/plot.html" || fail "plot: no '$text'"
done
! grep -qi "http" "$work/plot.html" || fail "plot: refers to http: $(grep -io '.\{40\}http.\{40\}' "$work/plot.html" | head -3)"
! grep -qiE "<script[^>]* src=|<link" "$work/plot.html" || fail "plot: loads something from elsewhere"
run plot113.txt plot "$fx/torch_1_13.pickle" -o "$work/plot113.html"
grep -q "no timeline" "$work/plot113.html" && grep -q "Segment map" "$work/plot113.html" || fail "plot of a 1.13 file"

# Bad files: exit 1, "mtia-mem: <file>: <what>" on stderr, nothing on stdout.
expect_error() { # expected-text args...
  local text=$1
  shift
  local rc=0
  "$mem" "$@" >"$work/out" 2>"$work/err" || rc=$?
  [[ $rc == 1 ]] || fail "$*: exit code $rc, expected 1"
  grep -qF -- "$text" "$work/err" || fail "$*: expected '$text' in: $(cat "$work/err")"
  [[ ! -s $work/out ]] || fail "$*: wrote to stdout: $(cat "$work/out")"
}
head -c 700 "$work/a.pickle" >"$work/cut.pickle"
printf '{"segments": [{"address": 1}]}' >"$work/bad.json"
python3 -c 'import pickle,sys; l=[]; l.append(l); pickle.dump({"segments": [], "allocator_settings": {"x": l}}, open(sys.argv[1], "wb"))' "$work/deep.pickle"
cut="mtia-mem: $work/cut.pickle: malformed pickle: offset"
expect_error "$cut" summary "$work/cut.pickle"
expect_error "$cut" trace "$work/cut.pickle" --json
expect_error "$cut" plot "$work/cut.pickle" -o "$work/x.html"
expect_error "$cut" export "$work/cut.pickle" -o "$work/x.json"
expect_error "$cut" diff "$fx/diff_before.json" "$work/cut.pickle"
expect_error "mtia-mem: $work/bad.json: segments[0]: no 'total_size'" summary "$work/bad.json"
expect_error "mtia-mem: $work/deep.pickle: allocator_settings.x[0][0]" summary "$work/deep.pickle"
expect_error "nested more than 64 levels" summary "$work/deep.pickle"
expect_error "mtia-mem: $work/missing.json: cannot open" diff "$fx/diff_before.json" "$work/missing.json"
expect_error "mtia-mem: $work: cannot open: not a regular file" trace "$work"
expect_error "say --format json or pickle" export "$fx/two_devices.json" -o "$work/x.txt"

# A snapshot of our runtime (JSON and pickle): what runtime_snapshot.c allocated, named by its functions.
MTIA_SIM_DEVICES=2 "$writer" "$work/rt.json" "$work/rt.pickle" || fail "runtime_snapshot failed"
for format in json pickle; do
  run "rt-summary.$format" summary "$work/rt.$format" --json
  run "rt-trace.$format" trace "$work/rt.$format" --json
done
check rt-summary.json "$writer" <<'PY'
import os
d = r["devices"][0]
assert d["device"] == 0 and d["allocated_bytes"] == 4718592, d
name = os.path.basename(sys.argv[2])
sites = [(s["site"].split(" (")[0], s["blocks"], s["bytes"]) for s in d["top_sites"]]
assert sites == [("allocate_activations", 2, 4 << 20), ("allocate_workspace", 1, 512 << 10)], d["top_sites"]
assert name in d["top_sites"][0]["site"], d["top_sites"][0]
PY
check rt-trace.json <<'PY'
d = r["devices"][0]
assert r["has_trace"] and d["device"] == 0, r
assert (d["allocs"], d["frees"], d["peak_bytes"], d["end_bytes"], d["prelude_bytes"]) == (4, 1, 4718592, 4718592, 0), d
assert d["peak_time"].endswith("Z") and d["ooms"] == [], d
assert d["live_at_peak"][0]["site"].startswith("allocate_activations ("), d["live_at_peak"]
PY
# The two files were taken one after the other: the same segments; the second's trace has one more
# "snapshot" entry (each snapshot records one), so its span differs but not its figures.
python3 - "$work"/rt-summary.{json,pickle} "$work"/rt-trace.{json,pickle} <<'PY' || fail "the runtime's JSON and pickle read differently"
import json, sys
s1, s2, t1, t2 = (json.load(open(f)) for f in sys.argv[1:])
assert s1["devices"] == s2["devices"], (s1, s2)
keys = ["peak_bytes", "peak_entry", "peak_time_us", "end_bytes", "allocs", "frees", "ooms", "live_at_peak"]
for a, b in zip(t1["devices"], t2["devices"]):
    assert [a[k] for k in keys] == [b[k] for k in keys], (a, b)
    assert b["entries"] == a["entries"] + 1, (a, b)
PY
run rt-export export "$work/rt.json" -o "$work/rt-again.pickle"
run rt-export2 export "$work/rt-again.pickle" -o "$work/rt-again.json"
run rt-export3 export "$work/rt.pickle" -o "$work/rt-pickle.json"
python3 - "$work/rt.json" "$work/rt-again.json" "$work/rt.pickle" "$work/rt-pickle.json" <<'PY' ||
import json, pickle, sys
def lists(v):
    if isinstance(v, (list, tuple)): return [lists(x) for x in v]
    if isinstance(v, dict): return {k: lists(x) for k, x in v.items()}
    return v
runtime_json, again, runtime_pickle, ours = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), \
    lists(pickle.load(open(sys.argv[3], "rb"))), json.load(open(sys.argv[4]))
assert again == runtime_json, "export changed the runtime's JSON snapshot"
assert ours == runtime_pickle, "we read the runtime's pickle differently from python3"
PY
  fail "the runtime's snapshot does not survive export"
echo "mtia-mem commands: ok"
