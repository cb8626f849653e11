#!/usr/bin/env bash
# Re-runs every benchmark and prints each figure beside the committed bench/results/*.json, flagging
# the figures that moved beyond the run-to-run noise (bench/compare.py says how noise is judged).
#
#   bench/compare.sh            runs into a temporary folder; bench/results/ stays as committed
#   bench/compare.sh --write    runs into bench/results/ (regenerates every results file at one
#                               commit), then compares with the files of HEAD
#
# Needs a build with the benchmarks (cmake --build build, or MTIA_BUILD_DIR=the build folder):
# alloc_bench, streams_bench, idle_cpu, graph_bench, history_bench, mtia-mem and mtia-smi. Takes
# about 15 minutes on 2 CPUs. Results are reported, never asserted: the exit status is non-zero
# only when a benchmark program fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
write=0
case "${1:-}" in
  --write) write=1 ;;
  "") ;;
  *)
    echo "usage: bench/compare.sh [--write]" >&2
    exit 2
    ;;
esac

committed=$(mktemp -d)
trap 'rm -rf "$committed" ${fresh:+"$fresh"}' EXIT
# The committed files, whatever the working tree holds.
for f in $(git -C "$root" ls-tree --name-only HEAD bench/results/ | grep '\.json$'); do
  git -C "$root" show "HEAD:$f" >"$committed/$(basename "$f")"
done

if ((write)); then
  out="$here/results"
else
  fresh=$(mktemp -d)
  out="$fresh"
fi

for script in run_alloc run_streams run_graph run_history run_fragmentation run_smi; do
  echo "==== compare: $script" >&2
  MTIA_BENCH_RESULTS="$out" bash "$here/$script.sh" >/dev/null
done

echo
echo "Benchmarks now ($(git -C "$root" rev-parse --short HEAD)) beside the committed results:"
python3 "$here/compare.py" "$committed" "$out"
