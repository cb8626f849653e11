#!/usr/bin/env bash
# check_exports.sh LIB MAPFILE
#
# ABI rule 6: the shared library LIB exports exactly the global symbols of the
# linker version script MAPFILE, and all of them begin with "mtia".
#   - every symbol `nm -D --defined-only LIB` lists begins with "mtia" and is
#     named in (or matched by a pattern of) a global: section of MAPFILE;
#   - every symbol named in a global: section is exported.
# Prints the differences and exits 1 on any mismatch. NM overrides nm.
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 LIB MAPFILE" >&2
  exit 2
fi
lib="$1"
map="$2"
nm_tool="${NM:-nm}"
[[ -f "$lib" ]] || { echo "check_exports: no such library: $lib" >&2; exit 2; }
[[ -f "$map" ]] || { echo "check_exports: no such version script: $map" >&2; exit 2; }

# Version script -> lines "node NAME" (version node names) and "global NAME"
# (names and patterns of global: sections). Comments (/* */ and #) are
# dropped; a section without a label is global, as ld reads it.
parse_map() {
  awk 'BEGIN { RS = "\001" } { gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " "); print }' "$1" |
    sed -e 's|#.*||' -e 's/[[:space:]]*:/:/g' -e 's/[{};]/ & /g' |
    awk '
      { for (i = 1; i <= NF; i++) {
          w = $i
          if (w == "{") { depth++; mode = "global"; continue }
          if (w == "}") { depth--; mode = ""; continue }
          if (w == ";") continue
          if (w == "global:") { mode = "global"; continue }
          if (w == "local:") { mode = "local"; continue }
          if (w == "extern") { print "unsupported extern block in version script" > "/dev/stderr"; exit 3 }
          if (depth == 0) { print "node " w; continue }
          if (mode == "global") print "global " w
        } }'
}

parsed="$(parse_map "$map")"
mapfile -t nodes < <(sed -n 's/^node //p' <<<"$parsed" | sort -u)
mapfile -t globals < <(sed -n 's/^global //p' <<<"$parsed" | sort -u)
if ((${#globals[@]} == 0)); then
  echo "check_exports: $map has no global symbols" >&2
  exit 1
fi

# Exported symbols without their version suffix; the version nodes themselves
# appear as absolute (A) symbols and are not functions or data.
declare -A is_node=()
for n in "${nodes[@]}"; do is_node[$n]=1; done
nm_out="$("$nm_tool" -D --defined-only "$lib")" || { echo "check_exports: $nm_tool failed on $lib" >&2; exit 2; }
mapfile -t exported < <(printf '%s\n' "$nm_out" |
  awk 'NF >= 3 { print $2, $3 } NF == 2 { print $1, $2 }' |
  while read -r type name; do
    name="${name%%@*}"
    if [[ "$type" == A && -n "${is_node[$name]:-}" ]]; then continue; fi
    printf '%s\n' "$name"
  done | sort -u)

status=0
exact=()
patterns=()
for g in "${globals[@]}"; do
  if [[ "$g" == *[\*\?\[]* ]]; then patterns+=("$g"); else exact+=("$g"); fi
done

in_map() {
  local sym="$1" g
  for g in "${exact[@]}"; do [[ "$sym" == "$g" ]] && return 0; done
  for g in "${patterns[@]}"; do
    # shellcheck disable=SC2053 # $g is a glob on purpose
    [[ "$sym" == $g ]] && return 0
  done
  return 1
}

for sym in "${exported[@]}"; do
  if [[ "$sym" != mtia* ]]; then
    echo "exported but not an mtia symbol: $sym"
    status=1
  elif ! in_map "$sym"; then
    echo "exported but not in the global: list of $map: $sym"
    status=1
  fi
done
# Membership through associative arrays, not `printf | grep -q`: under
# pipefail, grep -q quitting early can kill printf with SIGPIPE and turn a
# match into a failure, depending on timing.
declare -A is_exported=()
for sym in "${exported[@]}"; do is_exported[$sym]=1; done
for g in "${exact[@]}"; do
  if [[ -z "${is_exported[$g]:-}" ]]; then
    echo "in the global: list of $map but not exported by $lib: $g"
    status=1
  fi
done

if ((status == 0)); then
  echo "check_exports: $lib exports exactly the ${#exported[@]} global symbols of $map"
else
  echo "check_exports: FAILED: $lib does not match $map (${#exported[@]} exported, ${#globals[@]} in global:)"
fi
exit "$status"
