#!/usr/bin/env bash
# check_exports.sh LIB MAPFILE
#
# ABI rule 6: the shared library LIB exports exactly the global symbols of the
# linker version script MAPFILE, and all of them begin with "mtia".
#   - every symbol `nm -D --defined-only LIB` lists begins with "mtia" and is
#     named in (or matched by a pattern of) a global: section of MAPFILE;
#   - every symbol named in a global: section is exported.
# Symbol versions (docs/abi.md, "Symbol versions"):
#   - every version node of MAPFILE is named MTIA_1.<minor>, none anonymous;
#     the first is MTIA_1.0 and each later one is the next minor and inherits
#     the one before it (`MTIA_1.1 { ... } MTIA_1.0;`);
#   - a symbol is listed in one node only (a symbol never moves);
#   - every exported symbol carries a version (nm shows NAME@@MTIA_1.x), the
#     one of the node that lists it.
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

# Version script -> lines "node NAME" (a node opened; "node -" for one without
# a name), "parent NAME PARENT" (the node a node inherits) and "global NODE
# NAME" (names and patterns of global: sections). Comments (/* */ and #) are
# dropped; a section without a label is global, as ld reads it.
parse_map() {
  awk 'BEGIN { RS = "\001" } { gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " "); print }' "$1" |
    sed -e 's|#.*||' -e 's/[[:space:]]*:/:/g' -e 's/[{};]/ & /g' |
    awk '
      BEGIN { pending = ""; closed = "" }
      { for (i = 1; i <= NF; i++) {
          w = $i
          if (w == "{") {
            if (depth == 0) { node = (pending == "" ? "-" : pending); print "node " node; pending = "" }
            depth++; mode = "global"; continue
          }
          if (w == "}") { depth--; mode = ""; if (depth == 0) closed = node; continue }
          if (w == ";") { if (depth == 0) closed = ""; continue }
          if (w == "global:") { mode = "global"; continue }
          if (w == "local:") { mode = "local"; continue }
          if (w == "extern") { print "unsupported extern block in version script" > "/dev/stderr"; exit 3 }
          if (depth == 0) {
            if (closed != "") { print "parent " closed " " w; continue }
            pending = w; continue
          }
          if (mode == "global") print "global " node " " w
        } }'
}

parsed="$(parse_map "$map")"
mapfile -t nodes < <(sed -n 's/^node //p' <<<"$parsed")
mapfile -t globals < <(sed -n 's/^global [^ ]* //p' <<<"$parsed" | sort -u)
if ((${#globals[@]} == 0)); then
  echo "check_exports: $map has no global symbols" >&2
  exit 1
fi

# Exported symbols without their version suffix, and "NAME VERSION" for each
# (VERSION "-" when it has none); the version nodes themselves appear as
# absolute (A) symbols and are not functions or data.
declare -A is_node=()
for n in "${nodes[@]}"; do is_node[$n]=1; done
nm_out="$("$nm_tool" -D --defined-only "$lib")" || { echo "check_exports: $nm_tool failed on $lib" >&2; exit 2; }
mapfile -t versioned < <(printf '%s\n' "$nm_out" |
  awk 'NF >= 3 { print $2, $3 } NF == 2 { print $1, $2 }' |
  while read -r type name; do
    base="${name%%@*}"
    if [[ "$type" == A && -n "${is_node[$base]:-}" ]]; then continue; fi
    version="-"
    [[ "$name" == *@* ]] && version="${name##*@}"
    printf '%s %s\n' "$base" "$version"
  done | sort -u)
mapfile -t exported < <(for line in "${versioned[@]}"; do printf '%s\n' "${line%% *}"; done | sort -u)

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

# Version nodes: MTIA_1.0, MTIA_1.1, ... in order, each inheriting the one before.
declare -A parent_of=()
while read -r _ child parent; do parent_of[$child]="$parent"; done < <(grep '^parent ' <<<"$parsed" || true)
minor=0
for n in "${nodes[@]}"; do
  if [[ "$n" == - ]]; then
    echo "version node without a name in $map: name it MTIA_1.$minor"
    status=1
  elif [[ ! "$n" =~ ^MTIA_1\.(0|[1-9][0-9]*)$ ]]; then
    echo "version node $n in $map is not named MTIA_1.<minor>"
    status=1
  elif [[ "$n" != "MTIA_1.$minor" ]]; then
    echo "version node $n in $map out of order: expected MTIA_1.$minor here"
    status=1
  elif ((minor > 0)) && [[ "${parent_of[$n]:-}" != "MTIA_1.$((minor - 1))" ]]; then
    echo "version node $n in $map must inherit MTIA_1.$((minor - 1)) (\`$n { ... } MTIA_1.$((minor - 1));\`)"
    status=1
  elif ((minor == 0)) && [[ -n "${parent_of[$n]:-}" ]]; then
    echo "version node $n in $map is the first and inherits nothing"
    status=1
  fi
  minor=$((minor + 1))
done

# Each name in one node; each exported symbol versioned with that node.
declare -A node_of=()
while read -r _ node name; do
  if [[ -n "${node_of[$name]:-}" && "${node_of[$name]}" != "$node" ]]; then
    echo "listed in two version nodes of $map (${node_of[$name]} and $node): $name; a symbol never moves"
    status=1
  fi
  node_of[$name]="$node"
done < <(grep '^global ' <<<"$parsed" || true)
for line in "${versioned[@]}"; do
  sym="${line%% *}"
  version="${line#* }"
  [[ "$sym" == mtia* ]] || continue
  if [[ "$version" == - ]]; then
    echo "exported without a symbol version: $sym (give the node of $map a name, MTIA_1.<minor>)"
    status=1
    continue
  fi
  want="${node_of[$sym]:-}"
  if [[ -z "$want" ]]; then
    for g in "${patterns[@]}"; do
      # shellcheck disable=SC2053 # $g is a glob on purpose
      if [[ "$sym" == $g ]]; then want="$(awk -v g="$g" '$1 == "global" && $3 == g { print $2; exit }' <<<"$parsed")"; break; fi
    done
  fi
  if [[ -n "$want" && "$version" != "$want" ]]; then
    echo "exported with version $version but listed in node $want of $map: $sym"
    status=1
  fi
done

if ((status == 0)); then
  echo "check_exports: $lib exports exactly the ${#exported[@]} global symbols of $map, each with its version"
else
  echo "check_exports: FAILED: $lib does not match $map (${#exported[@]} exported, ${#globals[@]} in global:)"
fi
exit "$status"
