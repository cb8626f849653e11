#!/usr/bin/env bash
# Every mtia-smi view in every format on an idle 2-device machine of 1 GiB devices placed by the
# two-socket hwloc fixture: text layouts against golden files (version and uuids normalised), CSV
# exactly, JSON parsed (schema_version, null for what is unavailable), loops as repeated CSV rows and
# JSON Lines. stdout carries only data and stderr stays empty.
# Usage: mtia_smi_views.sh MTIA_SMI GOLDEN_DIR   (MTIA_SMI_UPDATE_GOLDEN=1 rewrites the golden files)
set -euo pipefail
smi=$1
golden=$2
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"

normalise() { sed -E -e 's/MTIA-SMI( version +:)? [0-9]+\.[0-9]+\.[0-9]+/MTIA-SMI\1 VERSION/' \
  -e 's/MTIA-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/MTIA-UUID/g' "$1"; }

compare_golden() { # compare_golden NAME: normalised $work/NAME against $golden/NAME
  local name=$1
  if [[ ${MTIA_SMI_UPDATE_GOLDEN:-0} == 1 ]]; then
    normalise "$work/$name" >"$golden/$name"
    return
  fi
  diff -u "$golden/$name" <(normalise "$work/$name") || fail "$name differs from its golden file"
}

json() { # json FILE python...: r = the parsed document (every line when FILE holds JSON Lines)
  local file=$1
  python3 - "$work/$file" <<PY || fail "$file: $(cat "$work/$file")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
docs = [json.loads(line) for line in lines]
r = docs[0]
$(cat)
PY
}

# The default view, -L, -q, dmon, topo -m: golden layouts.
run summary.txt
compare_golden summary.txt
run list.txt -L
compare_golden list.txt
run detail.txt -q
compare_golden detail.txt
run dmon.txt dmon -c 2 -d 0.05
compare_golden dmon.txt
run topo.txt topo -m
compare_golden topo.txt

# The same views as JSON.
run summary.json --json
json summary.json <<'PY'
assert len(docs) == 1 and r["schema_version"] == 1
assert [d["index"] for d in r["devices"]] == [0, 1]
d0, d1 = r["devices"]
assert d0["name"] == "MTIA Sim Device" and d0["pci_bus_id"] == "0000:10:00.0" and d1["pci_bus_id"] == "0000:11:00.0"
assert d0["numa_node"] == 0 and d1["numa_node"] == 1
assert d0["memory_total_bytes"] == 1 << 30 and d0["memory_used_bytes"] == 0
assert d0["utilization_percent"] == 0 and d1["utilization_percent"] == 0  # nothing runs: deterministic
assert d0["uuid"].startswith("MTIA-") and d0["uuid"] != d1["uuid"]
assert r["processes"] == []
PY
run list.json -L --json
json list.json <<'PY'
assert r["schema_version"] == 1 and [d["index"] for d in r["devices"]] == [0, 1]
assert set(r["devices"][0]) == {"index", "name", "uuid"}
PY
run detail.json -q --json
json detail.json <<'PY'
assert r["schema_version"] == 1 and all(d["process_list"] == [] for d in r["devices"])
PY
run dmon.json dmon -c 3 -d 0.05 --json
json dmon.json <<'PY'
assert len(docs) == 3, docs
for doc in docs:
    assert doc["schema_version"] == 1
    assert [(d["index"], d["memory_used_mib"], d["memory_total_mib"], d["utilization_percent"]) for d in doc["devices"]] == [(0, 0, 1024, 0), (1, 0, 1024, 0)]
PY
run topo.json topo -m --json
json topo.json <<'PY'
assert r["schema_version"] == 1
assert [d["links"] for d in r["devices"]] == [["X", "SYS"], ["SYS", "X"]]
assert [(d["cpu_affinity"], d["numa_affinity"]) for d in r["devices"]] == [("0-1", "0"), ("2-3", "1")]
PY

