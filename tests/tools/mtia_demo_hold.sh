#!/usr/bin/env bash
# The two-terminal demo: two `mtia-demo --hold` (one through MTIA_DEMO_HOLD=1) run their workload and
# stay, both listed by mtia-smi --query-compute-apps; SIGKILL one and the next query no longer lists
# it, and device 0's used memory drops by what it held there.
# Usage: mtia_demo_hold.sh MTIA_DEMO MTIA_SMI
set -euo pipefail
demo=$1
smi=$2
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"

wait_holding() { # wait_holding PID OUT
  for _ in $(seq 1 1200); do
    grep -q "^mtia-demo: holding 64 MiB of device 0 as pid $1;" "$2" && return 0
    kill -0 "$1" 2>/dev/null || fail "demo $1 exited: $(tail -5 "$2")"
    sleep 0.05
  done
  fail "demo $1 never reached its hold: $(tail -5 "$2")"
}

"$demo" --hold </dev/null >"$work/a.out" 2>&1 &
a=$!
pids+=("$a")
MTIA_DEMO_HOLD=1 "$demo" </dev/null >"$work/b.out" 2>&1 &
b=$!
pids+=("$b")
wait_holding "$a" "$work/a.out"
wait_holding "$b" "$work/b.out"
grep -q "all results correct" "$work/a.out" || fail "demo a: $(cat "$work/a.out")"

"$smi" --query-compute-apps=pid,device,used_memory --format=csv,noheader,nounits >"$work/apps.csv"
listed() { awk -F', ' -v p="$1" '$1 == p' "$work/apps.csv" | wc -l; }
(($(listed "$a") > 0)) || fail "demo $a not listed: $(cat "$work/apps.csv")"
(($(listed "$b") > 0)) || fail "demo $b not listed: $(cat "$work/apps.csv")"
# What b holds on device 0 (at least the 64 MiB of its hold).
b_dev0=$(awk -F', ' -v p="$b" '$1 == p && $2 == 0 {print $3}' "$work/apps.csv")
((b_dev0 >= 64)) || fail "demo $b holds ${b_dev0:-nothing} MiB of device 0: $(cat "$work/apps.csv")"
used_before=$("$smi" --query-gpu=memory.used --format=csv,noheader,nounits | head -1)

kill -9 "$b"
wait "$b" 2>/dev/null || true
"$smi" --query-compute-apps=pid,device,used_memory --format=csv,noheader,nounits >"$work/apps.csv"
(($(listed "$b") == 0)) || fail "killed demo $b still listed: $(cat "$work/apps.csv")"
(($(listed "$a") > 0)) || fail "demo $a vanished too: $(cat "$work/apps.csv")"
used_after=$("$smi" --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
((used_after == used_before - b_dev0)) || fail "device 0 used ${used_before} MiB, then ${used_after} MiB; demo $b held ${b_dev0} MiB"
echo "mtia_demo_hold: ok"
