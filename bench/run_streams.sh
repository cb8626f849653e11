#!/usr/bin/env bash
# Runs the stream and event benchmarks and writes
#   bench/results/streams.json   raw Google Benchmark JSON (5 repetitions, aggregates only)
#   bench/results/idle_cpu.json  the idle_cpu program's JSON
#   bench/results/streams.md     per workload: our median, the baseline's, baseline/ours, target
#
#   bench/run_streams.sh [STREAMS_BENCH [IDLE_CPU]]
#
# STREAMS_BENCH defaults to bench/streams_bench of $MTIA_BUILD_DIR, else of build/,
# else of the most recently built build*/ folder; IDLE_CPU to idle_cpu next to it.
# MTIA_BENCH_RESULTS sets another output folder, MTIA_BENCH_ARGS adds arguments
# to streams_bench (e.g. --benchmark_filter=launch), MTIA_BENCH_COMMIT replaces
# the commit line (bench/lib.sh). Results are reported, never
# asserted: the exit status is 0 whatever the numbers, non-zero only when a
# program fails.
set -euo pipefail

bench_script=run_streams # names its messages
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_setup streams_bench "${1:-}"
idle="${2:-$(dirname "$bench")/idle_cpu}"
[[ -x "$idle" ]] || die "$idle is not an executable"

echo "run_streams: $bench (load average $load_before)"
"$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_format=json \
  "${extra[@]}" >"$out/streams.json.tmp" || die "$bench failed (partial output in $out/streams.json.tmp)"
mv "$out/streams.json.tmp" "$out/streams.json"

echo "run_streams: $idle"
"$idle" --seconds=1 --repetitions=3 >"$out/idle_cpu.json.tmp" || die "$idle failed"
mv "$out/idle_cpu.json.tmp" "$out/idle_cpu.json"

bench_export_run_facts
python3 - "$out/streams.json" "$out/idle_cpu.json" "$out/streams.md.tmp" <<'EOF'
import json
import os
import sys

bench_path, idle_path, md_path = sys.argv[1:4]
machine = {key: os.environ["RUN_" + key.upper()] for key in ("date", "nproc", "cpu", "commit", "bench", "load")}

# workload: (title, unit, target ns or None, minimum speed-up over the baseline or None)
WORKLOADS = [
    ("launch_noop", "empty kernel, enqueue + complete (batch of 1000, then synchronize)", 250, 5),
    ("launch_sync_noop", "empty kernel, enqueue + synchronize, one at a time", None, None),
    ("event_record_query_untimed", "event record + query, untimed event, idle stream", 150, None),
    ("event_record_query_timed", "event record + query, timed event, idle stream", 300, None),
    ("pingpong", "cross-stream ping-pong round trip (batch of 100, then synchronize)", None, None),
    ("hostfunc_sync", "host function: enqueue + synchronize, idle stream", None, None),
    ("hostfunc_latency_hot", "host function: enqueue until it runs, right after the last one", None, None),
    ("hostfunc_latency_cold", "host function: enqueue until it runs, after 1 ms idle", None, None),
]

# Command lists (driver ABI 1.2): N empty kernels as one list vs N single submits, at the driver ABI.
REPLAY_SIZES = [1, 10, 100, 1000]

# Not workloads: they split the workloads' time into parts (streams_bench.cpp, "Diagnostics").
DIAGNOSTICS = [
    ("diag_enqueue_blocked", "launch enqueue alone (the stream's engine held, nothing reads the queue)"),
    ("diag_drain", "launch drain alone (the engine runs a batch queued while it was held, until synchronize returns)"),
    ("diag_stream_query", "stream query of an idle stream (API entry, handle lookup, status)"),
    ("diag_event_query", "event query of a completed event"),
]

with open(bench_path) as f:
    data = json.load(f)
medians = {}
spreads = {}  # coefficient of variation over the repetitions
errors = {}
for b in data.get("benchmarks", []):
    # run_name is WORKLOAD/SIDE[/ARG...][/real_time|/manual_time|/iterations:N...]
    name = "/".join(b.get("run_name", b["name"]).split("/")[:2])
    if b.get("error_occurred"):
        errors[name] = b.get("error_message", "error")
    if "ns_per_op" not in b:
        continue
    if b.get("aggregate_name") == "median":
        medians[name] = b["ns_per_op"]
    elif b.get("aggregate_name") == "cv":
        spreads[name] = b["ns_per_op"]


