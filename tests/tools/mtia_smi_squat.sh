#!/usr/bin/env bash
# Another local user takes every name in /dev/shm that the runtime and mtia-smi use for a victim user
# before the victim does (issue 16 item 5): the user directory /dev/shm/mtia.u<uid> (as a world-writable
# directory of its own), a guess at its fall-back, and the names older versions used (the registry object,
# its lock file, mtia_requests.u<uid>). The victim's runtime (smi_holder), mtia-smi, mem snapshot and
# cleanup still work, the runtime says plainly on stderr why the registry lies elsewhere, and nothing of
# the victim's lands in the squatter's files. Then the snapshot leftovers: a mem snapshot killed while
# waiting leaves no file once its target exits or after mtia-smi cleanup. Both users are throw-away uids
# (setpriv), so the real users' registries are untouched. Needs root; skipped (exit 77) without.
# Usage: mtia_smi_squat.sh MTIA_SMI SMI_HOLDER
set -euo pipefail
smi=$1
holder=$2
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"
if [[ $(id -u) != 0 ]] || ! command -v setpriv >/dev/null; then
  echo "mtia_smi_squat: skipped: needs root and setpriv to act as two throw-away users"
  exit 77
fi
squatter=65534
victim=$((62000 + $$ % 3000))  # a uid nobody uses, distinct per run
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"; }
vwork=$(mktemp -d /tmp/mtia_squat.XXXXXX)
remove_victim_files() { rm -rf /dev/shm/mtia.u$victim /dev/shm/mtia.u$victim.* /dev/shm/mtia_requests.u$victim \
  /dev/shm/mtia_registry.v*.u$victim.* "$vwork"; }
trap 'remove_victim_files; _smi_test_cleanup' EXIT
remove_victim_files
mkdir "$vwork" && chown "$victim" "$vwork"
export MTIA_SIM_MACHINE=test-squat MTIA_SIM_DEVICES=1 MTIA_SIM_MEMORY=256MiB

