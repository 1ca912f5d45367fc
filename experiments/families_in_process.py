# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""The detector on all three families of evaluate-detection in process, without asv or the
false-discovery step across series: per kind, the share of series without a change that got
any change point, and the share of planted steps located within 3 commits (the synthetic
family: within 1, its own rule, and found by an active regression). A quick before/after
for a change to analysis/detector/, not the command's report.
Run: .venv/bin/python experiments/families_in_process.py [SEED] [PER_CELL]"""

import sys
import time
from collections import defaultdict

import numpy as np

from torchpulse.analysis.detector import Point, analyse
from torchpulse.evaluation import moving, shapes, synthetic


def _points(values, samples=None):
    points, where = [], []
    for i, v in enumerate(values):
        if v is not None:
            points.append(Point(f"c{i}", float(v), tuple(samples[i]) if samples else ()))
            where.append(i)
    return points, where


def family(name, truths, draw):
    rows = defaultdict(lambda: [0, 0, 0, 0])  # series, any change point, located, active
    for t in truths:
        values, samples = draw(t)
        points, where = _points(values, samples)
        verdict = analyse(points)
        found = [where[c.index] for c in verdict.change_points]
        kind = getattr(t, "shape", getattr(t, "kind", "?"))
        change = getattr(t, "change", "step" if kind == "step" else "none")
        row = rows[(name, kind, change, round(t.size, 3) if change == "step" else 0.0)]
        row[0] += 1
        row[1] += bool(found)
        near = 1 if name == "synthetic" else 3
        row[2] += change == "step" and any(abs(c - t.at) <= near for c in found)
        row[3] += bool(verdict.active)
    return rows


def main(seed: int, per: int) -> None:
    started = time.time()
    rng = np.random.default_rng(seed)
    out = {}
    truths = moving.plan(100, per, 4 * per, rng)
    out |= family("moving", truths, lambda t: (moving.draw(t, 100, rng), None))
    truths = shapes.plan(100, per, rng, 4 * per)

    def shaped(t):
        d = shapes.draw(t, 100, rng)
        return d.values, d.samples

    out |= family("shapes", truths, shaped)
    noise = synthetic.NoiseModel()
    truths = synthetic.plan(max(per // 4, 1), 4 * per, 60, rng)

    def drawn(t):
        s = synthetic._samples(synthetic._levels(t, 60), t.cv, noise, rng)
        return [float(np.median(r)) for r in s], s.tolist()

    out |= family("synthetic", truths, drawn)
    for (fam, kind, change, size), (n, anycp, located, active) in sorted(out.items()):
        print(f"{fam:10} {kind:12} {change:6} {size:5.3f} n={n:4} any={anycp / n:6.3f} "
              f"located={located / n:6.3f} active={active / n:6.3f}")
    print(f"{time.time() - started:.1f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 17,
         int(sys.argv[2]) if len(sys.argv) > 2 else 20)
