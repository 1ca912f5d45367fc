"""Series where a drop is the regression (a throughput, a speedup, a pass rate, stored as
measured): the detector looks only for rises, so it reads such a series turned over, and
what it concludes is turned back, so that every report, page and file shows the values as
the user measured them, without the 1/value trick in what is stored.

Turned over, a value v becomes 1/v: a ratio reads the same either way up on the log scale
the detector uses, so a drop of 10 % is judged as the rise of 11.1 % it is the inverse of.
A series with a zero or a negative value (which 1/v cannot turn) becomes 2m - v, m its
largest value: the same distances, upside down, judged relative to the turned level."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from torchpulse.analysis.detector import Point, SeriesVerdict


@dataclass(frozen=True)
class Flip:
    """A way of turning a series over; its own inverse."""

    mirror: float | None = None  # None: 1/v; else 2 * mirror - v

    def __call__(self, value: float) -> float:
        if self.mirror is not None:
            return 2.0 * self.mirror - value
        return 1.0 / value if value else math.inf

    def point(self, p: Point) -> Point:
        return dataclasses.replace(p, value=self(p.value), samples=tuple(
            self(s) if s is not None and math.isfinite(s) else s for s in p.samples))


def flip_of(points: Sequence[Point]) -> Flip:
    """1/v when every finite value and sample is above zero, else a mirror at the largest."""
    values = [v for p in points for v in (p.value, *p.samples)
              if v is not None and math.isfinite(v)]
    if all(v > 0 for v in values):
        return Flip()
    return Flip(max(values, default=0.0))


def turned(points: Sequence[Point], flip: Flip) -> list[Point]:
    return [flip.point(p) for p in points]


def back(verdict: SeriesVerdict, flip: Flip) -> SeriesVerdict:
    """``verdict`` on the turned series, its levels in the series' own values again."""
    def levels(x):  # noqa: ANN001, ANN202 (a ChangePoint, Regression or Drift)
        return dataclasses.replace(x, before=flip(x.before), after=flip(x.after))

    return dataclasses.replace(
        verdict, change_points=tuple(map(levels, verdict.change_points)),
        active=tuple(map(levels, verdict.active)), drifts=tuple(map(levels, verdict.drifts)))
