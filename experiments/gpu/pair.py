"""Two processes of the GPU suite's measurement compared workload by workload: suite.sh's
`pair` steps, the second as a user's CI differs from the first (another clone path, working
directory, environment and asv machine name, CPU hogs beside it). docs/gpu.md, "Two
processes as CI differs".

    python experiments/gpu/pair.py rows.jsonl [--labels a,b] [--table]
    python experiments/gpu/pair.py rows.jsonl --labels a,asv --asv RESULTS.json

Reads measure_once.py's ``--rows`` lines (a line a workload, as measured); with ``--asv``,
the label ``asv`` is an asv results file of ``bench_gpu`` stored with ``--record-samples``
(suite.sh's ``asv_full``), so a run through asv compares with a direct one. Prints, over the
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
# rows of the wall-time bursts trial (3b487ff, run 15 in docs/gpu.md), which carry
# ``wall_bursts``: what their first burst alone and the median of every burst say
BURSTS = ("wall, first burst", "wall, every burst")


def rows(path: Path, label: str) -> dict[str, dict]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("label") == label:  # the last line: the final figures
                bursts = row.get("figures", {}).get("wall_bursts")
                if bursts:
                    row["figures"][BURSTS[0]] = bursts[0]
                    row["figures"][BURSTS[1]] = [statistics.median(b) for b in bursts]
                out[row["workload"]] = row
    return out


def asv_rows(path: Path) -> dict[str, dict]:
    """bench_gpu's figures from an asv results file, as rows (no copies, no seconds)."""
    stored = json.loads(path.read_text())
    columns = stored["result_columns"]
    per_figure = {"track_kernels": "kernels", "track_syncs": "syncs",
                  "track_gpu_memory": "gpu_memory", "track_kernel_time": "kernel_time",
                  "track_wall_time": "wall"}
    out: dict[str, dict] = {}
    for method, key in per_figure.items():
        # asv leaves trailing empty columns out of a row
        row = dict(zip(columns, stored["results"][f"bench_gpu.Workloads.{method}"],
                       strict=False))
        samples = row.get("samples") or [None] * len(row["result"])
        for param, value, sample in zip(row["params"][0], row["result"], samples,
                                        strict=True):
            if value is None:
                continue
            figures = out.setdefault(param.strip("'"), {"figures": {"copies": None},
                                                         "seconds": 0.0})["figures"]
            figures[key] = sample if key in TIMED else value
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
    parser.add_argument("--asv", type=Path, help="an asv results file, read as label asv")
    args = parser.parse_args()
    first, second = args.labels.split(",")
    a, b = (asv_rows(args.asv) if args.asv and label == "asv" else rows(args.rows, label)
            for label in (first, second))
    both = [n for n in a if n in b and "figures" in a[n] and "figures" in b[n]
            and all(k in a[n]["figures"] and k in b[n]["figures"] for k in TIMED)]
    failed = {n: r["failed"] for r_ in (a, b) for n, r in r_.items() if "failed" in r}
    print(f"{len(a)} workloads in {first} ({sum(r['seconds'] for r in a.values()):.1f} s), "
          f"{len(b)} in {second} ({sum(r['seconds'] for r in b.values()):.1f} s); "
          f"{len(both)} measured by both; failed: {failed or 'none'}")
    for key in COUNTERS:
        held = [n for n in both
                if a[n]["figures"].get(key) is not None and b[n]["figures"].get(key) is not None]
        if not held:
            continue
        moved = [(n, a[n]["figures"][key], b[n]["figures"][key]) for n in held
                 if a[n]["figures"][key] != b[n]["figures"][key]]
        print(f"{key}: {len(held) - len(moved)} of {len(held)} the same"
              + (f"; differ: {moved[:8]}" if moved else ""))
    for key in TIMED + BURSTS:
        diffs = sorted(((abs(difference(a[n]["figures"][key], b[n]["figures"][key])), n)
                        for n in both if key in a[n]["figures"] and key in b[n]["figures"]),
                       reverse=True)
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
