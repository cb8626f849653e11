#!/usr/bin/env bash
# Runs the graph benchmarks and writes
#   bench/results/graph.json   raw Google Benchmark JSON (5 repetitions, aggregates only)
#   bench/results/graph.md     per workload: our median, the eager reference's, the ratio, the
#                              criterion and whether it is met
#
#   bench/run_graph.sh [GRAPH_BENCH]
#
# GRAPH_BENCH defaults to bench/graph_bench of $MTIA_BUILD_DIR, else of build/, else of the most
# recently built build*/ folder. The simulated device gets 4 engines (MTIA_SIM_ENGINES, for the
# diamond's 4 branches) unless MTIA_SIM_ENGINES is set. MTIA_BENCH_RESULTS, MTIA_BENCH_ARGS and
# MTIA_BENCH_COMMIT as in bench/lib.sh. Results are reported, never asserted: the exit status is 0
# whatever the numbers, non-zero only when the program fails.
set -euo pipefail

bench_script=run_graph # names its messages
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_setup graph_bench "${1:-}"
export MTIA_SIM_ENGINES="${MTIA_SIM_ENGINES:-4}"

echo "run_graph: $bench (load average $load_before, MTIA_SIM_ENGINES=$MTIA_SIM_ENGINES)"
"$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_format=json \
  "${extra[@]}" >"$out/graph.json.tmp" || die "$bench failed (partial output in $out/graph.json.tmp)"
mv "$out/graph.json.tmp" "$out/graph.json"

bench_export_run_facts
python3 - "$out/graph.json" "$out/graph.md.tmp" <<'EOF'
import json
import os
import sys

bench_path, md_path = sys.argv[1:3]
machine = {key: os.environ["RUN_" + key.upper()] for key in ("date", "nproc", "cpu", "commit", "bench", "load")}

REPLAY_SIZES = [1, 10, 100, 1000]
REPLAY_TARGET_NS = 50  # per node, at the largest graph
REPLAY_SPEEDUP = 5  # eager / replay, at the largest graph
INSTANTIATE_SIZES = [100, 1000, 10000]
INSTANTIATE_TARGET_NS = 1000  # per node, at 1000 nodes
DIAMOND_SLACK = 1.25  # the diamond's replay over one branch's: "about the time of one branch"

with open(bench_path) as f:
    data = json.load(f)
context = data.get("context", {})
medians, spreads, counters, errors = {}, {}, {}, {}
for b in data.get("benchmarks", []):
    # run_name is WORKLOAD/SIDE[/ARG][/real_time|/manual_time]
    name = "/".join(b.get("run_name", b["name"]).split("/")[:2])
    if b.get("error_occurred"):
        errors[name] = b.get("error_message", "error")
    if "ns_per_op" not in b:
        continue
    if b.get("aggregate_name") == "median":
        medians[name] = b["ns_per_op"]
        counters[name] = b
    elif b.get("aggregate_name") == "cv":
        spreads[name] = b["ns_per_op"]


def fmt(name):
    if name in errors:
        return "error"
    v = medians.get(name)
    if v is None:
        return "n/a"
    if v >= 1e6:
        text = f"{v / 1e6:.2f} ms"
    elif v >= 1e4:
        text = f"{v / 1e3:,.1f} us"
    elif v >= 100:
        text = f"{v:,.0f} ns"
    else:
        text = f"{v:.1f} ns"
    if name in spreads:
        text += f" (cv {100 * spreads[name]:.0f}%)"
    return text


def verdict(checks, names):
    for n in names:
        if n in errors:
            return f"error: {errors[n]}"
    if not checks:
        return "reported"
    return "**yes**" if all(checks) else "**NO**"


rows = []
largest = REPLAY_SIZES[-1]
for n in REPLAY_SIZES:
    ours, eager = f"replay_{n}/ours", f"replay_{n}/eager"
    o, e = medians.get(ours), medians.get(eager)
    ratio = e / o if o and e else None
    criterion, checks = "-", []
    if n == largest:
        criterion = f"<= {REPLAY_TARGET_NS} ns per node; eager/replay >= {REPLAY_SPEEDUP}x"
        checks = [o is not None and o <= REPLAY_TARGET_NS, ratio is not None and ratio >= REPLAY_SPEEDUP]
    rows.append((f"replay of {n} empty kernel node{'s' if n > 1 else ''} + synchronize, per node", fmt(ours),
                 fmt(eager), f"eager/replay {ratio:.1f}x" if ratio else "n/a", criterion,
                 verdict(checks, [ours, eager])))
