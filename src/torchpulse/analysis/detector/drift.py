"""Drifts are not steps: which runs of a series' segments are one slow drift.

Binary segmentation fits constant levels. A level that drifts smoothly (a cache that fills,
a dependency that slows a little with every commit) has no constant stretch, so it is cut
into many short segments, one change point every few commits, on a quiet series almost one
per commit. Here the segments found are grouped again into pieces, each either a constant
segment or a straight line (on the analysis scale) over three or more of them, by the
partition of least cost, the cost being the fit's residual sum of squares in units of the
noise plus log(n) for each parameter (BIC with the noise known): a staircase of steps that
clearly exceed the noise stays steps, a ramp becomes one drift, and a step inside a drift is
a line, a change point, and a line. A boundary next to a line is a change point only when
a line made to meet it, bending anywhere within KNOT_REACH commits of it, leaves a
significantly larger residual (a drift that starts from a flat level is not a step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_SEGMENTS = 3  # a line stands for at least this many segments (one step is a step)
LINE_PARAMS = 3  # a line piece: its level, its slope and where it starts
CONSTANT_PARAMS = 2  # a constant piece: its level and where it starts
KNOT_REACH = 3  # how far from a boundary next to a drift the bend may lie


@dataclass(frozen=True)
class Piece:
    """Points [start, stop) of the levels fitted by one constant, or by one line."""

    start: int
    stop: int
    line: bool
    intercept: float  # the fitted level at ``start`` (analysis scale)
    slope: float  # per commit; 0 for a constant
    variance: tuple[float, float]  # of the fitted level at start and at stop - 1, in noise^2
    sxx: float = 0.0  # sum of squared commit offsets from their mean (a line's leverage)

    def at(self, i: int) -> float:
        return self.intercept + self.slope * (i - self.start)

    @property
    def first(self) -> float:
        return self.intercept

    @property
    def last(self) -> float:
        return self.at(self.stop - 1)

    @property
    def rise_se(self) -> float:
        """The standard error of last - first, in units of the noise (0 for a constant)."""
        return (self.stop - 1 - self.start) / math.sqrt(self.sxx) if self.line else 0.0


class _Sums:
    """Prefix sums for the least-squares fit of a constant or a line to any stretch."""

    def __init__(self, y: np.ndarray) -> None:
        x = np.arange(len(y), dtype=float)
        self.s = [np.concatenate([[0.0], np.cumsum(v)]) for v in (np.ones_like(y), x, x * x, y,
                                                                    y * y, x * y)]

    def _get(self, a: int, b: int) -> list[float]:
        return [float(c[b] - c[a]) for c in self.s]

    def rss(self, a: int, b: int, line: bool) -> float:
        n, sx, sxx, sy, syy, sxy = self._get(a, b)
        flat = syy - sy * sy / n
        if not line or n < 3:
            return max(flat, 0.0)
        sxx_c = sxx - sx * sx / n
        return max(flat - (sxy - sx * sy / n) ** 2 / sxx_c, 0.0) if sxx_c > 0 else flat

    def fit(self, a: int, b: int, line: bool) -> Piece:
        n, sx, sxx, sy, _, sxy = self._get(a, b)
        mean_x, mean_y = sx / n, sy / n
        sxx_c = sxx - sx * sx / n
        if not line or sxx_c <= 0:
            return Piece(a, b, False, mean_y, 0.0, (1.0 / n, 1.0 / n))
        slope = (sxy - sx * sy / n) / sxx_c
        ends = (a, b - 1)
        return Piece(a, b, True, mean_y + slope * (a - mean_x), slope,
                     tuple(1.0 / n + (e - mean_x) ** 2 / sxx_c for e in ends), sxx_c)


def pieces(levels: np.ndarray, bounds: Sequence[int], sigma: float) -> list[Piece]:
    """The partition of the segments (between ``bounds``) into constant and line pieces of
    least cost; consecutive pieces, oldest first."""
    n = len(levels)
    edges = [0, *bounds, n]
    k = len(edges) - 1
    sums = _Sums(np.asarray(levels, dtype=float))
    if k < MIN_SEGMENTS or sigma <= 0:
        return [sums.fit(a, b, False) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    penalty, var = math.log(max(n, 2)), sigma * sigma
    best = [0.0] + [math.inf] * k
    choice = [(0, False)] * (k + 1)
    for j in range(1, k + 1):
        for i in range(j):
            segments = j - i
            if segments == 1:
                line = False
            elif segments >= MIN_SEGMENTS:
                line = True
            else:
                continue
            params = LINE_PARAMS if line else CONSTANT_PARAMS
            cost = best[i] + sums.rss(edges[i], edges[j], line) / var + params * penalty
            if cost < best[j]:
                best[j], choice[j] = cost, (i, line)
    chosen: list[tuple[int, int, bool]] = []
    j = k
    while j > 0:
        i, line = choice[j]
        chosen.append((edges[i], edges[j], line))
        j = i
    return _refine(sums, chosen[::-1])


def _refine(sums: _Sums, chosen: list[tuple[int, int, bool]]) -> list[Piece]:
    """Move each boundary next to a line to where the two fits leave the least residual:
    segmentation put it where constant levels split best, not where a drift begins."""
    for i in range(len(chosen) - 1):
        (a, _, left), (_, b, right) = chosen[i], chosen[i + 1]
        if not (left or right):
            continue
        lo, hi = a + (3 if left else 1), b - (3 if right else 1)
        if lo > hi:
            continue
        best = min(range(lo, hi + 1),
                   key=lambda t: sums.rss(a, t, left) + sums.rss(t, b, right))
        chosen[i], chosen[i + 1] = (a, best, left), (best, b, right)
    return [sums.fit(a, b, line) for a, b, line in chosen]


def jump(levels: np.ndarray, left: Piece, right: Piece) -> float:
    """The evidence that the boundary between ``left`` and ``right`` is a jump, not a bend:
    the square root of the residual the two pieces gain when they are made to meet (at the
    best place near the boundary), a normal deviate in units of the noise once divided by
    it."""
    a, m, b = left.start, right.start, right.stop
    y = np.asarray(levels[a:b], dtype=float)
    x = np.arange(a, b, dtype=float)
    apart = float(np.sum((y - np.array([left.at(i) if i < m else right.at(i)
                                        for i in range(a, b)])) ** 2))
    joined = math.inf
    # where a drift starts or ends is known to a few commits: the pieces may meet there
    for knot in np.linspace(max(m - KNOT_REACH, a + 1), min(m + KNOT_REACH - 1, b - 1), 41):
        cols = [np.ones_like(x)]
        if left.line:
            cols.append(np.where(x < knot, x - knot, 0.0))
        if right.line:
            cols.append(np.where(x >= knot, x - knot, 0.0))
        design = np.stack(cols, axis=1)
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        joined = min(joined, float(np.sum((y - design @ coef) ** 2)))
    return math.sqrt(max(joined - apart, 0.0))
