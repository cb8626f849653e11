#!/usr/bin/env bash
# mtia-mem end to end: generate each workload, replay it with and without
# expandable segments, check the JSON report, and check that the same
# snapshot pickled by python3 (protocols 2, 3 and 4) replays to the same
# figures as its JSON. Usage: mtia_mem_e2e.sh MTIA_MEM
set -euo pipefail
mem=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

check_report() { # report.json -> fails unless the figures are sane
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
keys = ["peak_reserved_bytes", "peak_allocated_bytes", "reserved_over_allocated", "num_device_alloc",
        "num_device_free", "num_alloc_retries", "num_ooms", "ops", "ns_per_op"]
missing = [k for k in keys if k not in r]
assert not missing, f"missing keys {missing}"
assert r["peak_allocated_bytes"] > 0 and r["peak_reserved_bytes"] >= r["peak_allocated_bytes"], r
assert abs(r["reserved_over_allocated"] - r["peak_reserved_bytes"] / r["peak_allocated_bytes"]) < 1e-4, r
assert r["ops"] > 0 and r["ns_per_op"] > 0 and r["num_device_alloc"] > 0 and r["num_ooms"] == 0, r
PY
}

figures() { # report.json -> the figures that must not depend on the file format
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.pop("ns_per_op"); [d.pop("ns_per_op") for d in r["devices"]]; print(json.dumps(r, sort_keys=True))' "$1"
}

for workload in train train-varlen kv-cache; do
  "$mem" generate --workload "$workload" --steps 2 --seed 7 -o "$work/$workload.json" >/dev/null
  for conf in "" "expandable_segments:True"; do
    "$mem" replay "$work/$workload.json" ${conf:+--conf "$conf"} --json >"$work/report.json"
    check_report "$work/report.json"
  done
  "$mem" replay "$work/$workload.json" --json >"$work/from_json.json"
  for protocol in 2 3 4; do
    python3 -c 'import json,pickle,sys; pickle.dump(json.load(open(sys.argv[1])), open(sys.argv[2], "wb"), protocol=int(sys.argv[3]))' \
      "$work/$workload.json" "$work/$workload.pickle" "$protocol"
    "$mem" replay "$work/$workload.pickle" --json >"$work/from_pickle.json"
    [[ "$(figures "$work/from_json.json")" == "$(figures "$work/from_pickle.json")" ]] ||
      { echo "pickle protocol $protocol replays differently from JSON ($workload)"; exit 1; }
  done
  echo "$workload: ok"
done

# The text report and clear errors.
"$mem" replay "$work/train.json" | grep -q "reserved/allocated"
if "$mem" replay "$work/missing.json" 2>"$work/err"; then echo "a missing file replayed"; exit 1; fi
grep -q "cannot open" "$work/err"
if "$mem" replay "$work/train.json" --conf "expandable_segments:Yes" 2>"$work/err"; then echo "bad --conf accepted"; exit 1; fi
grep -q "expandable_segments" "$work/err"
if "$mem" generate --workload nosuch -o "$work/x.json" 2>"$work/err"; then echo "bad workload accepted"; exit 1; fi
grep -q "train, train-varlen or kv-cache" "$work/err"
echo "mtia-mem end to end: ok"