for n in INSTANTIATE_SIZES:
    ours = f"instantiate_{n}/ours"
    o = medians.get(ours)
    criterion, checks = "-", []
    if n == 1000:
        criterion = f"<= {INSTANTIATE_TARGET_NS:,} ns per node"
        checks = [o is not None and o <= INSTANTIATE_TARGET_NS]
    rows.append((f"instantiate a kept {n:,}-node graph, per node", fmt(ours), "-", "-", criterion,
                 verdict(checks, [ours])))
rows.append(("capture 1,000 launches (begin, launches, end), per node", fmt("capture_1000/ours"), "-", "-", "-",
             verdict([], ["capture_1000/ours"])))

diamond, eager, one = "diamond/ours", "diamond/eager", "one_branch/ours"
d, e, b = medians.get(diamond), medians.get(eager), medians.get(one)
rows.append(("4-branch diamond, replay + synchronize (reference: the same work eager on 4 streams)", fmt(diamond),
             fmt(eager), f"eager/replay {e / d:.2f}x" if d and e else "n/a", "-", verdict([], [diamond, eager])))
rows.append(("4-branch diamond replay vs one branch alone replayed (reference: one branch)", fmt(diamond), fmt(one),
             f"diamond/one branch {d / b:.2f}" if d and b else "n/a", f"<= {DIAMOND_SLACK:g} (about one branch)",
             verdict([d is not None and b is not None and d / b <= DIAMOND_SLACK], [diamond, one])))


def shape(name):
    c = counters.get(name, {})
    if "nodes" not in c:
        return "n/a"
    return f"{c['nodes']:.0f} nodes on {c['lanes']:.0f} lane{'s' if c['lanes'] != 1 else ''}"


sample = counters.get(diamond) or counters.get(one) or {}
branches = sample.get("branches", 4)
depth = sample.get("sleeps_per_branch", 0)
sleep_us = sample.get("sleep_us", 0)

lines = [
    "# Graphs: benchmark results",
    "",
    "Medians of 5 repetitions (Google Benchmark, wall time; counter `ns_per_op`), generated by",
    "`bench/run_graph.sh` from `bench/graph_bench.cpp`; raw data in `graph.json`. *ours*: graph replay",
    "(or instantiate, or capture) through the public C ABI; *reference*: the same kernels launched",
    "eagerly in the same run (`mtiaLaunchKernel` one by one, then `mtiaStreamSynchronize`), or, for",
    "the last row, one branch of the diamond replayed alone. Replays of straight-line graphs: one",
    "replay of N `noop` kernels + `mtiaStreamSynchronize` per iteration, time per node (replay time / N).",
    "cv: coefficient of variation over the repetitions. Results are reported, not asserted.",
    "",
    f"- date: {machine['date']}",
    f"- machine: {machine['nproc']} CPUs, {machine['cpu'] or 'unknown CPU'} (shared with other work: see",
    "  the load average)",
    f"- load average: {machine['load']}",
    f"- commit measured: {machine['commit']}",
    f"- binary: {machine['bench']}",
    f"- simulated device: {context.get('device', '?')}, {context.get('engines', '?')} engines",
    f"- diamond: {branches:.0f} branches of {depth:.0f} `sleep_us({sleep_us:.0f})` kernels each "
    f"(one branch: {depth * sleep_us / 1000:g} ms of sleeps; all run one after another: "
    f"{branches * depth * sleep_us / 1000:g} ms); graphs: diamond {shape(diamond)}, one branch {shape(one)}",
    "",
    "| workload | ours (median) | reference (median) | ratio | criterion | met? |",
    "|---|---:|---:|---|---|---|",
]
lines += ["| " + " | ".join(r) + " |" for r in rows]
lines += ["", "Per replay (straight-line graphs): " + ", ".join(
    f"{n} node{'s' if n > 1 else ''} {medians[f'replay_{n}/ours'] * n / 1000:,.1f} us"
    for n in REPLAY_SIZES if f"replay_{n}/ours" in medians) + ".", ""]
with open(md_path, "w") as f:
    f.write("\n".join(lines))
EOF
mv "$out/graph.md.tmp" "$out/graph.md"
cat "$out/graph.md"
