"""Curved drifts: findings that rise (or fall) in turn along a smooth curve, read as one.

Segmentation fits steps, and the drift grouping (drift.py) straight lines, so a series that
grows along a curve (a logistic, an exponential, a polynomial) comes out as a staircase: two
or more change points and drifts in a row, all the same way. A person reads one rise. So a
run of such findings is one drift where a smooth curve over the run's span explains the
points as well as the run's own steps and lines do (the Bayesian information criterion,
which charges each for its parameters, the steps for where each segment starts as the curve
is for its shape), leaves residuals that are not correlated beyond RHO_SIGMAS standard
errors of white noise, and no step at any of the run's change points adds to the curve
beyond STEP_F (the curve fitted again with the step in it, so that a curve bent to follow a
step does not hide it). Real steps in a row keep their change points.

The smooth curves, four parameters each, whichever leaves the least residuals: a cubic
(bends twice); a ramp, flat then a line then flat, its knots at least MIN_RAMP points apart
(closer, it would be a step); a logistic, of any centre and width (an exponential or a power
is one end of one).

A change point at either end of a run is tested only where HELD points on its outer side
are part of the span; without them the curve never sees the level before (or after) it,
and it stays a change point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from torchpulse.analysis.detector.model import ChangePoint, Drift, Regression

DEGREE = 3  # of the cubic: it bends twice, as a logistic does
PARAMS = 4  # of each smooth curve: the cubic's; a ramp's level, slope and knots; a logistic's
HELD = 3  # points an end change point needs on its outer side within the span
MIN_POINTS = 8  # a span with fewer points is no curve
MIN_RAMP = 8  # points between a ramp's knots at least: closer, it is a step
KNOTS = 64  # candidate knot positions, evenly spread over a longer span (bounds the work)
CELLS = 1 << 22  # values of candidate curves held at once (32 MB): bounds the memory
RHO_SIGMAS = 2.5  # the curve's residuals must look white: lag-1 autocorrelation bound
STEP_F = 9.0  # a step adding this much to the curve (F of one column: t = 3) is real


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


def _places(run: Sequence[_Finding]) -> int:
    """Where the run's own segments start: each a parameter of its model, as a ramp's knots
    or a logistic's centre are of a curve's."""
    return len({f.start for f in run} | {f.end + 1 for f in run if not f.change})


def _ramps(x: np.ndarray) -> Iterator[np.ndarray]:
    """Blocks of ramps over ``x``, a row each: clip(x, k1, k2) for knots at candidate
    points at least MIN_RAMP points apart, CELLS values a block at most."""
    at = np.unique(np.linspace(0, len(x) - 1, min(len(x), KNOTS)).round().astype(int))
    i, j = np.nonzero(at[None, :] - at[:, None] >= MIN_RAMP)
    lo, hi = x[at[i]], x[at[j]]
    rows = max(1, CELLS // len(x))
    for b in range(0, len(lo), rows):
        yield np.clip(x[None, :], lo[b:b + rows, None], hi[b:b + rows, None])


def _logistics(x: np.ndarray) -> Iterator[np.ndarray]:
    """Blocks of logistic curves over ``x``, a row each: centres from half a span before it
    to half a span after, widths from 1/40 of the span to the span."""
    t = (x - x[0]) / max(x[-1] - x[0], 1.0)
    centre, width = (a.ravel() for a in np.meshgrid(np.linspace(-0.5, 1.5, 41),
                                                    np.geomspace(0.025, 1.0, 16)))
    rows = max(1, CELLS // len(x))
    for b in range(0, len(centre), rows):
        u = (t[None, :] - centre[b:b + rows, None]) / width[b:b + rows, None]
        yield 1.0 / (1.0 + np.exp(-np.clip(u, -50.0, 50.0)))


def _best_row(y: np.ndarray, base: np.ndarray, blocks: Iterator[np.ndarray]
              ) -> tuple[float, np.ndarray | None]:
    """The least residual sum of squares of ``y`` on ``base`` and one row of ``blocks``,
    with that row (None when no row adds anything)."""
    q, _ = np.linalg.qr(base)
    yr = y - q @ (q.T @ y)
    best, row = float(yr @ yr), None
    for rows in blocks:
        zr = rows - (rows @ q) @ q.T
        szz = np.einsum("ij,ij->i", zr, zr)
        gain = np.where(szz > 1e-12, (zr @ yr) ** 2 / np.maximum(szz, 1e-300), 0.0)
        k = int(np.argmax(gain))
        if float(yr @ yr) - gain[k] < best:
            best, row = float(yr @ yr) - float(gain[k]), rows[k]
    return best, row


def _smooth(x: np.ndarray, y: np.ndarray, extra: Sequence[np.ndarray] = ()
            ) -> tuple[float, np.ndarray]:
    """(residual sum of squares, design) of the smooth curve that fits ``y`` best with the
    columns ``extra`` beside it: the cubic, a ramp or a logistic."""
    t = (x - x[0]) / max(x[-1] - x[0], 1.0) * 2.0 - 1.0
    design = np.column_stack([np.vander(t, DEGREE + 1), *extra])
    best = (float(np.sum((y - _fitted(design, y)) ** 2)), design)
    base = np.column_stack([np.ones(len(x)), *extra])
    for blocks in ((_ramps(x),) if len(x) > MIN_RAMP else ()) + (_logistics(x),):
        rss, row = _best_row(y, base, blocks)
        if row is not None and rss < best[0]:
            best = (rss, np.column_stack([base, row]))
    return best


def _curve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The best smooth curve's values on ``x``."""
    return _fitted(_smooth(x, y)[1], y)


