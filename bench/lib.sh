# shellcheck shell=bash
# Shared by bench/run_*.sh: finding the benchmark program, the output folder and the facts about
# the run that every report states. Set bench_script (the name used in messages) before sourcing;
# `here` and `root` are set to bench/ and the repository root.
#
# Environment: MTIA_BUILD_DIR (where to look for the program first), MTIA_BENCH_RESULTS (another
# output folder), MTIA_BENCH_ARGS (more arguments for the program), MTIA_BENCH_COMMIT (replaces
# the commit line, e.g. when the binary was built from a clean export rather than this checkout).

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

die() {
  echo "${bench_script:-bench}: ERROR: $*" >&2
  exit 1
}

# bench_find NAME: bench/NAME of $MTIA_BUILD_DIR, else of build/, else of the most recently built
# build*/ folder; empty when there is none.
bench_find() {
  local name="$1"
  if [[ -n "${MTIA_BUILD_DIR:-}" ]]; then
    echo "$MTIA_BUILD_DIR/bench/$name"
    return
  fi
  if [[ -x "$root/build/bench/$name" ]]; then
    echo "$root/build/bench/$name"
    return
  fi
  local newest="" candidate
  for candidate in "$root"/build*/bench/"$name"; do
    [[ -x "$candidate" ]] || continue
    if [[ -z "$newest" || "$candidate" -nt "$newest" ]]; then newest="$candidate"; fi
  done
  echo "$newest"
}

# bench_setup NAME [PATH]: sets bench (PATH, else bench_find NAME; it must be executable), out (the
# output folder, created), extra (MTIA_BENCH_ARGS as an array) and load_before; MTIA_LOG_LEVEL
# defaults to warn.
bench_setup() {
  local name="$1"
  bench="${2:-$(bench_find "$name")}"
  [[ -n "$bench" ]] || die "no $name found under $root/build*/bench; build it or pass its path"
  [[ -x "$bench" ]] || die "$bench is not an executable"
  out="${MTIA_BENCH_RESULTS:-$here/results}"
  mkdir -p "$out"
  # shellcheck disable=SC2034 # for the script that sourced this
  read -r -a extra <<<"${MTIA_BENCH_ARGS:-}"
  export MTIA_LOG_LEVEL="${MTIA_LOG_LEVEL:-warn}"
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_export_run_facts: exports RUN_DATE, RUN_NPROC, RUN_CPU, RUN_COMMIT, RUN_BENCH and RUN_LOAD
# (before and after: call it when the programs are done) for the report writer.
bench_export_run_facts() {
  local load_after commit
  load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
  commit="${MTIA_BENCH_COMMIT:-}"
  if [[ -z "$commit" ]]; then
    commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    # The results folder is being rewritten by this run: it does not count as a local change.
    if [[ -n "$(git -C "$root" status --porcelain -- . ':!bench/results' 2>/dev/null || true)" ]]; then
      commit="$commit (with local changes)"
    fi
  fi
  export RUN_DATE RUN_NPROC RUN_CPU RUN_COMMIT RUN_BENCH RUN_LOAD
  RUN_DATE="$(date -u '+%Y-%m-%d %H:%M UTC')"
  RUN_NPROC="$(nproc)"
  RUN_CPU="$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)"
  RUN_COMMIT="$commit"
  RUN_BENCH="$bench"
  RUN_LOAD="$load_before (before), $load_after (after)"
}

# bench_run NAME: runs $bench (5 repetitions, aggregates only, JSON, then MTIA_BENCH_ARGS) into
# $out/NAME.json, through NAME.json.tmp so that a failed run leaves the last good file in place.
bench_run() {
  local name="$1"
  "$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_format=json \
    "${extra[@]}" >"$out/$name.json.tmp" || die "$bench failed (partial output in $out/$name.json.tmp)"
  mv "$out/$name.json.tmp" "$out/$name.json"
}

# The start of every report writer: its arguments (bench_path, the more_paths given to bench_report,
# md_path), the run facts (machine), and of $out/NAME.json the context and, per WORKLOAD/SIDE, the
# median ns_per_op (medians), the whole median record (median_records), the coefficient of variation
# (spreads) and the error message of a failed benchmark (errors).
bench_report_prelude='import json
import os
import sys

bench_path, *more_paths, md_path = sys.argv[1:]
machine = {key: os.environ["RUN_" + key.upper()] for key in ("date", "nproc", "cpu", "commit", "bench", "load")}

with open(bench_path) as f:
    data = json.load(f)
context = data.get("context", {})
medians, median_records, spreads, errors = {}, {}, {}, {}
for b in data.get("benchmarks", []):
    # run_name is WORKLOAD/SIDE[/ARG...][/real_time|/manual_time][/threads:N][/iterations:N...]
    name = "/".join(b.get("run_name", b["name"]).split("/")[:2])
    if b.get("error_occurred"):
        errors[name] = b.get("error_message", "error")
    if "ns_per_op" not in b:
        continue
    if b.get("aggregate_name") == "median":
        medians[name] = b["ns_per_op"]
        median_records[name] = b
    elif b.get("aggregate_name") == "cv":
        spreads[name] = b["ns_per_op"]


def fmt_ns(name):
    """The median of name in ns, with its spread; "error" or "n/a" when it has none."""
    if name in errors:
        return "error"
    v = medians.get(name)
    if v is None:
        return "n/a"
    text = f"{v:,.0f} ns" if v >= 100 else f"{v:.1f} ns"
    if name in spreads:
        text += f" (cv {100 * spreads[name]:.0f}%)"
    return text


def machine_lines():
    """The run facts every report lists under its title."""
    cpu = machine["cpu"] or "unknown CPU"
    return [
        "- date: " + machine["date"],
        "- machine: " + machine["nproc"] + " CPUs, " + cpu + " (shared with other work: see",
        "  the load average)",
        "- load average: " + machine["load"],
        "- commit measured: " + machine["commit"],
        "- binary: " + machine["bench"],
    ]
'

# bench_report NAME [MORE_JSON...] <<'EOF' ... EOF: exports the run facts (call it when the programs
# are done), then writes $out/NAME.md with the Python read from stdin, run after bench_report_prelude,
# and prints it.
bench_report() {
  local name="$1"
  shift
  bench_export_run_facts
  { printf '%s\n' "$bench_report_prelude"; cat; } | python3 - "$out/$name.json" "$@" "$out/$name.md.tmp" ||
    die "the report writer failed"
  mv "$out/$name.md.tmp" "$out/$name.md"
  cat "$out/$name.md"
}
