#!/usr/bin/env bash
# mtia-smi against live processes: a busy smi_holder shows non-zero utilisation; mem snapshot -p asks a
# holder that records history for its snapshot (pickle and JSON), which mtia-mem reads with the
# segments the holder allocated; the error exits of mem snapshot (6 no such process, 4 another user's,
# 255 no answer in time, after which the withdrawn request leaves no file, 2 bad arguments); cleanup
# keeps a registry in use, then reaps the dead holders' slots and removes the registry once nobody
# uses it; a file size limit below the registry's size is reported as such; MTIA_SIM_MACHINE's limit is
# the same for the runtime and mtia-smi.
# Usage: mtia_smi_remote.sh MTIA_SMI SMI_HOLDER MTIA_MEM
set -euo pipefail
smi=$1
holder=$2
mem=$3
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"

# How many snapshot files in this user's request directory are newer than $1. The unit tests' short-lived
# "hello" files there do not count, and a file removed while find looks at it is no error.
request_files_newer() {
  { find /dev/shm/mtia.u"$(id -u)"/requests -ignore_readdir_race -name "*.slot*" -newer "$1" \
    -exec sh -c 'head -c 5 "$1" 2>/dev/null | grep -qv "^hello"' _ {} \; -print 2>/dev/null || true; } | wc -l
}

start_holder() { # start_holder NAME args...: sets $started to its pid once it printed "ready"
  local name=$1
  shift
  "$holder" "$@" >"$work/$name.out" &
  started=$!
  pids+=("$started")
  for _ in $(seq 1 400); do
    [[ -s $work/$name.out ]] && break
    kill -0 "$started" 2>/dev/null || fail "smi_holder $* died"
    sleep 0.05
  done
  [[ "$(cat "$work/$name.out")" == ready ]] || fail "smi_holder $* never got ready"
}

# --- A file size limit (ulimit -f) below the registry's size: said as such, with the file, not as device
# memory exhausted, and no SIGXFSZ (whose default action would kill the program). ---
fsize_machine=test-mtia_smi_remote-fsize-$$
got=0
(ulimit -f 64; MTIA_SIM_MACHINE=$fsize_machine exec "$holder" 1 0) >/dev/null 2>"$work/fsize.err" || got=$?
leftovers+=(/dev/shm/mtia.u"$(id -u)"/mtia_registry.v*.u"$(id -u)"."$fsize_machine".*)
[[ $got == 1 ]] || fail "smi_holder under ulimit -f 64: exit $got, expected 1 ($(cat "$work/fsize.err"))"
grep -qF "cannot size registry file /dev/shm/mtia.u$(id -u)/" "$work/fsize.err" || fail "fsize: $(cat "$work/fsize.err")"
grep -qF "RLIMIT_FSIZE" "$work/fsize.err" || fail "fsize: the limit is not named: $(cat "$work/fsize.err")"
! grep -qi "out of memory" "$work/fsize.err" || fail "fsize: reported as out of memory: $(cat "$work/fsize.err")"

# --- MTIA_SIM_MACHINE: the runtime and mtia-smi accept the same names (at most 255 bytes). ---
long=$(printf 'm%.0s' $(seq 256))
got=0
MTIA_SIM_MACHINE=$long timeout 20 "$holder" 1 0 >/dev/null 2>"$work/long.err" || got=$?  # before: it ran
[[ $got == 1 ]] || fail "smi_holder with a 256-byte MTIA_SIM_MACHINE: exit $got ($(cat "$work/long.err"))"
grep -qF "MTIA_SIM_MACHINE is too long: 256 bytes, at most 255 bytes" "$work/long.err" || fail "long: $(cat "$work/long.err")"
MTIA_SIM_MACHINE=$long expect 2 "MTIA_SIM_MACHINE is too long: 256 bytes, at most 255 bytes" -L
MTIA_SIM_MACHINE=${long:1} run long.txt -L

# --- Utilisation: idle device 0, busy device 1. ---
start_holder idle 16 0
idle=$started
start_holder busy 16 1 busy
busy=$started
sleep 0.3
run util.csv --query-gpu=index,utilization.gpu --format=csv,noheader,nounits
util0=$(sed -n 1p "$work/util.csv" | cut -d, -f2 | tr -d ' ')
util1=$(sed -n 2p "$work/util.csv" | cut -d, -f2 | tr -d ' ')
[[ $util0 == 0 ]] || fail "idle device shows utilisation: $(cat "$work/util.csv")"
((util1 > 0 && util1 <= 100)) || fail "busy device shows no utilisation: $(cat "$work/util.csv")"
# A loop's later samples cover the time since the previous one: still busy.
run util_loop.csv --query-gpu=utilization.gpu --format=csv,noheader,nounits -l 0.5 -c 2
second=$(sed -n 4p "$work/util_loop.csv" | tr -d ' ')
((second > 0)) || fail "busy device idle in the second sample: $(cat "$work/util_loop.csv")"
run util.json --json
python3 - "$work/util.json" <<'PY' || fail "util.json: $(cat "$work/util.json")"
import json, sys
r = json.load(open(sys.argv[1]))
d0, d1 = r["devices"]
assert d0["utilization_percent"] == 0 and 0 < d1["utilization_percent"] <= 100, r
PY

