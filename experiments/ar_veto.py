# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""What experiments/ar_bounds.py's test would do inside the detector (issue 51): every change
point segmentation lists (between two levels, in a noisy series, with at least AFTER commits
after it) must also pass the AR(1) likelihood-ratio test of a step at its place, in the
window between its neighbouring change points (phi and the deviation profiled out, as in
ar_bounds.statistic), at BAR; the others are dropped. The newest commits keep today's rule:
there a wander and a step look alike (ar_bounds.py).

Runs experiments/families_in_process.py with the detector so patched, in process:

    [PER_CELL=20] .venv/bin/python experiments/ar_veto.py SEED [BAR] [AFTER] [trend|levels]
    [PER_CELL=20] .venv/bin/python experiments/ar_veto.py SEED route PHI

Without BAR, today's detector. ``levels``: no veto in a series whose pieces hold a drift;
``trend``: a line instead of a level under the step. ``route``: no veto; instead a series
whose pieces are all levels is also read as a walk (changes._wandering) where the phi
fitted with its best step (ar_bounds.statistic) is at least PHI. PER_CELL:
families_in_process's.
"""

import os
import sys
from pathlib import Path

import numpy as np

from torchpulse.analysis.detector import changes

sys.path.insert(0, str(Path(__file__).parent))
import ar_bounds  # noqa: E402
import families_in_process  # noqa: E402

LEVELS_ONLY = False  # no veto in a series whose pieces hold a drift (a curve's staircase)
TREND = False  # a line instead of a level under the step (a curve's window is one)


def step_statistic(y: np.ndarray, place: int) -> float:
    """Twice the log likelihood ratio of a step at ``place`` in ``y`` (AR(1) noise, phi and
    the deviation profiled out)."""
    m = len(y)
    step = (np.arange(m) >= place).astype(float)
    base = np.stack([np.ones(m), np.linspace(-1.0, 1.0, m)], axis=1) if TREND else \
        np.ones((m, 1))
    best0 = best1 = -np.inf
    for phi in ar_bounds.PHIS:
        z, w = ar_bounds._whiten(y, phi), ar_bounds._whiten(step, phi)
        q = np.linalg.qr(ar_bounds._whiten(base.T, phi).T)[0]
        w -= q @ (q.T @ w)
        a = q.T @ z
        rss0 = z @ z - a @ a
        rss1 = rss0 - (z @ w) ** 2 / (w @ w)
        jacobian = 0.5 * np.log(1.0 - phi * phi)
        best0 = max(best0, -0.5 * m * np.log(max(rss0, 1e-300)) + jacobian)
        best1 = max(best1, -0.5 * m * np.log(max(rss1, 1e-300)) + jacobian)
    return 2.0 * (best1 - best0)


def patch(bar: float, after: int) -> None:
    original = changes._change_points

    def vetoed(scaled, fit, parts, alpha):
        found, jumps = original(scaled, fit, parts, alpha)
        if scaled.exact or not found or (LEVELS_ONLY and any(q.line for q in parts)):
            return found, jumps
        n = len(fit.levels)
        where = [int(np.searchsorted(fit.keep, c.index)) for c in found]
        kept = []
        for i, (c, at) in enumerate(zip(found, where, strict=True)):
            start = where[i - 1] if i > 0 else 0
            stop = where[i + 1] if i + 1 < len(where) else n
            if n - at < after or step_statistic(fit.levels[start:stop], at - start) >= bar:
                kept.append(c)
        return kept, jumps

    changes._change_points = vetoed


def route(least_phi: float) -> None:
    original = changes._wandering

    def wandering(scaled, fit, parts):
        if original(scaled, fit, parts):
            return True
        if scaled.exact or scaled.linear or len(fit.raw) < 20 or any(q.line for q in parts):
            return False
        return bool(ar_bounds.statistic(np.asarray(fit.raw)[None, :])[2][0] >= least_phi)

    changes._wandering = wandering


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 17
    TREND = len(sys.argv) > 4 and sys.argv[4] == "trend"
    LEVELS_ONLY = len(sys.argv) > 4 and sys.argv[4] == "levels"
    if len(sys.argv) > 2 and sys.argv[2] == "route":
        route(float(sys.argv[3]))
    elif len(sys.argv) > 2:
        patch(float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 10)
    families_in_process.main(seed, int(os.environ.get("PER_CELL", "20")))
