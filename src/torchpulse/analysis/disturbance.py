"""Which points were measured on a disturbed machine: the machine canary's rule.

The canary (``benchmarks/_canary.py``) is a fixed workload of the standard library's C
loops on a thread per core (nothing of torch: a torch build does not move it) that asv times
between the suites: after the autograd pairs, between the LSTM classes and after the compile
zoo of every commit. Its code comes from the working tree, so within a run it only moves
when the machine does. The rule (experiments/diary/detection.md explains the figures behind it):

* At each of its places in the run, on one machine and environment, the canary's *usual
  level* is the median of its readings there (the places differ: a canary right after the
  install reads slower than one between the LSTM classes).
* A shared VM also changes speed for hours at a time (on a 2-core VM the canary's idle
  level moved from ~17 to ~10 ms between runs). So a reading is judged against its *local
  level*: the usual level, lowered when the machine ran faster than usual around it (the
  median of every place's readings within LOCAL_S, each against its own usual level). It is
  never raised: a run that is slow from end to end is still slow, not a new normal.
* A reading is *slow* when it exceeds its local level by more than SLOW_RATIO, or by
  SLOW_SIGMAS robust deviations of the readings when they are noisier than that, but never
  by more than MAX_SLOW_RATIO. The
  deviation is measured on the readings below their local levels only: a disturbance only
  ever slows the canary, so those are the clean ones, and a run with many disturbed readings
  cannot widen its own limit. A place with fewer than OWN_SPREAD_READINGS such readings
  takes the deviation of every place's clean readings on its machine and environment: from
  two readings one re-measured commit could move a limit from 5x to 1.25x. (On an idle
  2-core VM a place's readings spread by 5-15 %, on a bad hour by 30 %; a CPU hog on one of
  the two cores doubles them.)
* A point (one commit of one series) is *disturbed* when the canary reading nearest before
  its asv job started, or the one nearest after it ended, is slow. Readings further than
  REACH_S away say nothing about it; points that no asv run timed (imported results: asv
  stores no job duration for them) are never flagged.
* The timed suites and the canaries between them run in two rounds, interleaved across the
  commits; asv stores a benchmark's samples of both rounds but only its last round's time.
  Each round's median is a reading of its own for the levels and the spread, and a
  reading is slow when any of its rounds is (``reading``: the slowest): a point's earlier
  round ran next to the same places' earlier readings of its own commit. A reading of
  another commit (the next commit's first, the previous one's last) counts with its last
  round only, the one that ran next to the point's stored job.
* Series of counts that load cannot move (instructions: ``Series.load_independent``) are
  never flagged: their verdicts hold on a busy machine.
* Disturbed points stay in the series and are shown, marked; detection leaves them out. A
  disturbed commit can then neither fake a step nor hide one, and a step found after one is
  located to the range from the last undisturbed commit.

A machine that stays slower for good makes its newest points "disturbed" until enough
readings at the new level move the median: the verdict waits rather than alerting on the
machine.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np

from torchpulse.analysis.columns import PointColumns
from torchpulse.analysis.detector import MAD_TO_SD, Point
from torchpulse.analysis.series import Series

CANARY_METHOD = "MachineCanary.time_reference"  # the canary's benchmark, in any suite module
ZOO_SUITE = "bench_compile"  # its benchmarks share a setup_cache that compiles the zoo
SLOW_RATIO = 1.25
SLOW_SIGMAS = 4.0
# this far above the local level is slow however noisy the canary: a busy core doubles the
# two-thread canary (1.5-2x against the median of a VM toggling between two speeds), and
# such a machine widens the spread past that; idle runs here read up to 1.70x
MAX_SLOW_RATIO = 1.8
REACH_S = 600.0
MIN_READINGS = 3  # fewer readings give no usual level: nothing is flagged
OWN_SPREAD_READINGS = 5  # readings below its level a place needs for a spread of its own
ROUND_SAMPLES = 10  # the canary's samples in each round (benchmarks/_canary.py, repeat)
LOCAL_S = 1800.0  # the machine's own speed around a reading: the readings this near in time
MIN_LOCAL = 8  # ... when there are this many (two commits' worth), else the usual level


@dataclass(frozen=True)
class Reading:
    """One timing of the canary."""

    machine: str
    env: str
    commit: str
    benchmark: str
    started_ms: float
    value: float  # seconds: the slowest round's (``reading``)
    ratio: float  # against its local level (the usual level, lowered where the machine ran fast)
    slow: bool
    # the last round's median alone is slow: that round is the one asv placed in time, the
    # only one next to other commits' jobs
    last_slow: bool = False


@dataclass(frozen=True)
class Canary:
    """What the canary's readings say about the machines."""

    readings: tuple[Reading, ...] = ()
    # per (machine, env, canary benchmark): the usual level (s) and the slow limit (a ratio)
    levels: dict[tuple[str, str, str], float] = dataclasses.field(default_factory=dict)
    limits: dict[tuple[str, str, str], float] = dataclasses.field(default_factory=dict)

    @property
    def slow(self) -> list[Reading]:
        return [r for r in self.readings if r.slow]


