#!/usr/bin/env bash
# mtia-smi with a second process: smi_holder allocates 96 MiB on device 1 and shows up, with its
# figures, in the process table, --query-compute-apps (CSV and JSON), -q and the device memory; after
# SIGKILL it is gone from the next query and its memory is free again; --all-machines shows it too.
# Usage: mtia_smi_processes.sh MTIA_SMI SMI_HOLDER
set -euo pipefail
smi=$1
holder=$2
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"

run before.csv --query-gpu=index,memory.used --format=csv,noheader,nounits
[[ "$(cat "$work/before.csv")" == $'0, 0\n1, 0' ]] || fail "machine not idle at start: $(cat "$work/before.csv")"

"$holder" 96 1 >"$work/holder.out" &
pid=$!
pids+=("$pid")
for _ in $(seq 1 200); do
  [[ -s $work/holder.out ]] && break
  kill -0 "$pid" 2>/dev/null || fail "smi_holder died"
  sleep 0.05
done
[[ "$(cat "$work/holder.out")" == ready ]] || fail "smi_holder never got ready"

run apps.csv --query-compute-apps=pid,process_name,device,used_memory,memory.reserved,memory.allocated,memory.peak --format=csv,noheader,nounits
[[ "$(cat "$work/apps.csv")" == "$pid, smi_holder, 1, 96, 96, 96, 96" ]] || fail "apps.csv: $(cat "$work/apps.csv")"

run apps.json --query-compute-apps=pid,process_name,gpu_bus_id,memory.allocated --json
python3 - "$work/apps.json" "$pid" <<'PY' || fail "apps.json: $(cat "$work/apps.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == 1
assert r["processes"] == [{"pid": int(sys.argv[2]), "process_name": "smi_holder", "gpu_bus_id": "0000:11:00.0",
                           "memory.allocated": 96}], r
PY

run used.csv --query-gpu=index,memory.used,memory.free,memory.total --format=csv,noheader,nounits
[[ "$(cat "$work/used.csv")" == $'0, 0, 1024, 1024\n1, 96, 928, 1024' ]] || fail "used.csv: $(cat "$work/used.csv")"

run table.txt
grep -Eq "^\|      1 \| +$pid \| smi_holder +\| +96MiB \| +96MiB \| +96MiB \|$" "$work/table.txt" ||
  fail "process row missing from the table: $(cat "$work/table.txt")"
grep -q "96MiB / 1024MiB" "$work/table.txt" || fail "device memory missing from the table"

run detail.json -q --json
python3 - "$work/detail.json" "$pid" <<'PY' || fail "detail.json: $(cat "$work/detail.json")"
import json, sys
r = json.load(open(sys.argv[1]))
d0, d1 = r["devices"]
assert d0["process_list"] == [] and d0["memory_used_bytes"] == 0
(p,) = d1["process_list"]
assert p["pid"] == int(sys.argv[2]) and p["name"] == "smi_holder"
assert p["memory_reserved_bytes"] == 96 << 20 and p["memory_allocated_bytes"] == 96 << 20
assert d1["memory_used_bytes"] == 96 << 20 and d1["processes"] == 1
PY

# --all-machines lists this machine (among whatever else this user runs) with the process.
run all.json --all-machines --json
python3 - "$work/all.json" "$pid" "$MTIA_SIM_MACHINE" <<'PY' || fail "all.json: $(cat "$work/all.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == 1
(m,) = [m for m in r["machines"] if m["machine"].endswith(" machine=" + sys.argv[3])]
assert m["machine"].startswith("devices=2 memory=1073741824 ")
assert [p["pid"] for p in m["view"]["processes"]] == [int(sys.argv[2])]
PY
run all.txt --all-machines
grep -q "^Machine: devices=2 memory=1073741824 engines=[0-9]* machine=$MTIA_SIM_MACHINE\$" "$work/all.txt" || fail "all.txt lacks the machine"
run all_list.txt --all-machines -L
run list.txt -L
grep -qF "$(cat "$work/list.txt")" "$work/all_list.txt" || fail "all_list.txt lacks this machine's devices"