def fmt_ns(name):
    v = medians.get(name)
    if v is None:
        return "n/a"
    text = f"{v:,.0f} ns" if v >= 100 else f"{v:.1f} ns"
    if name in spreads:
        text += f" (cv {100 * spreads[name]:.0f}%)"
    return text


rows = []
for key, title, target_ns, speedup in WORKLOADS:
    ours = medians.get(key + "/ours")
    base = medians.get(key + "/baseline")
    ratio = base / ours if ours and base else None
    targets, verdicts = [], []
    if target_ns is not None:
        targets.append(f"<= {target_ns} ns")
        verdicts.append(ours is not None and ours <= target_ns)
    if speedup is not None:
        targets.append(f">= {speedup}x baseline")
        verdicts.append(ratio is not None and ratio >= speedup)
    if targets:
        result = "**pass**" if all(verdicts) else "**FAIL**"
    else:
        result = "reported"
    for side in ("ours", "baseline"):
        if f"{key}/{side}" in errors:
            result = f"error ({side}): {errors[key + '/' + side]}"
    rows.append((title, fmt_ns(key + "/ours"), fmt_ns(key + "/baseline"), f"{ratio:.1f}x" if ratio else "n/a",
                 ", ".join(targets) or "-", result))

with open(idle_path) as f:
    idle = json.load(f)
IDLE_TARGET = 2.0
ours_idle = idle["ours"]["median"]
base_idle = idle["baseline"]["median"]
rows.append((f"idle CPU over {idle['seconds']:g} s after work (% of one core)", f"{ours_idle:.2f} %",
             f"{base_idle:.2f} %", "-", f"< {IDLE_TARGET:g} %",
             "**pass**" if ours_idle < IDLE_TARGET else "**FAIL**"))

lines = [
    "# Streams and events: benchmark results",
    "",
    "Medians of 5 repetitions (Google Benchmark, wall time; counter `ns_per_op`), generated by",
    "`bench/run_streams.sh`; raw data in `streams.json` and `idle_cpu.json`. *ours*: the runtime",
    "through its C ABI; *baseline*: a worker thread per stream fed through a mutex + condition variable",
    "queue of `std::function` (`bench/baseline/cv_stream.hpp`). Ratio: baseline / ours (higher is",
    "better for ours); cv: coefficient of variation over the repetitions. Results are reported, not",
    "asserted.",
    "",
    f"- date: {machine['date']}",
    f"- machine: {machine['nproc']} CPUs, {machine['cpu'] or 'unknown CPU'}",
    f"- load average: {machine['load']}",
    f"- commit: {machine['commit']}",
    f"- binary: {machine['bench']}",
    "",
    "| workload | ours | baseline | baseline/ours | target | result |",
    "|---|---:|---:|---:|---|---|",
]
lines += ["| " + " | ".join(r) + " |" for r in rows]
lines += [
    "",
    "Diagnostics (no targets; they show where the workloads' time goes):",
    "",
    "| diagnostic | ours | baseline | baseline/ours |",
    "|---|---:|---:|---:|",
]
for key, title in DIAGNOSTICS:
    ours = medians.get(key + "/ours")
    base = medians.get(key + "/baseline")
    ratio = f"{base / ours:.1f}x" if ours and base else "n/a"
    lines.append(f"| {title} | {fmt_ns(key + '/ours')} | {fmt_ns(key + '/baseline')} | {ratio} |")
lines += [
    "",
    "Command lists (driver ABI 1.2; per kernel, N empty kernels submitted, then a wait for the last, at the",
    "driver ABI on the simulated driver loaded as a module; the wait spins first, or sleeps at once):",
    "",
    "| wait | N | one list of N | N single submits | single/list |",
    "|---|---:|---:|---:|---:|",
]
for wait, prefix in (("spin", "driver_replay_"), ("sleep", "driver_replay_sleep_")):
    for n in REPLAY_SIZES:
        key = f"{prefix}{n}"
        lst = medians.get(key + "/list")
        single = medians.get(key + "/single")
        ratio = f"{single / lst:.1f}x" if lst and single else "n/a"
        lines.append(f"| {wait} | {n} | {fmt_ns(key + '/list')} | {fmt_ns(key + '/single')} | {ratio} |")
lines.append("")
lines.append(f"Idle CPU samples (% of one core): ours {idle['ours']['samples']}, "
             f"baseline {idle['baseline']['samples']}.")
lines.append("")
with open(md_path, "w") as f:
    f.write("\n".join(lines))
EOF
mv "$out/streams.md.tmp" "$out/streams.md"
cat "$out/streams.md"