def is_canary(series: Series) -> bool:
    return series.key.benchmark.endswith("." + CANARY_METHOD)


def assess(series: list[Series]) -> tuple[list[Series], Canary]:
    """The series other than the canary's, their points flagged ``disturbed`` by the rule,
    and the canary's readings."""
    canary = _read(s for s in series if is_canary(s))
    timeline: dict[str, list[Reading]] = {}
    for r in sorted(canary.readings, key=lambda r: r.started_ms):
        timeline.setdefault(r.machine, []).append(r)
    flagged = []
    for s in series:
        if is_canary(s):
            continue
        if s.load_independent:  # a busy machine runs the same instructions
            flagged.append(s)
            continue
        readings = timeline.get(s.key.machine, [])
        starts = [r.started_ms for r in readings]
        if isinstance(s.points, PointColumns):
            points = s.points.with_disturbed(_disturbed_columns(s.points, readings, starts))
        else:
            points = [p if flag == p.disturbed else dataclasses.replace(p, disturbed=flag)
                      for p, flag in ((p, _disturbed(p, readings, starts)) for p in s.points)]
        flagged.append(dataclasses.replace(s, points=points))
    return flagged, canary


def rounds(point: Point) -> list[float]:
    """A canary point's per-round medians (s), in the order run. asv appends each round's
    samples to the earlier rounds' and stores the last round's time only; the canary takes
    ROUND_SAMPLES a round. Samples that do not split so (one round, none recorded): asv's
    value alone."""
    samples, k = point.samples, ROUND_SAMPLES
    if len(samples) > k and len(samples) % k == 0 and all(v > 0 for v in samples):
        return [float(np.median(samples[i:i + k])) for i in range(0, len(samples), k)]
    return [point.value]


def reading(point: Point) -> float:
    """A canary point's reading (s): the slowest round's median, so that a machine disturbed
    in any round of the suites around it reads slow."""
    return max(rounds(point))


def _read(canaries) -> Canary:
    # Each round of a reading is a reading of its own for the levels and the spread: the
    # slower of two rounds sits above one round's level, and on a machine toggling between
    # two speeds it would widen the spread. A reading is slow when any of its rounds is.
    raw: dict[tuple[str, str, str], list[tuple[Series, Point]]] = {}
    for s in canaries:
        for p in s.points:
            if p.started_ms is not None and p.value > 0:
                raw.setdefault((s.key.machine, s.key.env, s.key.benchmark), []).extend(
                    (s, dataclasses.replace(p, value=m)) for m in rounds(p))
    centres = {where: float(np.median(np.log([p.value for _, p in found])))
               for where, found in raw.items()}
    local = _local_states(raw, centres)
    residuals = {where: np.log([p.value for _, p in found])
                 - (centres[where] + np.minimum(0.0, local[where]))
                 for where, found in raw.items()}
    pooled: dict[tuple[str, str], list[float]] = {}
    for where, r in residuals.items():
        pooled.setdefault(where[:2], []).extend((-r[r < 0]).tolist())
    readings, levels, limits = [], {}, {}
    for where, found in raw.items():
        below = -residuals[where][residuals[where] < 0]
        # a place's own spread once it has enough clean readings; before that, the spread
        # of every place's clean readings on that machine (two readings are no estimate)
        below = below if len(below) >= OWN_SPREAD_READINGS else np.array(pooled[where[:2]])
        spread = MAD_TO_SD * float(np.median(below)) if len(below) else 0.0
        limit = min(max(math.log(SLOW_RATIO), SLOW_SIGMAS * spread), math.log(MAX_SLOW_RATIO))
        enough = len({(p.commit, p.started_ms) for _, p in found}) >= MIN_READINGS
        levels[where], limits[where] = math.exp(centres[where]), math.exp(limit)
        rows = zip(found, residuals[where].tolist(), strict=True)
        for _, group in itertools.groupby(rows, key=lambda row: (row[0][0].key,
                                                                 row[0][1].commit,
                                                                 row[0][1].started_ms)):
            taken = list(group)
            (s, p), _ = taken[0]
            worst = max(e for _, e in taken)
            readings.append(Reading(s.key.machine, s.key.env, p.commit, s.key.benchmark,
                                    p.started_ms, reading(p),
                                    math.exp(worst), enough and worst > limit,
                                    enough and taken[-1][1] > limit))
    return Canary(tuple(readings), levels, limits)


