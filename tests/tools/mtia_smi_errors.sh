#!/usr/bin/env bash
# mtia-smi's error contract: bad arguments exit 2, a device the machine
# lacks or a broken configuration gives its own code (permission and registry-unavailable: see
# mtia_smi_processes.sh, which has a registry to spoil); every failure prints a message on stderr and
# nothing on stdout.
# Usage: mtia_smi_errors.sh MTIA_SMI REGISTRY_LAYOUT_HPP (the registry's layout version names its objects)
set -euo pipefail
smi=$1
layout=$(sed -n 's/.*kLayoutVersion = \([0-9]*\);.*/\1/p' "$2")
[[ -n $layout ]] || { echo "FAIL: no kLayoutVersion in $2" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"

expect 2 "--nosuch" --nosuch
expect 2 "unknown field 'memory.bogus'" --query-gpu=index,memory.bogus --format=csv
expect 2 "unknown field 'vram'" --query-compute-apps=pid,vram --format=csv
expect 2 "'tsv' is not valid" --query-gpu=index --format=tsv
expect 2 "--format goes with" --format=csv
expect 2 "need --format" --query-gpu=index
expect 2 "excludes" -L -q
expect 2 "Could not convert" -l soon
# Numeric options share one rule: finite, above 0 and bounded for seconds, and a message that names the
# option, what was given and what is accepted (CLI11 alone took 0 and nan for -l, refused -1 vaguely).
for bad in 0 -1 nan inf 100000; do
  expect 2 "-l/--loop: got $bad; give a number of seconds above 0 and at most 86400" -l "$bad"
  expect 2 "dmon -d/--delay: got $bad; give a number of seconds above 0 and at most 86400" dmon -d "$bad"
  expect 2 "mem snapshot --timeout: got $bad; give a number of seconds above 0 and at most 3600" \
    mem snapshot -p 1 -o x.json --timeout "$bad"
done
expect 2 "-c/--count: got -1; give a number of repeats (0: until interrupted), 0 to 2147483647" -c -1
expect 2 "give -m" topo
expect 2 "frobnicate" frobnicate
expect 2 "--machine-prefix goes with --all-machines" cleanup --machine-prefix test-
expect 2 "-o" mem snapshot -p 1
expect 2 "--pid" mem snapshot -o x.json
expect 2 "mem snapshot -p/--pid: got 0; give a process id, 1 to 2147483647" mem snapshot -p 0 -o x.json
expect 2 "--all-machines goes with" --all-machines -q
expect 2 "--all-machines goes with" --all-machines topo -m
MTIA_SIM_MEMORY=lots expect 2 "MTIA_SIM_MEMORY" -L
# --all-machines skips (and reports on stderr) an object that only looks like one of ours: here one
# of another owner in our registry directory (only root can put one there). Needs root to plant it.
[[ $(id -u) != 0 || -e /dev/shm/mtia.u0 || -L /dev/shm/mtia.u0 ]] || mkdir -m 0700 /dev/shm/mtia.u0
if [[ $(id -u) == 0 ]] && getent passwd nobody >/dev/null && [[ -d /dev/shm/mtia.u0 && ! -L /dev/shm/mtia.u0 ]]; then
  planted=/dev/shm/mtia.u0/mtia_registry.v$layout.u0.test-planted-by-nobody.$$
  leftovers+=("$planted" "$planted.lock")
  install -m 600 /dev/null "$planted.lock"
  install -o nobody -m 600 /dev/null "$planted"
  truncate -s 1M "$planted"
  got=0
  "$smi" --all-machines -L >"$work/out" 2>"$work/err" || got=$?
  [[ $got == 0 ]] || fail "--all-machines with a planted object: exit $got ($(cat "$work/err"))"
  grep -qF "skipping machine" "$work/err" || fail "--all-machines did not report the planted object: $(cat "$work/err")"
  grep -qF "belongs to uid" "$work/err" || fail "--all-machines did not say whose object it is: $(cat "$work/err")"
  rm -f "$planted" "$planted.lock"
fi
echo "mtia_smi_errors: ok"
