#!/usr/bin/env python3
"""Prints every figure of a new benchmark run beside the committed one and flags what moved.

    bench/compare.py COMMITTED_DIR NEW_DIR

Reads each results file (alloc, streams, graph, history: Google Benchmark JSON; fragmentation,
smi, idle_cpu: the scripts' own JSON) present in both folders. A figure is flagged when it moved
beyond the run-to-run noise:
- timings (Google Benchmark medians, ns_per_op or real time): by more than
  max(10%, 3 x the larger coefficient of variation of the two runs);
- smi start-up medians: by more than max(20%, the spread between p25 and p75 of both runs);
- idle CPU (percent of one core): by more than max(0.5 points, 50%);
- deterministic figures (bytes, counts and ratios of a replayed trace): by any amount.
Lower is better for every figure here. Prints "SLOWER"/"WORSE" or "faster"/"better" beside a flagged
figure, and a summary line. Exit status: 0 whatever moved (results are reported, not asserted), 2 on
unreadable input.
"""
import json
import os
import statistics
import sys

GBENCH = ("alloc", "streams", "graph", "history")
TIMING_FLOOR = 0.10
SMI_FLOOR = 0.20


def load(folder, name):
    path = os.path.join(folder, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def gbench_figures(data):
    """{run_name: (median, cv)} of a Google Benchmark JSON with aggregates."""
    medians, cvs = {}, {}
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"])
        value = b.get("ns_per_op", b.get("real_time"))
        if value is None:
            continue
        if b.get("aggregate_name") == "median":
            medians[name] = value
        elif b.get("aggregate_name") == "cv":
            cvs[name] = value
    return {name: (v, cvs.get(name, 0.0)) for name, v in medians.items()}


def quantiles(values):
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    return q[0], statistics.median(values), q[2]


class Report:
    def __init__(self):
        self.rows = []
        self.flagged = 0
        self.compared = 0

    def add(self, file, name, old, new, threshold, unit="", absolute=False):
        """One figure; threshold is relative (fraction), or absolute in the figure's unit."""
        self.compared += 1
        if old is None or new is None:
            self.rows.append((file, name, fmt(old, unit), fmt(new, unit), "", "only in one run"))
            return
        ratio = new / old if old else (1.0 if new == old else float("inf"))
        moved = abs(new - old) if absolute else abs(ratio - 1.0)
        flag = ""
        if moved > threshold:
            self.flagged += 1
            flag = "SLOWER" if new > old else "faster"
            if unit not in ("ns", "ms"):
                flag = "WORSE" if new > old else "better"
        self.rows.append((file, name, fmt(old, unit), fmt(new, unit), f"{ratio:.2f}", flag))

    def print(self):
        widths = [max(len(str(r[i])) for r in self.rows + [HEADER]) for i in range(len(HEADER))]
        for row in [HEADER] + self.rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        print(f"\ncompare: {self.compared} figures, {self.flagged} moved beyond the noise")


HEADER = ("file", "figure", "committed", "now", "now/committed", "")


def fmt(v, unit):
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        text = f"{v:,.1f}" if abs(v) >= 10 else f"{v:.3g}"
    else:
        text = f"{int(v):,}"
    return f"{text} {unit}".rstrip()


def compare_gbench(report, name, old, new):
    a, b = gbench_figures(old), gbench_figures(new)
    for key in sorted(set(a) | set(b)):
        (va, ca), (vb, cb) = a.get(key, (None, 0.0)), b.get(key, (None, 0.0))
        report.add(name, key, va, vb, max(TIMING_FLOOR, 3 * max(ca, cb)), "ns")


def compare_fragmentation(report, old, new):
    def by_key(runs):
        return {(r["workload"] + (" " + r["conf"] if r["conf"] else "")): r["report"] for r in runs}

    a, b = by_key(old), by_key(new)
    for key in sorted(set(a) | set(b)):
        ra, rb = a.get(key, {}), b.get(key, {})
        for field in ("reserved_over_allocated", "peak_reserved_bytes", "peak_allocated_bytes", "num_device_alloc",
                      "num_alloc_retries", "num_ooms"):
            report.add("fragmentation", f"{key}: {field}", ra.get(field), rb.get(field), 0.0)
        report.add("fragmentation", f"{key}: ns_per_op", ra.get("ns_per_op"), rb.get("ns_per_op"), 0.25, "ns")


def compare_smi(report, old, new):
    for cmd in sorted(set(old["ms"]) | set(new["ms"])):
        qa = quantiles(old["ms"][cmd]) if cmd in old["ms"] else None
        qb = quantiles(new["ms"][cmd]) if cmd in new["ms"] else None
        spread = 0.0
        for q in (qa, qb):
            if q and q[1]:
                spread = max(spread, (q[2] - q[0]) / q[1])
        report.add("smi", cmd + " (median)", qa and qa[1], qb and qb[1], max(SMI_FLOOR, spread), "ms")


def compare_idle(report, old, new):
    for side in ("ours", "baseline"):
        a, b = old.get(side, {}).get("median"), new.get(side, {}).get("median")
        threshold = max(0.5, 0.5 * max(a or 0, b or 0))
        report.add("idle_cpu", side + " (% of a core)", a, b, threshold, "%", absolute=True)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    committed, now = argv[1], argv[2]
    report = Report()
    try:
        for name in GBENCH:
            a, b = load(committed, name), load(now, name)
            if a is not None and b is not None:
                compare_gbench(report, name, a, b)
        pairs = {n: (load(committed, n), load(now, n)) for n in ("fragmentation", "smi", "idle_cpu")}
    except (OSError, ValueError) as e:
        print(f"compare: cannot read the results: {e}", file=sys.stderr)
        return 2
    handlers = {"fragmentation": compare_fragmentation, "smi": compare_smi, "idle_cpu": compare_idle}
    for name, (a, b) in pairs.items():
        if a is not None and b is not None:
            handlers[name](report, a, b)
    if not report.rows:
        print("compare: no results file in both folders", file=sys.stderr)
        return 2
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
