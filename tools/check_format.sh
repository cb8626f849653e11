#!/usr/bin/env bash
# Checks that every C and C++ file of the repository is formatted to .clang-format.
#
#   tools/check_format.sh [ROOT]        check ROOT (default: this repository); exit 1 and name
#                                       each file clang-format would change
#   tools/check_format.sh --detects FILE   exit 0 only when FILE (badly formatted on purpose)
#                                       is reported
#
# Uses clang-format-14 (scripts/install-deps.sh installs it): another version may format
# differently. Files under tests/checks/fixtures are inputs of other checks and are skipped.
set -euo pipefail

formatter=${CLANG_FORMAT:-clang-format-14}
command -v "$formatter" >/dev/null || { echo "check_format: $formatter not found (scripts/install-deps.sh installs it)" >&2; exit 2; }

unformatted() { # unformatted ROOT FILE...: prints each FILE that clang-format would change
  local root=$1 f
  shift
  for f in "$@"; do
    # By content, with ROOT's .clang-format (found from the assumed path).
    if ! "$formatter" --assume-filename="$root/$f" <"$root/$f" | cmp -s - "$root/$f"; then
      echo "$f"
    fi
  done
}

if [[ ${1:-} == --detects ]]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  file=$2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "$root/.clang-format" "$tmp/"
  cp "$file" "$tmp/bad.cpp"
  [[ $(unformatted "$tmp" bad.cpp) == bad.cpp ]] || { echo "check_format: $file was not reported" >&2; exit 1; }
  # Formatted, the same file passes.
  "$formatter" -i "$tmp/bad.cpp"
  [[ -z $(unformatted "$tmp" bad.cpp) ]] || { echo "check_format: a formatted file was reported" >&2; exit 1; }
  echo "check_format: a badly formatted file is reported, its formatted version is not: ok"
  exit 0
fi

root=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
mapfile -t files < <(git -C "$root" ls-files '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' | grep -v '^tests/checks/fixtures/')
mapfile -t bad < <(unformatted "$root" "${files[@]}")
if ((${#bad[@]} > 0)); then
  printf '%s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted to .clang-format (run $formatter -i on them)" >&2
  exit 1
fi
echo "check_format: all ${#files[@]} C and C++ files are formatted to .clang-format"
