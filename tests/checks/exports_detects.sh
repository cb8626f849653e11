#!/usr/bin/env bash
# exports_detects.sh: proves that tools/check_exports.sh passes a library
# that matches its version script and fails the ways one can go wrong: a
# symbol the script lists but the library lacks, a leaked non-mtia symbol,
# an mtia symbol outside the script, a symbol without a version (an anonymous
# node), a node outside the MTIA_1.<minor> scheme, a later node that does not
# inherit the one before, a symbol listed in two nodes. Builds small shared libraries from
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
build unversioned unversioned.map
build two_versions two_versions.map
build not_inherited not_inherited.map
build foreign_name foreign_name.map

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
expect "anonymous node: unversioned symbols fail" 1 unversioned unversioned.map \
  "version node without a name" "exported without a symbol version: mtiaFoo" \
  "exported without a symbol version: mtiaBar"
expect "library without a version script is unversioned" 1 unscripted good.map \
  "exported without a symbol version: mtiaFoo"
expect "a later minor node inheriting the previous passes" 0 two_versions two_versions.map \
  "each with its version"
expect "a symbol exported with another node's version fails" 1 two_versions good.map \
  "exported with version MTIA_1.1 but listed in node MTIA_1.0" "mtiaBar"
expect "a later node that does not inherit fails" 1 not_inherited not_inherited.map \
  "version node MTIA_1.1" "must inherit MTIA_1.0"
expect "a node outside MTIA_1.<minor> fails" 1 foreign_name foreign_name.map \
  "version node FIXTURE_1.0" "is not named MTIA_1.<minor>"
expect "a symbol listed in two nodes fails" 1 two_versions moved.map \
  "listed in two version nodes" "mtiaFoo"

if ((failures)); then
  echo "exports_detects: $failures case(s) failed"
  exit 1
fi
echo "exports_detects: all cases behave"
