#!/usr/bin/env bash
# mtia-smi over a driver without the driver ABI 1.6 machine entries (the minimal out-of-tree driver,
# named by MTIA_DRIVER): every view of the machine's devices exits 3 (not supported), prints nothing on
# stdout and names the entry the driver lacks on stderr.
# Usage: smi_without_machine_entries.sh MTIA_SMI
set -euo pipefail
smi=$1
[[ -n ${MTIA_DRIVER:-} ]] || { echo "FAIL: MTIA_DRIVER is not set" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/../tools/smi_test_lib.sh"

expect 3 "lacks 'machineGetSpec'" -L
expect 3 "driver 'minimal'" -L
expect 3 "lacks 'machineGetSpec'"
expect 3 "lacks 'machineGetSpec'" -q
expect 3 "lacks 'machineGetSpec'" --query-gpu=index,name --format=csv
expect 3 "lacks 'machineGetSpec'" topo -m
echo "smi_without_machine_entries: ok"