# --- mem snapshot: a holder with history, two blocks (24 + 24 MiB) on device 0. ---
start_holder hist 48 0 history split
hist=$started
kill -9 "$busy"  # only now: a process registering after its death would take its slot over
wait "$busy" 2>/dev/null || true
run snap.txt mem snapshot -p "$hist" -o "$work/snap.pickle"
grep -qF "written to $work/snap.pickle" "$work/snap.txt" || fail "snap.txt: $(cat "$work/snap.txt")"
[[ -s $work/snap.pickle ]] || fail "no snapshot file"
"$mem" summary "$work/snap.pickle" >"$work/summary.txt" || fail "mtia-mem summary failed"
grep -q "device 0: 2 segments" "$work/summary.txt" || fail "summary: $(cat "$work/summary.txt")"
grep -Eq "allocated +48.00 MiB" "$work/summary.txt" || fail "summary: $(cat "$work/summary.txt")"
run snapjson.txt mem snapshot -p "$hist" -o "$work/snap.json" --timeout 5
python3 - "$work/snap.json" <<'PY' || fail "snap.json is not the holder's snapshot"
import json, sys
r = json.load(open(sys.argv[1]))
segs = sorted(s["total_size"] for s in r["segments"] if s["device"] == 0)
assert segs == [24 << 20, 24 << 20], segs
allocs = [e for t in r["device_traces"] for e in t if e["action"] == "alloc"]
assert len(allocs) == 2 and all(e["size"] == 24 << 20 for e in allocs), allocs  # history was recorded
PY
# Nothing is left behind in the private directory.
# Tools asking one process at once take turns, and each gets its own snapshot.
turns=()
for i in 1 2 3 4; do
  "$smi" mem snapshot -p "$hist" -o "$work/turn$i.json" >"$work/turn$i.out" 2>&1 &
  turns+=($!)
done
for i in 1 2 3 4; do
  wait "${turns[$((i - 1))]}" || fail "mem snapshot $i of 4 at once: $(cat "$work/turn$i.out")"
  [[ -s $work/turn$i.json ]] || fail "mem snapshot $i of 4 at once wrote nothing"
done
[[ $(request_files_newer "$work/snap.txt") == 0 ]] || fail "request files left behind"
# The holder without history: segments, no traces.
run snap2.txt mem snapshot -p "$idle" -o "$work/idle.json"
python3 - "$work/idle.json" <<'PY' || fail "idle.json: no segments or unexpected traces"
import json, sys
r = json.load(open(sys.argv[1]))
assert [s["total_size"] for s in r["segments"]] == [16 << 20]
assert all(t == [] for t in r["device_traces"])
PY

# --- Errors. ---
expect 6 "uses no simulated device" mem snapshot -p $$ -o "$work/x.pickle"  # this shell: no registry slot
sleep 60 &
never=$!
pids+=("$never")
kill -9 "$never"
wait "$never" 2>/dev/null || true
expect 6 "uses no simulated device" mem snapshot -p "$never" -o "$work/x.pickle"  # gone
if [[ $(id -u) == 0 ]]; then
  setpriv --reuid=65534 --regid=65534 --clear-groups sleep 60 &
  other=$!
else
  other=1  # init, root's
fi
[[ $other == 1 ]] || pids+=("$other")
sleep 0.1
expect 4 "belongs to uid" mem snapshot -p "$other" -o "$work/x.pickle"
kill -STOP "$hist"  # its watcher cannot answer once every thread has stopped: kill returns before they have
for _ in $(seq 1 200); do
  running=$(awk '{ sub(/^.*\) /, ""); print $1 }' /proc/"$hist"/task/*/stat | grep -vc '^T$' || true)
  [[ $running == 0 ]] && break
  sleep 0.01
done
[[ $running == 0 ]] || fail "smi_holder $hist did not stop"
touch "$work/stopped.mark"
expect 255 "did not answer within 0.3 s" mem snapshot -p "$hist" -o "$work/x.pickle" --timeout 0.3
kill -CONT "$hist"
# The request was withdrawn when the tool gave up: the holder, running again, writes nothing for it into
# the user's request directory (a forgotten snapshot would stay in /dev/shm).
for _ in $(seq 1 20); do
  [[ $(request_files_newer "$work/stopped.mark") == 0 ]] || fail "the withdrawn request left a snapshot behind"
  sleep 0.05
done
[[ ! -e $work/x.pickle ]] || fail "a failed snapshot left its file"
expect 2 "cannot be written" mem snapshot -p "$hist" -o "$work/no/such/dir/x.pickle"

# --- cleanup: a registry in use is kept; dead slots are reaped; an unused registry goes. ---
objects=(/dev/shm/mtia.u"$(id -u)"/mtia_registry.v*.u"$(id -u)"."$MTIA_SIM_MACHINE".*)
[[ ${#objects[@]} == 2 ]] || fail "expected the registry and its lock file: ${objects[*]}"
run clean1.txt cleanup
grep -q "reaped 1 dead process slot(s); kept" "$work/clean1.txt" || fail "clean1.txt: $(cat "$work/clean1.txt")"
for o in "${objects[@]}"; do [[ -e $o ]] || fail "cleanup removed $o while processes live"; done
kill -9 "$idle" "$hist"
wait "$idle" "$hist" 2>/dev/null || true
run clean2.json cleanup --json
python3 - "$work/clean2.json" <<'PY' || fail "clean2.json: $(cat "$work/clean2.json")"
import json, sys
r = json.load(open(sys.argv[1]))
(m,) = r["registries"]
assert r["schema_version"] == 1 and m["reaped_slots"] == 2 and m["live_processes"] == 0 and m["removed"] is True, r
PY
for o in "${objects[@]}"; do [[ ! -e $o ]] || fail "cleanup left $o"; done
run clean3.txt cleanup
grep -q "nothing to clean up" "$work/clean3.txt" || fail "clean3.txt: $(cat "$work/clean3.txt")"
echo "mtia_smi_remote: ok"