# The squatter goes first: the user directory, a fall-back name, and every name older versions used (the
# object's name ends in an FNV-1a hash of the machine's description, machine_name.cpp).
layout=$(sed -n 's/.*kLayoutVersion = \([0-9]*\);.*/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../../platform/registry/layout.hpp")
legacy=$(python3 - "$layout" "$victim" <<'PY'
import sys
h = 0xcbf29ce484222325
for c in b"devices=1 memory=268435456 engines=4 machine=test-squat":
    h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print(f"mtia_registry.v{sys.argv[1]}.u{sys.argv[2]}.test-squat.{h:016x}")
PY
)
as $squatter sh -c "umask 0; mkdir /dev/shm/mtia.u$victim /dev/shm/mtia.u$victim.000000 /dev/shm/mtia_requests.u$victim &&
  : > /dev/shm/$legacy && : > /dev/shm/$legacy.lock"

vrun() { # vrun NAME args...: mtia-smi as the victim must exit 0; stdout in $vwork/NAME
  local name=$1; shift
  as "$victim" "$smi" "$@" >"$vwork/$name" 2>"$vwork/$name.err" || fail "victim mtia-smi $*: exit $? ($(cat "$vwork/$name.err"))"
}
start_victim_holder() { # sets $started
  setpriv --reuid="$victim" --regid="$victim" --clear-groups -- "$holder" "$@" >"$vwork/holder.out" \
    2>"$vwork/holder.err" &  # setpriv execs the holder: $! is its pid
  started=$!
  pids+=("$started")
  for _ in $(seq 1 400); do
    [[ -s $vwork/holder.out ]] && break
    kill -0 "$started" 2>/dev/null || fail "victim smi_holder died: $(cat "$vwork/holder.err")"
    sleep 0.05
  done
  [[ "$(cat "$vwork/holder.out")" == ready ]] || fail "victim smi_holder never got ready: $(cat "$vwork/holder.err")"
}

# --- The victim's runtime works, and says why its registry is not in the usual place. ---
start_victim_holder 16 0 history
h=$started
grep -qF "/dev/shm/mtia.u$victim is a directory of uid $squatter" "$vwork/holder.err" ||
  fail "the runtime did not say what is wrong: $(cat "$vwork/holder.err")"
grep -qF "remove /dev/shm/mtia.u$victim" "$vwork/holder.err" || fail "the runtime did not say how to fix it: $(cat "$vwork/holder.err")"
vrun procs.csv --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
[[ "$(cat "$vwork/procs.csv")" == "$h, 16" ]] || fail "victim's mtia-smi does not see its process: $(cat "$vwork/procs.csv")"
vrun snap.txt mem snapshot -p "$h" -o "$vwork/snap.pickle"
[[ -s $vwork/snap.pickle ]] || fail "no snapshot"
vrun clean1.txt cleanup
grep -q "kept" "$vwork/clean1.txt" || fail "clean1.txt: $(cat "$vwork/clean1.txt")"
for d in /dev/shm/mtia.u$victim /dev/shm/mtia.u$victim.000000 /dev/shm/mtia_requests.u$victim; do
  [[ -z "$(ls -A "$d")" ]] || fail "the victim wrote into the squatter's $d: $(ls -A "$d")"
done
home=$(ls -d /dev/shm/mtia.u$victim.?????? | grep -v '\.000000$')
[[ $(stat -c '%u %a' "$home") == "$victim 700" ]] || fail "fall-back $home: $(stat -c '%u %a' "$home")"

# --- A mem snapshot killed while it waits: its answer goes when the target exits. ---
kill -STOP "$h"
setpriv --reuid="$victim" --regid="$victim" --clear-groups -- "$smi" mem snapshot -p "$h" -o "$vwork/never.pickle" \
  --timeout 60 >/dev/null 2>&1 &
tool=$!
pids+=("$tool")
for _ in $(seq 1 200); do  # the request is posted once the tool holds it: give it a moment
  sleep 0.05
  [[ -n "$(ls -A "$home/requests" 2>/dev/null)" ]] && break
done
sleep 0.3
kill -9 "$tool"
wait "$tool" 2>/dev/null || true
kill -CONT "$h"
for _ in $(seq 1 200); do
  [[ -n "$(find "$home/requests" -name '*.pickle' 2>/dev/null)" ]] && break
  sleep 0.05
done
[[ -n "$(find "$home/requests" -name '*.pickle')" ]] || fail "the target never answered the killed tool's request"
[[ $(stat -c %a "$(find "$home/requests" -name '*.pickle' | head -1)") == 600 ]] || fail "the answer is not mode 0600"
# mtia-smi cleanup removes it while the target still lives (nobody waits for it)...
vrun clean2.txt cleanup
[[ -z "$(ls -A "$home/requests")" ]] || fail "cleanup left the killed tool's answer: $(ls -A "$home/requests")"
# ...and the target's own exit removes one that cleanup did not see.
kill -STOP "$h"
setpriv --reuid="$victim" --regid="$victim" --clear-groups -- "$smi" mem snapshot -p "$h" -o "$vwork/never2.pickle" \
  --timeout 60 >/dev/null 2>&1 &
tool=$!
pids+=("$tool")
sleep 0.5
kill -9 "$tool"
wait "$tool" 2>/dev/null || true
kill -CONT "$h"
for _ in $(seq 1 200); do
  [[ -n "$(find "$home/requests" -name '*.pickle' 2>/dev/null)" ]] && break
  sleep 0.05
done
kill -TERM "$h"  # smi_holder exits normally on SIGTERM: its atexit handlers run
wait "$h" 2>/dev/null || true
[[ -z "$(ls -A "$home/requests")" ]] || fail "the target's exit left: $(ls -A "$home/requests")"
vrun clean3.txt cleanup
grep -q "removed" "$vwork/clean3.txt" || fail "clean3.txt: $(cat "$vwork/clean3.txt")"
echo "mtia_smi_squat: ok"
