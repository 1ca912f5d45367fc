"""Curved drifts: findings that rise (or fall) in turn along a smooth curve, read as one.

Segmentation fits steps, and the drift grouping (drift.py) straight lines, so a series that
grows along a curve (a logistic, an exponential, a polynomial) comes out as a staircase: two
or more change points and drifts in a row, all the same way. A person reads one rise. So a
run of such findings is one drift where a cubic over the run's span explains the points as
well as the run's own steps and lines do (the Bayesian information criterion, which charges
each for its parameters), and leaves nothing but noise: residuals that are not correlated
beyond RHO_SIGMAS standard errors of white noise, and no jump at any of the run's change
points beyond JUMP_Z standard errors. Real steps in a row keep their change points: a cubic
cannot follow a jump, and what it leaves at one is a jump in its residuals.

A change point at either end of a run is tested only where HELD points on its outer side
are part of the span; without them the curve never sees the level before (or after) it,
and it stays a change point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from torchpulse.analysis.detector.model import ChangePoint, Drift, Regression

DEGREE = 3  # of the curve: a cubic bends twice, as a logistic does
HELD = 3  # points an end change point needs on its outer side within the span
MIN_POINTS = 8  # a span with fewer points is no curve
RHO_SIGMAS = 2.5  # the curve's residuals must look white: lag-1 autocorrelation bound
JUMP_WINDOW = 5  # points each side of a change point whose residuals are compared
JUMP_Z = 3.0  # a jump in the residuals this large (in standard errors) is a real step


@dataclass(frozen=True)
class _Finding:
    start: int  # its first point (a change point's own index)
    end: int  # its last point (the same for a change point)
    up: bool
    change: bool  # a change point, not a drift


def _findings(changes: Sequence[ChangePoint], drifts: Sequence[Drift]) -> list[_Finding]:
    found = [_Finding(c.index, c.index, c.after > c.before, True) for c in changes]
    found += [_Finding(d.start, d.end, d.after > d.before, False) for d in drifts]
    return sorted(found, key=lambda f: (f.start, f.end))


def _runs(found: list[_Finding]) -> list[tuple[int, int]]:
    """(first, last) indices into ``found`` of each maximal run of same-way findings."""
    runs, first = [], 0
    for i in range(1, len(found) + 1):
        if i == len(found) or found[i].up != found[first].up:
            if i - first >= 2:
                runs.append((first, i - 1))
            first = i
    return runs


def _fitted(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    return design @ beta


def _bic(y: np.ndarray, fitted: np.ndarray, params: int) -> float:
    rss = float(np.sum((y - fitted) ** 2))
    n = len(y)
    return n * math.log(max(rss, 1e-300) / n) + params * math.log(n)


def _steps(x: np.ndarray, run: Sequence[_Finding]) -> np.ndarray:
    """The run's own model: a level between its change points and drift ends, a line over
    each drift."""
    cuts = sorted({f.start for f in run} | {f.end + 1 for f in run if not f.change})
    edges = [-math.inf, *cuts, math.inf]
    columns = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (x >= lo) & (x < hi)
        if not inside.any():
            continue
        columns.append(inside.astype(float))
        if any(not f.change and f.start <= lo and hi <= f.end + 1 for f in run) \
                and inside.sum() > 2:
            columns.append(np.where(inside, x - lo, 0.0))
    return np.column_stack(columns)


def _curve(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cubic's design on ``x`` and its fitted values."""
    t = (x - x[0]) / max(x[-1] - x[0], 1) * 2.0 - 1.0
    design = np.vander(t, DEGREE + 1)
    return design, _fitted(design, y)


def _noise_only(x: np.ndarray, residuals: np.ndarray, run: Sequence[_Finding]) -> bool:
    """The curve leaves white residuals with no jump at any of the run's change points."""
    n = len(residuals)
    power = float(np.dot(residuals, residuals))
    if power == 0.0:
        return True
    if float(np.dot(residuals[:-1], residuals[1:])) / power > RHO_SIGMAS / math.sqrt(n):
        return False
    sd = math.sqrt(power / max(n - DEGREE - 1, 1))
    for f in run:
        if not f.change:
            continue
        k = int(np.searchsorted(x, f.start))
        w = min(JUMP_WINDOW, k, n - k)
        if w >= 2:
            jump = residuals[k:k + w].mean() - residuals[k - w:k].mean()
            if abs(jump) > JUMP_Z * sd * math.sqrt(2.0 / w):
                return False
    return True


