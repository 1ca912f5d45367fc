# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""Detection on the shapes family in process, without asv: change points, located steps,
active alerts and drifts per (shape, change, size). Measured: the before figures of the
"Series shapes the generator never makes" entry in experiments/diary/detection.md (2026-11-26; run at the
commit before b5ae0dc, where `shapes.py` was copied in).
Run: .venv/bin/python experiments/shapes_in_process.py [COMMITS] [PER_CELL]"""

import sys
import time
from collections import defaultdict

import numpy as np

from torchpulse.analysis.detector import Point, analyse
from torchpulse.evaluation import shapes


def main(commits: int, per: int) -> None:
    rng = np.random.default_rng(1)
    truths = shapes.plan(commits, per, rng)
    # series, any change point, change points, located within 3, active, drifts
    stats: dict[tuple, list[int]] = defaultdict(lambda: [0] * 6)
    started = time.time()
    for t in truths:
        drawn = shapes.draw(t, commits, rng)
        points, where = [], []
        for i, (value, samples) in enumerate(zip(drawn.values, drawn.samples, strict=True)):
            if value is not None:
                points.append(Point(f"c{i}", value, tuple(samples)))
                where.append(i)
        verdict = analyse(points)
        found = [where[c.index] for c in verdict.change_points]
        row = stats[(t.shape, t.change, t.size)]
        row[0] += 1
        row[1] += bool(found)
        row[2] += len(found)
        row[3] += t.change == "step" and any(abs(c - t.at) <= 3 for c in found)
        row[4] += bool(verdict.active)
        row[5] += len(getattr(verdict, "drifts", ()))
    for key, (n, anycp, cps, located, active, drifts) in sorted(stats.items()):
        print(f"{str(key):38} n={n:3} any={anycp / n:.2f} cps/series={cps / n:5.1f} "
              f"located={located / n:.2f} active={active / n:.2f} drifts={drifts / n:.2f}")
    print(f"{time.time() - started:.1f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100,
         int(sys.argv[2]) if len(sys.argv) > 2 else 30)