def _local_states(raw: dict, centres: dict) -> dict[tuple[str, str, str], np.ndarray]:
    """Per reading, how much faster or slower than usual (a log ratio) its machine ran around
    it: the median, over every place, of the readings within LOCAL_S of it, each against its
    place's usual level; 0 with fewer than MIN_LOCAL such readings."""
    timeline: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for (machine, env, bench), found in raw.items():
        timeline.setdefault((machine, env), []).extend(
            (p.started_ms, math.log(p.value) - centres[(machine, env, bench)])
            for _, p in found)
    for events in timeline.values():
        events.sort()
    states = {}
    reach = 1000.0 * LOCAL_S
    for where, found in raw.items():
        events = timeline[where[:2]]
        starts = [t for t, _ in events]
        state = []
        for _, p in found:
            lo = bisect.bisect_left(starts, p.started_ms - reach)
            hi = bisect.bisect_right(starts, p.started_ms + reach)
            near = [x for _, x in events[lo:hi]]
            state.append(float(np.median(near)) if len(near) >= MIN_LOCAL else 0.0)
        states[where] = np.array(state)
    return states


def _disturbed(point: Point, readings: list[Reading], starts: list[float]) -> bool:
    if point.started_ms is None or point.seconds is None or not readings:
        return False  # not timed by an asv run (imports store no duration)
    end = point.started_ms + 1000.0 * point.seconds
    reach = 1000.0 * REACH_S
    before = bisect.bisect_right(starts, point.started_ms) - 1
    after = bisect.bisect_left(starts, end)
    near = []
    if before >= 0 and point.started_ms - starts[before] <= reach:
        near.append(readings[before])
    if after < len(readings) and starts[after] - end <= reach:
        near.append(readings[after])
    # the point's earlier rounds ran next to its own commit's readings at the same places;
    # only the last round ran next to another commit's (the first and last jobs of a commit)
    return any(r.slow if r.commit == point.commit else r.last_slow for r in near)


def _disturbed_columns(points: PointColumns, readings: list[Reading],
                       starts: list[float]) -> np.ndarray:
    """``_disturbed`` of every point at once (the same arithmetic, on arrays)."""
    flags = np.zeros(len(points), dtype=bool)
    if not readings or not len(points):
        return flags
    at = np.asarray(starts, dtype=float)
    started, seconds = points.started, points.seconds
    timed = ~(np.isnan(started) | np.isnan(seconds))
    end = started + 1000.0 * seconds
    reach = 1000.0 * REACH_S
    before = np.searchsorted(at, started, side="right") - 1
    after = np.searchsorted(at, end, side="left")
    slow = np.array([r.slow for r in readings] + [False])
    last_slow = np.array([r.last_slow for r in readings] + [False])
    commits = np.array([r.commit for r in readings] + [""], dtype=object)
    own = np.array(points.commit_list(), dtype=object)
    for near, i in (((before >= 0) & (started - at[np.maximum(before, 0)] <= reach), before),
                    ((after < len(readings)) & (at[np.minimum(after, len(at) - 1)] - end
                                                 <= reach), after)):
        i = np.where(near, i, len(readings))  # the sentinel: never slow
        flags |= np.where(commits[i] == own, slow[i], last_slow[i])
    return flags & timed
