# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""The detector on real series with change points drawn by people: the Turing Change Point
Dataset (van den Burg and Williams, 2020; github.com/alan-turing-institute/TCPD, kept
outside this repository so that nothing here is tuned to it). Each series is analysed as
one benchmark history; its change points and the first commit of each drift are the
findings, scored by the dataset's F1 (a margin of 5 points, the first point counted as a
change point in every set, precision against all annotators' points, recall averaged
over annotators), next to the score of finding nothing.

DIR is a TCPD checkout (datasets/NAME/NAME.json and annotations.json; the 31 univariate
series that come with their data) or a directory of NAME.txt files, the values separated
by spaces ('nan' where one is missing), with the same annotations.json.
Run: .venv/bin/python experiments/annotated_series.py DIR [--per-series]

With --findings, no scores and no annotations.json: one JSON line per series, [name, points,
findings]. Two versions of the detector that give the same lines score the same; run one of
them with PYTHONPATH=<a worktree>/src (any subset of the series will do)."""

import json
import math
import sys
import time
from pathlib import Path

from torchpulse.analysis.detector import Point, analyse

MARGIN = 5


def load(root: Path) -> dict[str, list[float]]:
    out = {}
    if (root / "datasets").is_dir():
        for path in sorted((root / "datasets").glob("*/*.json")):
            data = json.loads(path.read_text())
            if data.get("n_dim") == 1 and data["name"] != "run_log":
                out[data["name"]] = [math.nan if v is None else float(v)
                                     for v in data["series"][0]["raw"]]
    else:
        for path in sorted(root.glob("*.txt")):
            out[path.stem] = [float(v) for v in path.read_text().split()]
    return out


def true_positives(truth: set[int], found: set[int]) -> int:
    """Points of ``truth`` with a finding within MARGIN, each finding used once (closest)."""
    left, hits = set(found), 0
    for t in sorted(truth):
        close = sorted((abs(t - x), x) for x in left if abs(t - x) <= MARGIN)
        if close:
            hits += 1
            left.remove(close[0][1])
    return hits


def f1(annotations: dict[str, list[int]], found: list[int]) -> tuple[float, float, float]:
    sets = [set(v) | {0} for v in annotations.values()]
    x = set(found) | {0}
    precision = true_positives(set().union(*sets), x) / len(x)
    recall = sum(true_positives(s, x) / len(s) for s in sets) / len(sets)
    f = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return f, precision, recall


def findings(values: list[float]) -> list[int]:
    kept = [(i, v) for i, v in enumerate(values) if not math.isnan(v)]
    where = [i for i, _ in kept]
    verdict = analyse([Point(f"c{i}", v) for i, (_, v) in enumerate(kept)])
    return sorted({where[c.index] for c in verdict.change_points}
                  | {where[d.start] for d in verdict.drifts})


def main(root: Path, per_series: bool) -> None:
    started = time.time()
    series = load(root)
    annotations = json.loads((root / "annotations.json").read_text())
    rows = []
    for name, values in series.items():
        found = findings(values)
        rows.append((name, len(values), len(found), f1(annotations[name], found),
                     f1(annotations[name], [])[0]))
    if per_series:
        print("| series | points | findings | F1 | precision | recall | F1 of none |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
        for name, n, k, (f, p, r), zero in rows:
            print(f"| {name} | {n} | {k} | {f:.3f} | {p:.3f} | {r:.3f} | {zero:.3f} |")
    mean = [sum(r[3][j] for r in rows) / len(rows) for j in range(3)]
    zero = sum(r[4] for r in rows) / len(rows)
    print(f"\n{len(rows)} series: F1 {mean[0]:.3f}, precision {mean[1]:.3f}, recall "
          f"{mean[2]:.3f}; finding nothing: F1 {zero:.3f} ({time.time() - started:.1f} s)")


def print_findings(root: Path) -> None:
    for name, values in load(root).items():
        print(json.dumps([name, len(values), findings(values)]))


if __name__ == "__main__":
    if "--findings" in sys.argv[2:]:
        print_findings(Path(sys.argv[1]))
    else:
        main(Path(sys.argv[1]), "--per-series" in sys.argv[2:])
