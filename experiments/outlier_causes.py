# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""Where the detector's change points fall in null series of the moving family's outlier
kind: white noise of one deviation, 5-10 deviation outliers at OUTLIER_SHARE of commits,
and one to three excursions of 2-3 commits at 4 deviations that come back (drawn here as
torchpulse.evaluation.moving draws them, with the outliers' and excursions' places kept).
Each change point is put down to an excursion's edge (within one commit of its first
commit or of the one after it), an outlier (within one commit), or neither.
Run: .venv/bin/python experiments/outlier_causes.py [SEED] [SERIES]"""

import sys
from collections import Counter

import numpy as np

from torchpulse.analysis.detector import Point, analyse
from torchpulse.evaluation import moving


def main(seed: int, series: int, n: int = 100) -> None:
    rng = np.random.default_rng([seed, 99])
    causes: Counter[str] = Counter()
    listed = 0
    for _ in range(series):
        white = rng.normal(0.0, moving.SIGMA, n)
        far = rng.random(n) < moving.OUTLIER_SHARE
        white[far] += rng.uniform(5.0, 10.0, int(far.sum())) * moving.SIGMA
        edges = []
        for _ in range(int(rng.integers(1, 4))):
            start, width = int(rng.integers(0, n - 3)), int(rng.integers(2, 4))
            white[start:start + width] += 4.0 * moving.SIGMA
            edges += [start, start + width]
        verdict = analyse([Point(f"c{i}", float(0.01 * np.exp(x))) for i, x in enumerate(white)])
        listed += bool(verdict.change_points)
        for c in verdict.change_points:
            if any(abs(c.index - e) <= 1 for e in edges):
                causes["an excursion's edge"] += 1
            elif any(abs(c.index - j) <= 1 for j in np.flatnonzero(far)):
                causes["an outlier"] += 1
            else:
                causes["neither"] += 1
    print(f"seed {seed}: {listed} of {series} null series with a change point; "
          f"change points at {dict(causes)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 17,
         int(sys.argv[2]) if len(sys.argv) > 2 else 400)
