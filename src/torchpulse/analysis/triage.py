"""The triage file's entries applied to series (the file itself: torchpulse.results.triage).

An entry lands on a series at the first point measured at or after its commit, when the
point before was measured before it: the change between those two points is the one it
speaks of. An accepted, invalid or infrastructure entry takes that change out of the
series: every point before it is moved by the size of the change (a ratio on the log
scale the detector reads, a difference on a linear one or an exact counter), so the level
from the entry's commit on is the baseline, the same step never alerts again, and a further
rise on top of it does. Only a change the detector found there is taken out (a change
point, an exact counter's move, a drift's start, or a culprit of the active regression too
new to be a change point yet), so an entry over a machine's every series leaves those that
did not move alone. Its size is the change point's own, or else the median level of up to
STABLE_COMMITS points on each side. An
intervention of known place and estimated size, the way a level shift is modelled in
time-series analysis; nothing here reads a file."""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from torchpulse.analysis.detector import STABLE_COMMITS, Point, SeriesVerdict
from torchpulse.analysis.series import Series, SeriesKey
from torchpulse.kinds import EXACT
from torchpulse.results.gitrepo import History
from torchpulse.results.triage import ABSORBED, FALSE_ALARMS, Entry, Triage


@dataclass(frozen=True)
class Mark:
    """An entry landed on one series: the change it speaks of there."""

    key: SeriesKey
    entry: Entry
    index: int  # among the series' undisturbed points: the first at the new level
    commit: str  # that point's commit
    before: float  # the level before and after the change, in the series' unit
    after: float
    unit: str
    rule: str  # how the series is judged (series.TIME, COUNT, DEVICE, EXACT)
    detected: bool  # the detector found a change there (the series as measured)
    higher_is_better: bool = False

    @property
    def absorbed(self) -> bool:
        """Whether the change was taken out of the series: one the detector found, marked
        accepted, invalid or infrastructure."""
        return self.detected and self.entry.state in ABSORBED

    @property
    def size(self) -> float:
        """How much worse the change made it, as a fraction of the level before (a rise; a
        drop where higher is better); inf from zero."""
        before, after = ((self.after, self.before) if self.higher_is_better
                         else (self.before, self.after))
        if not before:
            return 0.0 if after == before else math.inf
        return after / before - 1.0


def landings(positions: Sequence[int], history: History, commit: str, through: str = ""
             ) -> list[int]:
    """Where an entry lands among points at ``positions`` (their places on ``history``,
    oldest first): the first measured at or after ``commit`` when another was measured
    before it and, with ``through``, every later one up to that commit; none when a commit
    is not on the history or lies outside the points."""
    where = history.position.get(commit)
    last = history.position.get(through) if through else where
    if where is None or last is None:
        return []
    start = bisect.bisect_left(positions, where)
    stop = max(start + 1, bisect.bisect_right(positions, last))
    return list(range(max(start, 1), min(stop, len(positions))))


def _step(points: Sequence[Point], verdict: SeriesVerdict, i: int, exact: bool
          ) -> tuple[float, float, bool]:
    """The level before and after the change at point ``i``, and whether the detector
    found one there."""
    if exact:
        return points[i - 1].value, points[i].value, points[i - 1].value != points[i].value
    found = next((c for c in verdict.change_points if c.index == i), None)
    if found is not None:
        return found.before, found.after, True
    linear = verdict.linear
    before = float(np.median([p.level(linear) for p in points[max(0, i - STABLE_COMMITS):i]]))
    after = float(np.median([p.level(linear) for p in points[i:i + STABLE_COMMITS]]))
    # a drift's start, or a culprit of the active regression (a step too new to be a
    # change point yet: it has not held long enough)
    seen = any(d.start == i for d in verdict.drifts) or \
        any(i in r.culprits for r in verdict.active)
    return (before, after, seen) if linear else (math.exp(before), math.exp(after), seen)


def marks(series: Series, used: Series, verdict: SeriesVerdict, history: History,
          triage: Triage) -> list[Mark]:
    """The entries of ``triage`` that land on ``series`` (``used``: its undisturbed points,
    which ``verdict`` judged), one a point: where several speak of one change, the last in
    the file wins (a later decision, as with the benchmark rules)."""
    found: dict[int, Mark] = {}
    entries = triage.entries_for(series.key.name, series.key.machine)
    positions = [history.position[p.commit] for p in used.points] if entries else []
    for entry in reversed(entries):
        first = landings(positions, history, entry.commit)
        for i in landings(positions, history, entry.commit, entry.through):
            if i in found:
                continue
            before, after, detected = _step(used.points, verdict, i, series.rule == EXACT)
            if entry.through and not detected and [i] != first:
                continue  # a range speaks of the changes in it, not of every commit
            found[i] = Mark(series.key, entry, i, used.points[i].commit, before, after,
                            series.unit, series.rule, detected, series.higher_is_better)
    return sorted(found.values(), key=lambda m: m.index)