# Seen from a pid namespace of its own (mtia-smi in a new one, the holder outside), the holder's pid
# means nothing: [N/A] in CSV, null in JSON, N/A in the table; its figures and name stay. Needs
# CAP_SYS_ADMIN for the namespace (CI runs as root).
if unshare --pid --fork --mount-proc true 2>/dev/null; then
  outer=$smi
  smi=$work/smi_in_new_pidns
  printf '#!/bin/sh\nexec unshare --pid --fork --mount-proc "%s" "$@"\n' "$outer" >"$smi"
  chmod +x "$smi"
  run ns.csv --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits
  [[ "$(cat "$work/ns.csv")" == "[N/A], smi_holder, 96" ]] || fail "ns.csv: $(cat "$work/ns.csv")"
  run ns_units.csv --query-compute-apps=pid,used_memory --format=csv
  [[ "$(cat "$work/ns_units.csv")" == $'pid, used_memory [MiB]\n[N/A], 96 MiB' ]] || fail "ns_units.csv: $(cat "$work/ns_units.csv")"
  run ns.json --query-compute-apps=pid,process_name,memory.allocated --json
  python3 - "$work/ns.json" <<'PY' || fail "ns.json: $(cat "$work/ns.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["processes"] == [{"pid": None, "process_name": "smi_holder", "memory.allocated": 96}], r
PY
  run ns_table.txt
  grep -Eq "^\|      1 \| +N/A \| smi_holder +\| +96MiB \| +96MiB \| +96MiB \|$" "$work/ns_table.txt" ||
    fail "ns_table.txt: $(cat "$work/ns_table.txt")"
  smi=$outer
else
  echo "mtia_smi_processes: the pid-namespace part needs CAP_SYS_ADMIN (unshare --pid): not run"
fi

kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pids=()

run after.csv --query-compute-apps=pid,process_name --format=csv,noheader
[[ ! -s $work/after.csv ]] || fail "killed process still listed: $(cat "$work/after.csv")"
run after_used.csv --query-gpu=index,memory.used --format=csv,noheader,nounits
[[ "$(cat "$work/after_used.csv")" == $'0, 0\n1, 0' ]] || fail "memory not freed: $(cat "$work/after_used.csv")"
run after_table.txt
grep -q "No running processes found" "$work/after_table.txt" || fail "table still lists a process"

# The registry the two processes shared, spoiled: a mode other than 0600 is refused (exit 4), an object
# that is not a registry is "registry unavailable" (exit 9); either way a message and no data.
objects=(/dev/shm/mtia.u"$(id -u)"/mtia_registry.v*.u"$(id -u)"."$MTIA_SIM_MACHINE".*)
obj=
for o in "${objects[@]}"; do [[ $o == *.lock ]] || obj=$o; done
[[ -n $obj && -f $obj ]] || fail "no registry object for $MTIA_SIM_MACHINE in /dev/shm/mtia.u$(id -u)"
expect_failure() { # expect_failure CODE TEXT
  local got=0
  "$smi" -L >"$work/bad.out" 2>"$work/bad.err" || got=$?
  [[ $got == "$1" ]] || fail "spoiled registry: exit $got, expected $1 ($(cat "$work/bad.err"))"
  [[ ! -s $work/bad.out ]] || fail "spoiled registry: wrote to stdout"
  grep -qF -- "$2" "$work/bad.err" || fail "spoiled registry: stderr lacks '$2': $(cat "$work/bad.err")"
}
chmod 0644 "$obj"
expect_failure 4 "registry"
chmod 0600 "$obj"
run restored.csv --query-gpu=index --format=csv,noheader
truncate -s 0 "$obj"
expect_failure 9 "registry unavailable"
rm -f "$obj" "$obj.lock"
echo "mtia_smi_processes: ok"
