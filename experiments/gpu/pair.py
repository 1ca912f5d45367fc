"""Two processes of the GPU suite's measurement compared workload by workload: suite.sh's
`pair` steps, the second as a user's CI differs from the first (another clone path, working
directory, environment and asv machine name, CPU hogs beside it). docs/gpu.md, "Two
processes as CI differs".

    python experiments/gpu/pair.py rows.jsonl [--labels a,b] [--table]

Reads measure_once.py's ``--rows`` lines (a line a workload, as measured). Prints, over the
workloads both processes measured: the exact counters that differ, each timed figure's
largest and median difference of the medians, and the seconds each process spent; with
``--table`` a row a workload.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

COUNTERS = ("kernels", "syncs", "copies", "gpu_memory")
TIMED = ("kernel_time", "wall")


def rows(path: Path, label: str) -> dict[str, dict]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("label") == label:
                out[row["workload"]] = row
    return out


def difference(a: list[float], b: list[float]) -> float:
    """b's median relative to a's, as a fraction."""
    first, second = statistics.median(a), statistics.median(b)
    return (second - first) / first if first else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path)
    parser.add_argument("--labels", default="a,b")
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    first, second = args.labels.split(",")
    a, b = rows(args.rows, first), rows(args.rows, second)
    both = [n for n in a if n in b and "figures" in a[n] and "figures" in b[n]]
    failed = {n: r["failed"] for r_ in (a, b) for n, r in r_.items() if "failed" in r}
    print(f"{len(a)} workloads in {first} ({sum(r['seconds'] for r in a.values()):.1f} s), "
          f"{len(b)} in {second} ({sum(r['seconds'] for r in b.values()):.1f} s); "
          f"{len(both)} measured by both; failed: {failed or 'none'}")
    for key in COUNTERS:
        moved = [(n, a[n]["figures"][key], b[n]["figures"][key]) for n in both
                 if a[n]["figures"][key] != b[n]["figures"][key]]
        print(f"{key}: {len(both) - len(moved)} of {len(both)} the same"
              + (f"; differ: {moved[:8]}" if moved else ""))
    for key in TIMED:
        diffs = sorted(((abs(difference(a[n]["figures"][key], b[n]["figures"][key])), n)
                        for n in both), reverse=True)
        if not diffs:
            continue
        sizes = [d for d, _ in diffs]
        print(f"{key}: largest {sizes[0]:.2%} ({diffs[0][1]}), median "
              f"{statistics.median(sizes):.2%}, within 1 %: {sum(d <= 0.01 for d in sizes)} "
              f"of {len(sizes)}, within 5 %: {sum(d <= 0.05 for d in sizes)}; next: "
              + ", ".join(f"{n} {d:.2%}" for d, n in diffs[1:6]))
    by_family: dict[str, list[float]] = {}
    for n, r in a.items():
        by_family.setdefault(n.split("/")[0], []).append(r["seconds"])
    print("seconds in " + first + ": " + ", ".join(
        f"{f} {sum(s):.1f} ({len(s)})" for f, s in by_family.items()))
    if args.table:
        print("\n| workload | kernels | kernel time a, ms | b | diff | wall a, ms | b | diff "
              "| s a | s b |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in both:
            fa, fb = a[n]["figures"], b[n]["figures"]
            kernels = (f"{fa['kernels']}" if fa["kernels"] == fb["kernels"]
                       else f"{fa['kernels']} / {fb['kernels']}")
            print(f"| {n} | {kernels} | {statistics.median(fa['kernel_time']) * 1e3:.4f} | "
                  f"{statistics.median(fb['kernel_time']) * 1e3:.4f} | "
                  f"{difference(fa['kernel_time'], fb['kernel_time']):+.2%} | "
                  f"{statistics.median(fa['wall']) * 1e3:.3f} | "
                  f"{statistics.median(fb['wall']) * 1e3:.3f} | "
                  f"{difference(fa['wall'], fb['wall']):+.1%} | {a[n]['seconds']:.1f} | "
                  f"{b[n]['seconds']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