def absorb(used: Series, verdict: SeriesVerdict, found: Sequence[Mark]) -> Series | None:
    """``used`` with the changes of the absorbed marks taken out (every point before each
    moved by its size); None when none is absorbed or none moves anything. Only a change
    the detector found is taken out: an entry over many series (a machine's) leaves those
    that did not move at its commit as they are."""
    shifts = [m for m in found if m.absorbed and m.after != m.before]
    if not shifts:
        return None
    additive = used.rule == EXACT or verdict.linear or any(m.before <= 0 for m in shifts)
    n = len(used.points)
    move = np.zeros(n) if additive else np.ones(n)
    for m in shifts:
        if additive:
            move[:m.index] += m.after - m.before
        else:
            move[:m.index] *= m.after / m.before

    def moved(p: Point, by: float) -> Point:
        if additive:
            return dataclasses.replace(p, value=p.value + by, samples=tuple(
                s + by if s is not None else s for s in p.samples))
        return dataclasses.replace(p, value=p.value * by, samples=tuple(
            s * by if s is not None else s for s in p.samples))

    neutral = 0.0 if additive else 1.0
    points = [p if by == neutral else moved(p, float(by))
              for p, by in zip(used.points, move, strict=True)]
    return dataclasses.replace(used, points=points)


def covering(found: Sequence[Mark], history: History, previous: str, last: str
             ) -> Entry | None:
    """The entry of the first mark that lies after ``previous`` and at or before ``last``:
    what the triage file says about a change over that span."""
    lo, hi = history.position[previous], history.position[last]
    return next((m.entry for m in found if lo < history.position[m.commit] <= hi), None)


@dataclass(frozen=True)
class Tally:
    """The detected rises the triage file marked, on one machine's series of one rule."""

    rule: str
    machine: str
    states: dict[str, int]  # marks by state

    @property
    def false_alarms(self) -> int:
        return sum(n for state, n in self.states.items() if state in FALSE_ALARMS)


@dataclass(frozen=True)
class Suggestion:
    """A threshold for one rule's series that the marks say would have kept the false
    alarms quiet without losing a real change: above the largest rise marked invalid or
    infrastructure, at most the smallest marked accepted, investigating or fixed."""

    rule: str
    false_alarms: int
    real: int
    largest_false: float | None  # as fractions
    smallest_real: float | None
    threshold: float | None  # None: nothing to quiet, or no threshold separates them


def rises(found: Sequence[Mark]) -> list[Mark]:
    """The marks that were alerts: a rise the detector found."""
    return [m for m in found if m.detected and m.size > 0]


def tally(found: Sequence[Mark]) -> list[Tally]:
    """The marked rises, per rule and machine."""
    groups: dict[tuple[str, str], dict[str, int]] = {}
    for m in rises(found):
        states = groups.setdefault((m.rule, m.key.machine), {})
        states[m.entry.state] = states.get(m.entry.state, 0) + 1
    return [Tally(rule, machine, states) for (rule, machine), states in sorted(groups.items())]


def suggest(found: Sequence[Mark]) -> list[Suggestion]:
    """Per rule, the threshold the marks ask for (STEP above the largest false alarm)."""
    out = []
    for rule in sorted({m.rule for m in rises(found)}):
        mine = [m for m in rises(found) if m.rule == rule]
        false = [m.size for m in mine if m.entry.state in FALSE_ALARMS]
        real = [m.size for m in mine if m.entry.state not in FALSE_ALARMS]
        largest = max(false, default=None)
        smallest = min(real, default=None)
        threshold = None
        if largest is not None and math.isfinite(largest):
            threshold = math.ceil(largest / STEP + 1e-9) * STEP + STEP
            if smallest is not None and threshold > smallest:
                threshold = None
        out.append(Suggestion(rule, len(false), len(real), largest, smallest, threshold))
    return out


STEP = 0.001  # suggested thresholds in steps of 0.1 %