def spans(positions: np.ndarray, levels: np.ndarray, changes: Sequence[ChangePoint],
          drifts: Sequence[Drift]) -> list[tuple[int, int, tuple[_Finding, ...]]]:
    """(first point, last point, findings) of each run a curve explains; ``positions``:
    the points' indices in the series, ``levels``: their levels on the analysis scale."""
    found = _findings(changes, drifts)
    out = []
    for i, j in _runs(found):
        a = found[i - 1].end + 1 if i > 0 else 0
        b = found[j + 1].start if j + 1 < len(found) else int(positions[-1]) + 1
        run = list(found[i:j + 1])
        while run and run[0].change and run[0].start - a < HELD:
            a, run = run[0].start, run[1:]
        while run and run[-1].change and b - run[-1].start < HELD:
            b, run = run[-1].start, run[:-1]
        inside = (positions >= a) & (positions < b)
        if len(run) < 2 or inside.sum() < MIN_POINTS:
            continue
        x, y = positions[inside].astype(float), levels[inside]
        design, fitted = _curve(x, y)
        steps = _steps(x, run)
        if _bic(y, fitted, design.shape[1]) <= _bic(y, _fitted(steps, y), steps.shape[1]) \
                and _noise_only(x, y - fitted, run):
            out.append((int(x[0]), int(x[-1]), tuple(run)))
    return out


def merge(positions: np.ndarray, levels: np.ndarray, changes: Sequence[ChangePoint],
          drifts: Sequence[Drift], regression: Regression | None,
          back: Callable[[float], float]
          ) -> tuple[tuple[ChangePoint, ...], tuple[Drift, ...], Regression | None]:
    """The findings with each run a curve explains replaced by one drift over its span
    (its ends the curve's values, ``back`` to the series' units; its p-value the least of
    the run's), and the regression's culprits and drifts in a run pointed at that drift."""
    found = spans(positions, levels, changes, drifts)
    if not found:
        return tuple(changes), tuple(drifts), regression
    merged, gone_changes, gone_drifts = [], set(), set()
    pvalues = {c.index: c.pvalue for c in changes} | {(d.start, d.end): d.pvalue for d in drifts}
    for first, last, run in found:
        inside = (positions >= first) & (positions <= last)
        _, fitted = _curve(positions[inside].astype(float), levels[inside])
        p = min(pvalues[f.start] if f.change else pvalues[(f.start, f.end)] for f in run)
        merged.append(Drift(first, last, back(float(fitted[0])), back(float(fitted[-1])), p))
        gone_changes |= {f.start for f in run if f.change}
        gone_drifts |= {(f.start, f.end) for f in run if not f.change}
    kept = tuple(c for c in changes if c.index not in gone_changes)
    curves = tuple(sorted([*(d for d in drifts if (d.start, d.end) not in gone_drifts),
                           *merged], key=lambda d: d.start))
    return kept, curves, _pointed(regression, found, merged)


def _pointed(regression: Regression | None,
             found: Sequence[tuple[int, int, tuple[_Finding, ...]]],
             merged: Sequence[Drift]) -> Regression | None:
    """The regression with each culprit and drift of a merged run replaced by the run's
    drift: the level rose along it, not at one of its commits. Culprits of its own (a
    step at the newest commits, not yet a change point) stay as they are."""
    if regression is None:
        return None
    culprits, drifts = list(regression.culprits), list(regression.drifts)
    for (first, last, run), curve in zip(found, merged, strict=True):
        starts = {f.start for f in run}
        ends = {(f.start, f.end) for f in run if not f.change}
        if curve.after <= curve.before or not (starts & set(culprits)
                                               or ends & set(drifts)):
            continue
        culprits = [c for c in culprits if c not in starts] + [first]
        drifts = [d for d in drifts if d not in ends] + [(first, last)]
    culprits, drifts = sorted(set(culprits)), sorted(set(drifts))
    return replace(regression, index=culprits[0], culprits=tuple(culprits),
                   drifts=tuple(drifts))
