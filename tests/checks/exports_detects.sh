#!/usr/bin/env bash
# exports_detects.sh: proves that tools/check_exports.sh passes a library
# that matches its version script and fails the ways one can go wrong: a
# symbol the script lists but the library lacks, a leaked non-mtia symbol,
# an mtia symbol outside the script. Builds small shared libraries from
# tests/checks/fixtures/exports with ${CC:-cc}.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
check="$here/../../tools/check_exports.sh"
fixtures="$here/fixtures/exports"
source_file="${1:-$fixtures/fixture_lib.c}" # the build passes it as the test's input
cc="${CC:-cc}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build() { # build NAME [MAP]: a shared library from fixture_lib.c
  local out="$work/$1.so"
  local args=()
  [[ $# -ge 2 ]] && args=("-Wl,--version-script=$fixtures/$2")
  # shellcheck disable=SC2086 # CC may carry flags
  $cc -shared -fPIC -o "$out" "$source_file" "${args[@]}"
}

failures=0
# expect NAME STATUS LIB MAP [TEXT...]: check_exports exits STATUS and says each TEXT.
expect() {
  local name="$1" want="$2" lib="$3" map="$4"
  shift 4
  local out rc=0
  out="$(bash "$check" "$work/$lib.so" "$fixtures/$map" 2>&1)" || rc=$?
  local ok=1
  [[ "$rc" == "$want" ]] || ok=0
  local text
  for text in "$@"; do grep -qF -- "$text" <<<"$out" || ok=0; done
  if ((ok)); then
    echo "ok:     $name (exit $rc)"
  else
    echo "FAILED: $name: wanted exit $want and output with: $*; got exit $rc:"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  fi
}

build scripted good.map
build unscripted
build patterned pattern.map

expect "library matching its version script passes" 0 scripted good.map
expect "names inside comments are not globals" 0 scripted good.map "2 global symbols"
expect "symbol listed but not exported fails" 1 scripted missing.map \
  "not exported by" "mtiaMissing"
expect "leaked non-mtia symbol fails" 1 unscripted good.map \
  "not an mtia symbol: helper_leak"
expect "mtia symbol outside the version script fails" 1 unscripted good.map \
  "not in the global: list of" "mtiaInternalExtra"
expect "pattern global: mtia* matches the mtia symbols" 0 patterned pattern.map
expect "pattern does not excuse a non-mtia symbol" 1 unscripted pattern.map "helper_leak"

if ((failures)); then
  echo "exports_detects: $failures case(s) failed"
  exit 1
fi
echo "exports_detects: all cases behave"