# --query-gpu (and its alias) in every CSV form and as JSON.
fields=index,name,pci.bus_id,numa_node,memory.total,memory.used,memory.free,utilization.gpu,count,processes
run q.csv --query-gpu=$fields --format=csv
[[ "$(cat "$work/q.csv")" == "index, name, pci.bus_id, numa_node, memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%], count, processes
0, MTIA Sim Device, 0000:10:00.0, 0, 1024 MiB, 0 MiB, 1024 MiB, 0 %, 2, 0
1, MTIA Sim Device, 0000:11:00.0, 1, 1024 MiB, 0 MiB, 1024 MiB, 0 %, 2, 0" ]] || fail "q.csv: $(cat "$work/q.csv")"
run q_noheader.csv --query-device=$fields --format=csv,noheader
[[ "$(cat "$work/q_noheader.csv")" == "$(tail -n +2 "$work/q.csv")" ]] || fail "q_noheader.csv: $(cat "$work/q_noheader.csv")"
run q_nounits.csv --query-gpu=$fields --format=csv,noheader,nounits
[[ "$(cat "$work/q_nounits.csv")" == "0, MTIA Sim Device, 0000:10:00.0, 0, 1024, 0, 1024, 0, 2, 0
1, MTIA Sim Device, 0000:11:00.0, 1, 1024, 0, 1024, 0, 2, 0" ]] || fail "q_nounits.csv: $(cat "$work/q_nounits.csv")"
run q_nounits_header.csv --query-gpu=index,memory.total --format=csv,nounits
[[ "$(cat "$work/q_nounits_header.csv")" == $'index, memory.total [MiB]\n0, 1024\n1, 1024' ]] ||
  fail "q_nounits_header.csv: $(cat "$work/q_nounits_header.csv")"
run uuid.csv --query-gpu=uuid --format=csv,noheader
run list.txt -L
[[ "$(sed -E 's/.*UUID: (.*)\)/\1/' "$work/list.txt")" == "$(cat "$work/uuid.csv")" ]] || fail "uuids of -L and --query-gpu differ"
run q.json --query-gpu=$fields,uuid,timestamp --json
json q.json <<'PY'
assert r["schema_version"] == 1
d0, d1 = r["devices"]
assert d0["index"] == 0 and d0["memory.total"] == 1024 and d0["memory.free"] == 1024 and d0["utilization.gpu"] == 0
assert d1["numa_node"] == 1 and d1["count"] == 2 and d1["processes"] == 0 and isinstance(d1["uuid"], str)
assert list(d0) == ["index", "name", "pci.bus_id", "numa_node", "memory.total", "memory.used", "memory.free",
                    "utilization.gpu", "count", "processes", "uuid", "timestamp"]
PY

# --query-compute-apps on an idle machine: a header only, an empty list.
run apps.csv --query-compute-apps=pid,process_name,device,used_memory,memory.reserved,memory.allocated,memory.peak,memory.peak_reserved,gpu_uuid,gpu_bus_id --format=csv
[[ "$(cat "$work/apps.csv")" == "pid, process_name, device, used_memory [MiB], memory.reserved [MiB], memory.allocated [MiB], memory.peak [MiB], memory.peak_reserved [MiB], gpu_uuid, gpu_bus_id" ]] ||
  fail "apps.csv: $(cat "$work/apps.csv")"
run apps.json --query-compute-apps=pid --json
json apps.json <<'PY'
assert r["schema_version"] == 1 and r["processes"] == []
PY

# Field lists.
run help_gpu.txt --help-query-gpu
for f in index name uuid pci.bus_id numa_node memory.total memory.used memory.free utilization.gpu count; do
  grep -q "^\"$f\"" "$work/help_gpu.txt" || fail "--help-query-gpu lacks $f"
done
run help_apps.txt --help-query-compute-apps
for f in pid process_name used_memory memory.reserved memory.allocated memory.peak; do
  grep -q "^\"$f\"" "$work/help_apps.txt" || fail "--help-query-compute-apps lacks $f"
done

# Loops: CSV with one header then rows per tick; JSON Lines.
run loop.csv --query-gpu=index,memory.used --format=csv -l 0.05 -c 3
[[ "$(cat "$work/loop.csv")" == $'index, memory.used [MiB]\n0, 0 MiB\n1, 0 MiB\n0, 0 MiB\n1, 0 MiB\n0, 0 MiB\n1, 0 MiB' ]] ||
  fail "loop.csv: $(cat "$work/loop.csv")"
run loop.json --json -l 0.05 -c 3
json loop.json <<'PY'
assert len(docs) == 3 and all(d["schema_version"] == 1 and len(d["devices"]) == 2 for d in docs)
assert docs[0]["timestamp_ms"] <= docs[1]["timestamp_ms"] <= docs[2]["timestamp_ms"]
PY
run loop_list.json -L --json -c 2 -l 0.05
json loop_list.json <<'PY'
assert len(docs) == 2 and docs[0] == docs[1]
PY
echo "mtia_smi_views: ok"
