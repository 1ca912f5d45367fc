# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""Segmentation under the AR(1) model, on its own (issue 51): is the likelihood of
experiments/ar_bounds.py a better way to cut real series than the detector's segmentation?

Binary segmentation: in a stretch of at least 2 x HELD points, the step at the place with the
largest AR(1) likelihood ratio (ar_bounds.statistic: phi and the deviation profiled out, a
level on either side) is a change point where the ratio passes BAR, and both sides are
searched again. Series on the log scale where every value is positive, else linear; missing
values left out, as the detector leaves them.

Scored as experiments/annotated_series.py scores the detector (the TCPD F1, a margin of 5),
on the same DIR, and on the moving family with one bar for all: its null series with any
change point, its steps of 3 and 5 deviations with one within 3 commits:

    .venv/bin/python experiments/ar_segmentation.py DIR [BAR]
    .venv/bin/python experiments/ar_segmentation.py DIR BAR hybrid [SEED]
    .venv/bin/python experiments/ar_segmentation.py DIR BAR detrended

``detrended``: a smooth curve fitted first (the best of experiments/ar_curve_bounds.shapes
and a cubic, where it beats a flat level by CURVE_CHARGE x log n per parameter), and the
search run on what it leaves.

``hybrid``: the detector with this search in place of its own segmentation
(significance.segment, as changes.py calls it, on the levels it hands over), everything
after it kept (spikes set aside, pieces and drifts, the t-test of each change point, the
walk reading, curves, the exact rule); scored on the annotated series
(annotated_series.main) and on the three families in process (families_in_process.main).
"""

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import annotated_series  # noqa: E402
import ar_bounds  # noqa: E402

from torchpulse.evaluation import moving  # noqa: E402

HELD = ar_bounds.HELD


def cuts(y: np.ndarray, bar: float) -> list[int]:
    """The change points of ``y`` (indices of each new level's first point)."""
    if len(y) < 2 * HELD:
        return []
    with np.errstate(divide="ignore", invalid="ignore"):  # a flat stretch: no noise at all
        stat, place, _ = ar_bounds.statistic(y[None, :])
    if not stat[0] > bar:
        return []
    k = int(place[0])
    return cuts(y[:k], bar) + [k] + [k + c for c in cuts(y[k:], bar)]


CURVE_CHARGE = 3.0
STEEPEST = 0.05  # of the whole rise in one commit
DETRENDED = False
_CURVES: dict[int, np.ndarray] = {}


def _curves(n: int) -> np.ndarray:
    """[1, curve] designs made orthonormal, one per candidate curve (m x n x 2), and the
    cubic's (as one more of m, its four columns' projection kept apart)."""
    if n not in _CURVES:
        import ar_curve_bounds

        shapes = ar_curve_bounds.shapes(n)
        # only rises spread over at least 1 / STEEPEST commits: a steeper one is a step
        shapes = shapes[np.diff(shapes, axis=1).max(axis=1) <= STEEPEST]
        design = np.stack([np.ones_like(shapes), shapes], axis=2)
        _CURVES[n] = np.linalg.qr(design)[0]
    return _CURVES[n]


def detrend(y: np.ndarray) -> np.ndarray:
    """``y`` less its best smooth curve, where a curve beats a flat level by its charge."""
    n = len(y)
    flat = y - y.mean()
    if n < 12:
        return flat
    q = _curves(n)
    a = np.einsum("mnp,n->mp", q, y)
    rss = float(y @ y) - (a * a).sum(axis=1)
    t = np.linspace(-1.0, 1.0, n)
    powers = np.stack([t ** 0, t, t ** 2, t ** 3], axis=1)
    cubic = powers @ np.linalg.lstsq(powers, y, rcond=None)[0]
    cubic_rss = float(((y - cubic) ** 2).sum())
    charge = CURVE_CHARGE * np.log(n)
    flat_bic = n * np.log(max(float(flat @ flat), 1e-300))
    best = int(rss.argmin())
    curve_bic = n * np.log(max(float(rss[best]), 1e-300)) + 3 * charge  # centre, width, rise
    cubic_bic = n * np.log(max(cubic_rss, 1e-300)) + 3 * charge
    if min(curve_bic, cubic_bic) >= flat_bic:
        return flat
    if cubic_bic < curve_bic:
        return y - cubic
    return y - q[best] @ a[best]


def findings(values: list[float], bar: float) -> list[int]:
    kept = [(i, v) for i, v in enumerate(values) if not math.isnan(v)]
    where = [i for i, _ in kept]
    y = np.array([v for _, v in kept])
    if len(y) and y.min() > 0:
        y = np.log(y)
    return sorted(where[c] for c in cuts(detrend(y) if DETRENDED else y, bar))


def main(root: Path, bar: float) -> None:
    started = time.time()
    series = annotated_series.load(root)
    annotations = json.loads((root / "annotations.json").read_text())
    scores = [annotated_series.f1(annotations[name], findings(values, bar))
              for name, values in series.items()]
    mean = [sum(s[j] for s in scores) / len(scores) for j in range(3)]
    print(f"bar {bar}: {len(scores)} annotated series: F1 {mean[0]:.3f}, precision "
          f"{mean[1]:.3f}, recall {mean[2]:.3f} ({time.time() - started:.1f} s)")
    rng = np.random.default_rng([17, 51, 5])
    for kind in moving.KINDS:
        y = ar_bounds.draws(kind, 0.0, 200, rng)[0]
        prepare = detrend if DETRENDED else (lambda row: row)
        listed = np.mean([bool(cuts(prepare(row), bar)) for row in y])
        located = []
        for k in moving.STEP_SIGMAS:
            y, at = ar_bounds.draws(kind, k * moving.SIGMA, 100, rng)
            located.append(np.mean([any(abs(c - a) <= ar_bounds.LOCATED
                                        for c in cuts(prepare(row), bar))
                                    for row, a in zip(y, at, strict=True)]))
        print(f"  {kind}: null {listed:.1%} of 200 with a change point; steps located "
              + " / ".join(f"{k:g} dev {v:.0%}" for k, v in zip(moving.STEP_SIGMAS, located,
                                                                strict=True)))


def hybrid(bar: float) -> None:
    """Put this search in the detector's place of segmentation."""
    from torchpulse.analysis.detector import changes

    changes.segment = lambda tester, alpha: cuts(np.asarray(tester.x, dtype=float), bar)


if __name__ == "__main__":
    bar = float(sys.argv[2]) if len(sys.argv) > 2 else 18.0
    if len(sys.argv) > 3 and sys.argv[3] == "hybrid":
        import families_in_process

        hybrid(bar)
        annotated_series.main(Path(sys.argv[1]), False)
        families_in_process.main(int(sys.argv[4]) if len(sys.argv) > 4 else 17, 20)
    else:
        DETRENDED = len(sys.argv) > 3 and sys.argv[3] == "detrended"
        main(Path(sys.argv[1]), bar)
