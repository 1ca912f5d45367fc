"""The instruction series of a history that null_history.sh measured: each workload's spread
over the null commits before the planted one, and its step at the planted commit
(docs/instructions.md, "Threshold").

    python experiments/instructions/null_spread.py DIR/repo [--machine nullhist] [--table]

Reads asv's results of bench_instructions in DIR/repo/results/MACHINE, orders them by the
branch's first-parent history, finds the planted commit by its subject ("planted: ..."),
and prints the largest spread (max - min over the median) of any series over the null
commits before it, how many series stay within 0.1 / 0.2 / 0.5 / 1 %, the workloads
whose count moved at the planted commit by more than the null spread, and how the null
commits' differences grow with their distance (a walk's as the square root of it).
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
from pathlib import Path

from torchpulse.results import asv_results

BENCH = "bench_instructions.Instructions.track_instructions"


def history(repo: Path) -> list[tuple[str, str]]:
    """(sha, subject) of the first-parent history, oldest first."""
    out = subprocess.run(["git", "-C", str(repo), "log", "--first-parent", "--reverse",
                          "--format=%H %s"], capture_output=True, text=True, check=True)
    return [tuple(line.split(" ", 1)) for line in out.stdout.splitlines()]


def counts(repo: Path, machine: str) -> dict[str, dict[str, float]]:
    """{sha: {workload: instructions}} of every stored commit."""
    out: dict[str, dict[str, float]] = {}
    for path in sorted((repo / "results" / machine).glob("*.json")):
        if path.name == "machine.json":
            continue
        results = asv_results.load(path)
        if BENCH not in asv_results.benchmarks(results):
            continue
        row = {}
        for combo, value, _ in asv_results.rows(results, BENCH):
            if isinstance(value, int | float) and value == value:
                row[combo[0].strip("'")] = float(value)
        out[results.commit_hash] = row
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--machine", default="nullhist")
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    stored = counts(args.repo, args.machine)
    commits = [(sha, subject) for sha, subject in history(args.repo) if sha in stored]
    planted = next(i for i, (_, subject) in enumerate(commits) if subject.startswith("planted"))
    null = [stored[sha] for sha, _ in commits[:planted]]
    after = [stored[sha] for sha, _ in commits[planted:]]
    names = sorted(set.intersection(*(set(r) for r in null + after)))
    print(f"{len(commits)} commits stored, {planted} null before the planted one, "
          f"{len(after) - 1} after; {len(names)} workloads in every commit")
    spread = {}
    for name in names:
        values = [r[name] for r in null]
        spread[name] = (max(values) - min(values)) / statistics.median(values)
    ranked = sorted(spread.items(), key=lambda kv: -kv[1])
    print(f"null spread (max - min over median, {planted} commits): largest "
          f"{ranked[0][1]:.3%} ({ranked[0][0]}), median "
          f"{statistics.median(spread.values()):.3%}; within 0.1 %: "
          f"{sum(s <= 0.001 for s in spread.values())}, 0.2 %: "
          f"{sum(s <= 0.002 for s in spread.values())}, 0.5 %: "
          f"{sum(s <= 0.005 for s in spread.values())}, 1 %: "
          f"{sum(s <= 0.01 for s in spread.values())} of {len(names)}")
    print("next largest: " + ", ".join(f"{n} {s:.3%}" for n, s in ranked[1:8]))
    steps = []
    for name in names:
        before = statistics.median(r[name] for r in null)
        later = statistics.median(r[name] for r in after)
        steps.append(((later - before) / before, name))
    moved = [(s, n) for s, n in sorted(steps, reverse=True) if abs(s) > spread[n]]
    print("moved at the planted commit beyond their null spread: "
          + (", ".join(f"{n} {s:+.3%}" for s, n in moved) or "none"))
    # do the null moves add up (a walk: the difference k commits apart grows as sqrt(k))
    # or scatter around one level (it stays flat)? The detector reads the two differently
    for k in (1, 2, 4, 8, 12):
        if k < len(null):
            rms = [math.sqrt(statistics.fmean(
                (math.log(null[i + k][n] / null[i][n])) ** 2 for i in range(len(null) - k)))
                for n in names]
            print(f"commits {k:2} apart: median root mean square log difference "
                  f"{statistics.median(rms):.3%}")
    if args.table:
        print("\n| workload | null median | null spread | after the plant | step |")
        print("|---|---:|---:|---:|---:|")
        for step, name in sorted(steps, key=lambda sn: -spread[sn[1]]):
            before = statistics.median(r[name] for r in null)
            later = statistics.median(r[name] for r in after)
            print(f"| `{name}` | {before:,.0f} | {spread[name]:.3%} | {later:,.0f} | "
                  f"{step:+.3%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
