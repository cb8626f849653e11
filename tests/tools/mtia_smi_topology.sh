#!/usr/bin/env bash
# mtia-smi topo -m on the hwloc fixture two_numa_pci.xml (HWLOC_XMLFILE, 2 packages with one NUMA node
# each). Package 0: a host bridge with a PCIe switch holding buses 10 and 12 and a switch holding bus 14,
# and a second host bridge holding bus 16. Package 1: a switch holding buses 11 and 13 and a nested
# switch holding bus 15. Simulated device i has bus 0x10+i and sits on NUMA node i mod 2, so 7 devices
# show every link type: 0-2 PIX, 1-5 PXB, 0-4 PHB, 0-6 NODE, 0-1 SYS.
# Usage: mtia_smi_topology.sh MTIA_SMI GOLDEN_DIR   (MTIA_SMI_UPDATE_GOLDEN=1 rewrites the golden file)
set -euo pipefail
smi=$1
golden=$2
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"

MTIA_SIM_DEVICES=7 "$smi" topo -m >"$work/topo7.txt" 2>"$work/err" || fail "topo -m: $(cat "$work/err")"
[[ ! -s $work/err ]] || fail "topo -m wrote to stderr: $(cat "$work/err")"
if [[ ${MTIA_SMI_UPDATE_GOLDEN:-0} == 1 ]]; then
  cp "$work/topo7.txt" "$golden/topo7.txt"
else
  diff -u "$golden/topo7.txt" "$work/topo7.txt" || fail "topo7.txt differs from its golden file"
fi

MTIA_SIM_DEVICES=7 "$smi" topo -m --json >"$work/topo7.json" 2>"$work/err" || fail "topo -m --json: $(cat "$work/err")"
python3 - "$work/topo7.json" <<'PY' || fail "topo7.json: $(cat "$work/topo7.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == 1
links = [d["links"] for d in r["devices"]]
assert len(links) == 7 and all(links[i][i] == "X" for i in range(7))
assert all(links[i][j] == links[j][i] for i in range(7) for j in range(7))
assert (links[0][2], links[1][5], links[0][4], links[0][6], links[0][1]) == ("PIX", "PXB", "PHB", "NODE", "SYS")
assert [d["numa_affinity"] for d in r["devices"]] == ["0", "1", "0", "1", "0", "1", "0"]
assert [d["cpu_affinity"] for d in r["devices"]] == ["0-1", "2-3"] * 3 + ["0-1"]
PY

# The devices' NUMA nodes in the device views agree with the topology.
MTIA_SIM_DEVICES=7 "$smi" --query-gpu=index,numa_node --format=csv,noheader >"$work/numa.csv"
[[ "$(cut -d' ' -f2 "$work/numa.csv" | tr '\n' ' ')" == "0 1 0 1 0 1 0 " ]] || fail "numa.csv: $(cat "$work/numa.csv")"

# A host topology hwloc cannot load: topo -m is not supported here (exit 3), with hwloc's reason on
# stderr naming the call once; the views that need no topology still work.
echo '<topology version="2.0"><object type="Machine"' >"$work/broken.xml"
HWLOC_XMLFILE=$work/broken.xml expect 3 "mtiamlDeviceGetTopology: host topology: hwloc could not load" topo -m
grep -c mtiamlDeviceGetTopology "$work/err" | grep -qx 1 || fail "the call is named more than once: $(cat "$work/err")"
HWLOC_XMLFILE=$work/broken.xml expect 3 "host topology" topo -m --json
HWLOC_XMLFILE=$work/broken.xml run broken_L.txt -L
[[ $(wc -l <"$work/broken_L.txt") == 2 ]] || fail "-L without a topology: $(cat "$work/broken_L.txt")"
echo "mtia_smi_topology: ok"