EXACT = 1e-12  # residuals this small a share of the span's variance: the curve is exact


def _exact(residual_power: float, y: np.ndarray) -> bool:
    """The curve leaves nothing but rounding (a noiseless polynomial): no test on its
    residuals means anything."""
    return residual_power <= EXACT * float(np.sum((y - y.mean()) ** 2))


def _white(residuals: np.ndarray, y: np.ndarray) -> bool:
    """Residuals whose lag-1 autocorrelation is within RHO_SIGMAS standard errors of white
    noise (or none to speak of)."""
    power = float(np.dot(residuals, residuals))
    if _exact(power, y):
        return True
    rho = float(np.dot(residuals[:-1], residuals[1:])) / power
    return rho <= RHO_SIGMAS / math.sqrt(len(residuals))


def _real_step(x: np.ndarray, y: np.ndarray, run: Sequence[_Finding],
               without: float | None = None) -> bool:
    """Whether a step at one of the run's change points adds to the smooth curve beyond
    STEP_F, the curve chosen again with the step beside it; ``without``: the smooth curve's
    residual sum of squares, when the caller has it."""
    n = len(y)
    without = _smooth(x, y)[0] if without is None else without
    if _exact(without, y):
        return False
    for f in run:
        step = (x >= f.start).astype(float)
        if not f.change or step.all() or not step.any():
            continue
        with_step = _smooth(x, y, (step,))[0]
        if with_step <= 0.0 or (without - with_step) / (with_step / max(n - PARAMS - 1, 1)) \
                > STEP_F:
            return True
    return False


def candidates(positions: np.ndarray, changes: Sequence[ChangePoint],
               drifts: Sequence[Drift]) -> list[tuple[int, int, list[_Finding]]]:
    """(first point, end, findings) of each run of two or more same-way findings, its span
    bounded by the findings either side and each end change point without HELD points on
    its outer side dropped (the run may be left with fewer than two)."""
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
        out.append((a, b, run))
    return out


def explains(x: np.ndarray, y: np.ndarray, run: Sequence[_Finding]) -> bool:
    """Whether a smooth curve explains the points ``x``, ``y`` of a run: it fits them as
    well as the run's own steps and lines do, leaves white residuals, and no step at the
    run's change points adds to it."""
    rss, design = _smooth(x, y)
    fitted = _fitted(design, y)
    steps = _steps(x, run)
    return _bic(y, fitted, PARAMS) <= _bic(y, _fitted(steps, y), steps.shape[1] + _places(run)) \
        and _white(y - fitted, y) and not _real_step(x, y, run, rss)


def spans(positions: np.ndarray, levels: np.ndarray, changes: Sequence[ChangePoint],
          drifts: Sequence[Drift]) -> list[tuple[int, int, tuple[_Finding, ...]]]:
    """(first point, last point, findings) of each run a curve explains, disjoint and in
    order; ``positions``: the points' indices in the series, ``levels``: their levels on the
    analysis scale. Two runs of opposite ways share the points between them (each span
    reaches the other run's first or last finding): where both are explained, the later
    one is left as its findings, so no point lies on two curves."""
    out: list[tuple[int, int, tuple[_Finding, ...]]] = []
    for a, b, run in candidates(positions, changes, drifts):
        inside = (positions >= a) & (positions < b)
        if len(run) < 2 or inside.sum() < MIN_POINTS:
            continue
        x, y = positions[inside].astype(float), levels[inside]
        if out and int(x[0]) <= out[-1][1]:
            continue
        if explains(x, y, run):
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
        fitted = _curve(positions[inside].astype(float), levels[inside])
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
