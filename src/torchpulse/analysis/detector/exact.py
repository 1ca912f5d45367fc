"""Verdicts on exact counters (dynamo's graph breaks, graphs, eager frames, 1/calls captured;
the kernels a CUDA region launches and its host synchronisations): values a run does not
vary, so there is no noise to estimate. Every move is a change point, and any increase the
newest value still holds is a regression, named at the commits where the value rose.

It gives the detector's SeriesVerdict, so an exact series shows in every report, the summary
page, the alerts JSON and the Regressions tab exactly as a timed one does."""

from __future__ import annotations

from collections.abc import Sequence

from torchpulse.analysis.detector.model import (
    ChangePoint,
    Noise,
    Point,
    Regression,
    SeriesVerdict,
)

# two commits decide: an increase needs no noise estimate
MIN_POINTS = 2


def _levels(values: Sequence[float]) -> list[tuple[int, float]]:
    """(first index, value) of each run of equal values."""
    runs: list[tuple[int, float]] = []
    for i, v in enumerate(values):
        if not runs or runs[-1][1] != v:
            runs.append((i, v))
    return runs


def analyse(points: Sequence[Point]) -> SeriesVerdict:
    """Change points at every move of the value; the active regression: the newest value
    against the newest level below it (and down the climb to that level), each rise since
    that level a culprit."""
    values = [p.value for p in points]
    runs = _levels(values)
    changes = tuple(ChangePoint(start, runs[j - 1][1], v, 0.0, 0.0)
                    for j, (start, v) in enumerate(runs) if j)
    noise = Noise(cv=0.0, within_cv=None, mde=0.0, unstable=False)
    linear = any(v <= 0 for v in values)
    last = len(runs) - 1
    newest = runs[last][1]
    # the baseline: the newest level below the newest value, and further down the climb
    # to it (each older level lower than the one after it)
    base = next((j for j in range(last - 1, -1, -1) if runs[j][1] < newest), None)
    if base is None:
        return SeriesVerdict(changes, (), (), noise, linear)
    while base >= 1 and runs[base - 1][1] < runs[base][1]:
        base -= 1
    culprits = tuple(runs[j][0] for j in range(base + 1, last + 1)
                     if runs[j][1] > runs[j - 1][1])
    regression = Regression(culprits[0], culprits, runs[base][1], runs[last][1], 0.0, 0.0)
    return SeriesVerdict(changes, (regression,), (), noise, linear)
