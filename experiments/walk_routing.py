# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""Why null series of the moving family (evaluation/moving.py) get change points: for each
series without a planted change that lists one, the first of the walk routing's conditions
it fails (changes._wandering, walk.wanders), in the order the detector asks them:

* ``moves``: its moves' autocorrelations (walk._walk_like_moves: lag 1, lags 1-3 summed, a
  season, distinct sizes);
* ``persistence``: walk.persistence at or under walk.PERSISTENCE;
* ``ramps``: an episode beyond its moves (walk._ramps);
* ``residuals``: segmentation leaves its residuals white (changes.WALK_RHO_SIGMAS or
  _LEVELS standard errors);
* ``routed``: read as a walk, and a move of it listed (walk.changes).

For a kind that should not be read as a walk (AR(0.3), a curve) ``moves`` or
``persistence`` is the right answer, and its change points come from segmentation.
Also prints how many of the series, with and without a step of 3 deviations, are routed.

    .venv/bin/python experiments/walk_routing.py [KINDS] [SERIES] [SEED]

KINDS: comma-separated moving kinds (default walk,ar1-0.9,ar1-0.6); run a version of the
detector with PYTHONPATH=<a worktree>/src."""

import collections
import sys

import numpy as np

from torchpulse.analysis.defaults import DEFAULT_NOISE_FLOOR
from torchpulse.analysis.detector import changes, drift, walk
from torchpulse.analysis.detector.model import Point
from torchpulse.evaluation import moving
from torchpulse.evaluation.shapes import ShapeTruth

COMMITS = 100
STEP_AT = 60


def _points(kind: str, step: float, rng: np.random.Generator) -> list[Point]:
    truth = ShapeTruth("x", "0", kind, "step" if step else "none", step,
                       STEP_AT if step else -1)
    return [Point(str(i), v) for i, v in enumerate(moving.draw(truth, COMMITS, rng))]


def _routed(points: list[Point]) -> bool:
    scaled = changes._scaled(points, DEFAULT_NOISE_FLOOR)
    fit = changes._segmented(scaled, 0.01)
    parts = drift.pieces(fit.levels, fit.bounds, fit.sigma)
    return changes._wandering(scaled, fit, parts)


def _why(points: list[Point]) -> str:
    x = np.log([p.value for p in points])
    if not walk._walk_like_moves(np.diff(x)):
        return "moves"
    if walk.persistence(x) <= walk.PERSISTENCE:
        return "persistence"
    if walk._ramps(x):
        return "ramps"
    return "routed" if _routed(points) else "residuals"


def main() -> None:
    kinds = (sys.argv[1] if len(sys.argv) > 1 else "walk,ar1-0.9,ar1-0.6").split(",")
    series = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    for kind in kinds:
        rng = np.random.default_rng([seed, 99])
        reasons: collections.Counter = collections.Counter()
        routed = {0.0: 0, 3.0: 0}
        for _ in range(series):
            null = _points(kind, 0.0, rng)
            routed[0.0] += _routed(null)
            if changes.analyse(null).change_points:
                reasons[_why(null)] += 1
            routed[3.0] += _routed(_points(kind, 3.0 * moving.SIGMA, rng))
        listed = sum(reasons.values())
        print(f"{kind}: {listed} of {series} null series list a change point "
              f"({', '.join(f'{k} {v}' for k, v in reasons.most_common())}); read as a walk: "
              f"{routed[0.0]} null, {routed[3.0]} with a 3-deviation step")


if __name__ == "__main__":
    main()
