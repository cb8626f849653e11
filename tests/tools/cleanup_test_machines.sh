#!/usr/bin/env bash
# The test suite's last test: every test runs on a machine of its own (test-NAME; the registry's unit
# tests use regtest-...), each leaving a registry object and lock file in /dev/shm/mtia.u<uid>. This removes those
# of this user that no live process has open (mtia-smi cleanup --all-machines: never one in use), and
# checks that what it reported removed is gone.
# Usage: cleanup_test_machines.sh MTIA_SMI
set -euo pipefail
smi=$1
source "$(dirname "${BASH_SOURCE[0]}")/smi_test_lib.sh"
for prefix in test- regtest-; do
  "$smi" cleanup --all-machines --machine-prefix "$prefix" --json >"$work/out.json" 2>"$work/err" ||
    fail "mtia-smi cleanup --machine-prefix $prefix: exit $? ($(cat "$work/err"))"
  python3 - "$work/out.json" "$prefix" <<'PY' || fail "cleanup output: $(cat "$work/out.json")"
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == 1
removed = 0
for m in r["registries"]:
    name = m["machine"].split(" machine=", 1)[1] if m["machine"] else ""
    assert name.startswith(sys.argv[2]), m  # nothing outside the prefix is touched
    if m["removed"]:
        removed += 1
        home = f"/dev/shm/mtia.u{os.geteuid()}/"
        assert not os.path.exists(home + m["registry"]), m
        assert not os.path.exists(home + m["registry"] + ".lock"), m
print(f"{sys.argv[2]}*: {removed} registries removed, {len(r['registries']) - removed} in use kept")
PY
done
echo "cleanup_test_machines: ok"
