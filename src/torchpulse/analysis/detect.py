"""Change detection on one benchmark series: levels, noise, change points, active regressions.

The model (why it looks like this):

* Each commit is measured by one asv run, and every run has its own level (machine state,
  scheduling, thermals). Samples within a run therefore are not independent evidence about
  the commit; the unit of evidence is the run. A commit's level is the median of its samples
  (robust to a GC pause or an interrupt inside the run), or asv's stored value when no samples
  were recorded, on a log scale so that steps are ratios.
* The noise of a series is the spread of those levels between commits, estimated robustly
  (median absolute deviation of successive differences, then a winsorised standard deviation
  of the residuals around the fitted segments), never below what the within-run spread alone
  implies, the metric's resolution, or a relative floor (noise_floor): no series looks
  infinitely precise, and ties (counts, coarse timers) or two modes cannot collapse the
  robust estimate (spread). Between-run variation is thus part of every test.
* A slow drift is one finding over a range, not a change point a commit: the segments are
  regrouped into constant levels and lines (torchpulse.analysis.drift).
* Change points come from binary segmentation with a t-test of the mean level before and
  after each candidate split, adjusted for the number of places a split could go (Siegmund's
  approximation of the maximum over correlated splits), followed by Hunter's merge step
  (Fleming et al., ICPE 2023): every change point is re-tested against its neighbouring
  segments and the weakest is dropped until all are significant.
* A commit that jumps away from both neighbours, which agree with each other, is a one-commit
  spike: it is set aside, not allowed to split the series. Other levels far from their
  segment (a run on a busy machine) are pulled back to 2.5 noise deviations of it before
  the means are compared (winsorising, Huber's idea), so one slow run cannot fake a step.
* Every number asv stores is lower-is-better, so only increases are regressions. A series
  has at most one *active* regression: its newest level against its baseline, the last
  stable level (a segment of at least STABLE_COMMITS commits) before the rise. Shorter
  segments in between (a dip, a blip) are stepped over, so a return from a dip is never a
  regression and the size reported is the net change against the baseline. Every rise on the
  way is a culprit. A series that reached a level since its baseline (by a step worth an
  alert, or the newest level) which it had held before and left again, back to the
  baseline's level, toggles between levels: it is unstable, and not alerted on.
* Series with a zero among their values (failure rates) are analysed on a linear scale; all
  others on a log scale.
* An unstable series is told from how many commits a threshold-size step would be
  detectable at its present noise (commits_to_reach), or that none would do: more commits
  only pin down the level before a step, so the detectable step levels off.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from torchpulse.analysis import drift
from torchpulse.analysis.defaults import DEFAULT_NOISE_FLOOR

MAD_TO_SD = 1.4826  # consistency factor of the median absolute deviation for normal data
SPIKE_SIGMAS = 4.0  # how far a lone commit must jump from both neighbours to be a spike
WINSOR_SIGMAS = 2.5  # levels further than this from their segment are pulled back to it


class _Stats:
    """scipy.stats, imported on first use: an alert whose verdicts all come from the cache
    never needs it (half a second of its start). The first use puts the module itself in
    this one's globals."""

    def __getattr__(self, name: str):  # noqa: ANN204 (whatever scipy.stats holds)
        from scipy import stats as module

        globals()["stats"] = module
        return getattr(module, name)


stats = _Stats()

# the minimum detectable effect is the 80 %-power step size: scipy's norm.ppf(0.8), written
# out so that importing this module does not import scipy (a test holds the two equal)
POWER_Z = 0.8416212335729143
MDE_COMMITS_AFTER = 3
# a change point is listed once this many commits hold the new level (and the old one, at the
# start of a history): the commits after a step that the smallest detectable step assumes
HELD = MDE_COMMITS_AFTER
# a series whose runs lie beyond 3 noise deviations from their segment more often than
# this (normal noise: 0.27 %) has heavy tails: listing its change points, the mean of a
# segment of m commits is judged with the tails of Student's t with TAIL_DF * m degrees of
# freedom, what a couple of odd runs can do to a short mean (10 commits: t with 10)
HEAVY_SHARE = 0.01
TAIL_DF = 1
MIN_POINTS = 5  # fewer commits tell nothing about between-run noise; such series get no alert
STABLE_COMMITS = 5  # a level held this long is a baseline; shorter segments are stepped over
# a change is worth an alert unless it is clearly smaller than --threshold: its estimate
# plus this many standard errors must reach the threshold (a true threshold-size step passes),
# and the estimate itself at least PRACTICAL_FLOOR of it
PRACTICAL_SE = 3.0
PRACTICAL_FLOOR = 0.5
REACH_CAP = 100  # how far the projection of an unstable series' mde looks
TRIM = 0.1  # spread: the share of largest deviations a collapse-proof spread leaves out
TRIM_AT_LEAST = 2  # ... and at least this many (a step's difference, a spike's two)
COLLAPSE = 1.5  # spread: the median deviation has collapsed below this share of the RMS


@dataclass(frozen=True, slots=True)  # a history holds millions: no __dict__ each
class Point:
    """One commit's measurement of a series: asv's value and, when recorded, its samples."""

    commit: str
    value: float
    samples: tuple[float, ...] = ()
    # when its asv job ran (ms since the epoch) and for how long (s), where stored
    started_ms: float | None = None
    seconds: float | None = None
    # the machine canary says the machine was disturbed while it was measured: shown, but
    # left out of detection (see torchpulse.analysis.disturbance)
    disturbed: bool = False

    def _clean(self, linear: bool) -> np.ndarray:
        kept = [s for s in self.samples
                if s is not None and math.isfinite(s) and (s >= 0 if linear else s > 0)]
        return np.asarray(kept, dtype=float) if linear else np.log(kept)

    def level(self, linear: bool = False) -> float:
        """The run's level (log scale, or linear): the mean of the samples left after
        dropping those more than 3 robust deviations from their median (a GC pause, an
        interrupt), which keeps nearly the efficiency of the mean; asv's value when no
        samples."""
        data = self._clean(linear)
        if len(data) == 0:
            return self.value if linear else math.log(self.value)
        centre = float(np.median(data))
        spread = MAD_TO_SD * float(np.median(np.abs(data - centre)))
        inliers = data[np.abs(data - centre) <= 3.0 * spread] if spread > 0 else data
        return float(np.mean(inliers)) if spread > 0 else centre

    def within_cv(self, linear: bool = False) -> float | None:
        """Robust spread of the samples inside this run (a CV on the log scale)."""
        data = self._clean(linear)
        if len(data) < 3:
            return None
        return spread(data)

    def raw(self) -> np.ndarray:
        """What was measured, in its unit: the samples, else asv's value."""
        data = self._clean(True)
        return data if len(data) else np.array([self.value])


@dataclass(frozen=True)
class Noise:
    """How noisy a series is, in relative terms (log-scale standard deviations ~ CV; on a
    linear series, relative to its typical level)."""

    cv: float  # commit-to-commit spread of the levels (between-run noise included)
    within_cv: float | None  # typical spread of samples inside one run, when recorded
    mde: float  # smallest step found with 80 % power when 3 commits follow it
    unstable: bool  # the noise makes the threshold meaningless: mde > threshold
    toggling: bool = False  # the series moves back and forth between levels
    # unstable and not toggling: the commits from which its mde would be within the
    # threshold at the noise measured so far (None: not within REACH_CAP commits)
    reach: int | None = None


@dataclass(frozen=True)
class ChangePoint:
    """A change of level: ``index`` is the first point at the new level."""

    index: int
    before: float  # level of the segment before (original units, geometric mean)
    after: float  # level of the segment from ``index`` on
    pvalue: float  # adjusted for the places the split could have gone
    stderr: float  # standard error of log(after / before)

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


@dataclass(frozen=True)
class Regression:
    """The active regression of a series: its newest level against its baseline."""

    index: int  # first point at a raised level: the first culprit
    culprits: tuple[int, ...]  # every point where the level rose since the baseline
    before: float  # the baseline: the last stable level before the rise (original units)
    after: float  # the newest level
    pvalue: float  # adjusted for the places the change could have gone
    stderr: float  # standard error of the net change on the analysis scale
    noisy: bool = False  # the series is unstable, but this step clearly exceeds its noise
    # the (first, last) points of each drift up between the baseline and the newest level:
    # the level rose over those commits, not at one of them
    drifts: tuple[tuple[int, int], ...] = ()

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


@dataclass(frozen=True)
class Drift:
    """A smooth change of level over a range of commits (see torchpulse.analysis.drift)."""

    start: int  # its first point
    end: int  # its last point
    before: float  # the fitted level at ``start`` (original units)
    after: float  # the fitted level at ``end``
    pvalue: float  # of its rise or fall, adjusted like a change point's

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


@dataclass(frozen=True)
class SeriesVerdict:
    """What detection concluded about one series."""

    change_points: tuple[ChangePoint, ...]  # significant ones, oldest first
    active: tuple[Regression, ...]  # the regression present at the newest commit, if any
    spikes: tuple[int, ...]  # indices set aside as one-commit spikes
    noise: Noise
    linear: bool = False  # analysed on a linear scale (the series has zeros)
    drifts: tuple[Drift, ...] = ()  # smooth changes over a range, oldest first

    @property
    def pvalue(self) -> float:
        """The series' evidence for an active regression (1.0 when there is none)."""
        return min((c.pvalue for c in self.active), default=1.0)


@functools.lru_cache(maxsize=4096)
def _trim_factor(keep: int, total: int) -> float:
    """The consistency factor of a root mean square of normal deviations from which the
    largest ``total - keep`` of ``total`` were dropped (a truncated normal's variance)."""
    kept = keep / total
    if kept >= 1.0:
        return 1.0
    z = stats.norm.ppf((1.0 + kept) / 2.0)
    return 1.0 / math.sqrt(1.0 - 2.0 * z * stats.norm.pdf(z) / kept)


def spread(x: np.ndarray) -> float:
    """Robust standard deviation of ``x``: the median absolute deviation, unless the data
    make it collapse. It collapses when more than half the values tie (a count that moves
    by one unit now and then, a timer that rounds to a coarse unit: the median deviation
    is 0) or when most values sit in one of two modes (it measures the larger mode alone).
    Then the root mean square of the deviations, the largest TRIM of them (at least
    TRIM_AT_LEAST) dropped (steps, spikes, slow runs), is the spread: it is used when it
    exceeds the median's by COLLAPSE, which normal data almost never show."""
    if len(x) == 0:
        return 0.0
    dev = np.abs(x - np.median(x))
    mad = float(MAD_TO_SD * np.median(dev))
    keep = max(len(dev) - max(math.ceil(TRIM * len(dev)), TRIM_AT_LEAST), 1)
    kept = np.sort(dev)[:keep]
    rms = float(np.sqrt(np.mean(kept**2))) * _trim_factor(keep, len(dev))
    return rms if rms > COLLAPSE * mad else mad


def _rows_spread(dev: np.ndarray) -> np.ndarray:
    """``spread`` of each row, given each row's absolute deviations from its median."""
    k = dev.shape[1]
    mad = MAD_TO_SD * np.median(dev, axis=1)
    keep = max(k - max(math.ceil(TRIM * k), TRIM_AT_LEAST), 1)
    kept = np.sort(dev, axis=1)[:, :keep]
    rms = np.sqrt(np.mean(kept**2, axis=1)) * _trim_factor(keep, k)
    return np.where(rms > COLLAPSE * mad, rms, mad)


def run_levels(points: Sequence[Point], linear: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every point's ``level`` and ``within_cv`` (NaN where it has none) at once, and every
    value measured (what ``raw`` gives, in another order): the points whose samples are
    all usable and equally many are computed as one array (a series of a thousand commits
    is one numpy call, not a thousand), the rest one by one. The same numbers as the
    methods give."""
    n = len(points)
    levels = np.empty(n)
    within = np.full(n, np.nan)
    measured: list[np.ndarray] = []
    by_length: dict[int, list[int]] = {}
    for i, p in enumerate(points):
        k = len(p.samples)
        by_length.setdefault(k if k >= 3 else 0, []).append(i)
    for k, idx in by_length.items():
        data = np.array([points[i].samples for i in idx], dtype=float) if k else None
        usable = data is not None and bool(np.all(np.isfinite(data) & (
            data >= 0 if linear else data > 0)))
        if not usable:
            for i in idx:
                levels[i] = points[i].level(linear)
                cv = points[i].within_cv(linear)
                within[i] = np.nan if cv is None else cv
                measured.append(points[i].raw())
            continue
        measured.append(data.ravel())
        if not linear:
            data = np.log(data)
        centre = np.median(data, axis=1)
        dev = np.abs(data - centre[:, None])
        scale = MAD_TO_SD * np.median(dev, axis=1)
        inlier = dev <= 3.0 * scale[:, None]
        means = np.mean(data, axis=1)
        slow = np.nonzero(~inlier.all(axis=1) & (scale > 0))[0]  # a slow sample or two
        kept = inlier[slow].sum(axis=1)
        for j in np.unique(kept):  # the rows keeping j samples: one row each, in order
            rows = slow[kept == j]
            means[rows] = np.mean(data[rows][inlier[rows]].reshape(len(rows), j), axis=1)
        levels[idx] = np.where(scale > 0, means, centre)
        within[idx] = _rows_spread(dev)
    return levels, within, np.concatenate(measured) if measured else np.zeros(0)


def resolution(values: np.ndarray) -> float:
    """The unit the metric is measured in, when it has one: the step of the grid that its
    distinct values lie on (a count's 1, a timer's tick), when there are three or more of
    them; 0 for continuous values. Two distinct values are no grid: their difference may
    be a step of the series itself."""
    distinct = np.unique(values[np.isfinite(values)])
    if len(distinct) < 3:
        return 0.0
    gaps = np.diff(distinct)
    unit = float(np.min(gaps))
    multiples = gaps / unit
    return unit if np.allclose(multiples, np.round(multiples), rtol=0, atol=1e-6) else 0.0


def diff_sd(levels: np.ndarray) -> float:
    """Noise from successive differences: steps touch only a few of them."""
    if len(levels) < 3:
        return 0.0
    return spread(np.diff(levels)) / math.sqrt(2.0)


def _residuals(levels: np.ndarray, bounds: Sequence[int]) -> np.ndarray:
    """Each level less its segment's median."""
    edges = [0, *bounds, len(levels)]
    return np.concatenate([levels[a:b] - np.median(levels[a:b])
                           for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a])


def residual_sd(levels: np.ndarray, bounds: Sequence[int]) -> float:
    """Winsorised standard deviation of the residuals around each segment's median."""
    resid = _residuals(levels, bounds)
    scale = spread(resid)
    if scale == 0.0:
        return 0.0
    clipped = np.clip(resid, -3 * scale, 3 * scale)
    dof = max(len(levels) - len(bounds) - 1, 1)
    return float(math.sqrt(np.sum(clipped**2) / dof))


def heavy_tailed(levels: np.ndarray, bounds: Sequence[int], sigma: float) -> bool:
    """More runs lie beyond 3 ``sigma`` of their segment's median than HEAVY_SHARE."""
    if sigma <= 0 or len(levels) == 0:
        return False
    return float(np.mean(np.abs(_residuals(levels, bounds)) > 3.0 * sigma)) > HEAVY_SHARE


def find_spikes(levels: np.ndarray, sigma: float) -> list[int]:
    """Commits that leave the level of both neighbours, which agree, by SPIKE_SIGMAS."""
    if sigma <= 0 or len(levels) < 3:
        return []
    cut = SPIKE_SIGMAS * sigma
    spikes = []
    for i in range(1, len(levels) - 1):
        left, right = levels[i] - levels[i - 1], levels[i] - levels[i + 1]
        if (abs(left) > cut and abs(right) > cut and left * right > 0
                and abs(levels[i - 1] - levels[i + 1]) < cut / 2):
            spikes.append(i)
    return spikes


def _nu(x: np.ndarray) -> np.ndarray:
    """Siegmund's overshoot correction for a discrete-time maximum."""
    h = x / 2.0
    return (2.0 / x) * (stats.norm.cdf(h) - 0.5) / (h * stats.norm.cdf(h) + stats.norm.pdf(h))


def max_split_pvalue(z: float, m: int) -> float:
    """P(max over the m - 1 splits of a pure-noise stretch of m points of the |standardised
    mean difference| >= z): Siegmund's approximation (Siegmund 1986; James, James and
    Siegmund 1987). Much less conservative than Bonferroni, because neighbouring splits
    are strongly correlated, and within a few per cent of simulation in the tail; capped
    by Bonferroni for very short stretches."""
    if m < 2:
        return 1.0
    if not math.isfinite(z):
        return 0.0
    bonferroni = 2.0 * stats.norm.sf(z) * (m - 1)
    if z <= 0:
        return 1.0
    t = np.arange(1, m) / m
    siegmund = z * stats.norm.pdf(z) * float(np.sum(_nu(z / np.sqrt(m * t * (1 - t)))
                                                      / (t * (1 - t)))) / m
    # the approximation is for the tail: near z = 0 it tends to 0, so it is held at the p of
    # one split, which the maximum over all splits can never be below
    return float(max(2.0 * stats.norm.sf(z), min(1.0, bonferroni, siegmund)))


@functools.lru_cache(maxsize=1024)
def critical_z(m: int, alpha: float) -> float:
    """The standardised step that splits a pure-noise stretch of ``m`` points at level
    ``alpha``, with the same correction for the places a split could go as the test itself
    (max_split_pvalue): the minimum detectable step is consistent with what is detected."""
    if m < 2:
        return math.inf
    low, high = 0.5, 20.0
    for _ in range(60):  # bisection: max_split_pvalue falls as z grows
        mid = (low + high) / 2.0
        low, high = (mid, high) if max_split_pvalue(mid, m) > alpha else (low, mid)
    return high


def mde_factor(m: int, alpha: float) -> float:
    """The smallest step found with 80 % power, 3 commits after it, in a series of ``m``
    commits, in units of its noise (infinite for too few commits)."""
    if m <= MDE_COMMITS_AFTER:
        return math.inf
    return (critical_z(m, alpha) + POWER_Z) * math.sqrt(
        1.0 / MDE_COMMITS_AFTER + 1.0 / (m - MDE_COMMITS_AFTER))


def commits_to_reach(sigma: float, n: int, alpha: float, limit: float) -> int | None:
    """The fewest commits, more than ``n``, at which a series with noise ``sigma`` would
    detect a step of ``limit`` (both on the analysis scale) with 80 % power; None when no
    number up to REACH_CAP does. More commits shrink the standard error of the level before
    a step, but not of the 3 after it, and the correction for where a split could go grows:
    the factor levels off, so a noisy enough series never gets there."""
    for m in range(max(n + 1, MDE_COMMITS_AFTER + 1), REACH_CAP + 1):
        if mde_factor(m, alpha) * sigma <= limit:
            return m
    return None


def winsorise_running(levels: np.ndarray, cut: float, news: int = 2) -> np.ndarray:
    """Pull runs further than ``cut`` from the running median of 5 commits back to that
    distance, so one slow run moves a segment mean by a bounded amount. The newest
    ``news`` commits are left alone: there a step and a slow run look alike."""
    n = len(levels)
    out = levels.copy()
    stop = max(n - news, 0)
    centres = np.empty(n)
    if n >= 5:  # every full window of 5 at once; the edges' shorter windows one by one
        centres[2:n - 2] = np.median(np.lib.stride_tricks.sliding_window_view(levels, 5),
                                     axis=1)
    for i in [*range(min(2, n)), *range(max(n - 2, 2), n)] if n >= 5 else range(n):
        centres[i] = np.median(levels[max(0, i - 2):min(n, i + 3)])
    out[:stop] = np.clip(levels[:stop], centres[:stop] - cut, centres[:stop] + cut)
    return out


def winsorise_segments(levels: np.ndarray, bounds: Sequence[int], cut: float) -> np.ndarray:
    """Pull every level to within ``cut`` of its own segment's median (Huber's idea: large
    residuals count, but only so much)."""
    edges = [0, *bounds, len(levels)]
    out = levels.copy()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        centre = float(np.median(levels[a:b]))
        out[a:b] = np.clip(levels[a:b], centre - cut, centre + cut)
    return out


class _Tester:
    """t-tests of the mean level between two stretches of a series, noise ``sigma``."""

    def __init__(self, levels: np.ndarray, sigma: float, dof: int) -> None:
        self.x = levels
        self.cum = np.concatenate([[0.0], np.cumsum(levels)])
        self.sigma = sigma
        self.dof = max(dof, 1)

    def _mean(self, a: int, b: int) -> float:
        return (self.cum[b] - self.cum[a]) / (b - a)

    def split_stats(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """For every split k in (a, b): the t statistic of mean[k:b] - mean[a:k]."""
        k = np.arange(a + 1, b)
        n1, n2 = k - a, b - k
        left = (self.cum[k] - self.cum[a]) / n1
        right = (self.cum[b] - self.cum[k]) / n2
        se = self.sigma * np.sqrt(1.0 / n1 + 1.0 / n2)
        return k, (right - left) / se

    def pvalue(self, a: int, k: int, b: int, tails: bool = False) -> tuple[float, float]:
        """Two-sided p of a change at k between [a, k) and [k, b), adjusted for the
        b - a - 1 places a split between a and b could have gone; and its stderr. With
        ``tails`` (a heavy-tailed series), the shorter side's mean is given the tails of
        Student's t with TAIL_DF degrees of freedom per commit in it."""
        se = self.sigma * math.sqrt(1.0 / (k - a) + 1.0 / (b - k))
        t = (self._mean(k, b) - self._mean(a, k)) / se
        dof = min(self.dof, TAIL_DF * min(k - a, b - k)) if tails else self.dof
        # the normal deviate with the t statistic's tail probability (sigma is estimated)
        z = stats.norm.isf(stats.t.sf(abs(t), dof))
        return max_split_pvalue(z, b - a), se

    def contrast(self, a: int, b: int, c: int, d: int) -> tuple[float, float]:
        """Two-sided p of a different mean in [c, d) than in [a, b) (b <= c), adjusted for
        the places a change could have gone between a and d; and its stderr."""
        se = self.sigma * math.sqrt(1.0 / (b - a) + 1.0 / (d - c))
        t = (self._mean(c, d) - self._mean(a, b)) / se
        z = stats.norm.isf(stats.t.sf(abs(t), self.dof))
        return max_split_pvalue(z, d - a), se

    def best_split(self, a: int, b: int) -> int | None:
        if b - a < 2:
            return None
        k, t = self.split_stats(a, b)
        return int(k[np.argmax(np.abs(t))])


def best_split(levels: np.ndarray) -> int | None:
    """Where the one split that best separates two mean levels of ``levels`` lies (the
    least-squares estimate of a single change), None for fewer than two points."""
    return _Tester(np.asarray(levels, dtype=float), 1.0, 1).best_split(0, len(levels))


def _segment(tester: _Tester, alpha: float) -> list[int]:
    """Binary segmentation at ``alpha``, then the merge step; sorted split indices."""
    n = len(tester.x)
    found: list[int] = []
    todo = [(0, n)]
    while todo:
        a, b = todo.pop()
        k = tester.best_split(a, b)
        if k is None or tester.pvalue(a, k, b)[0] > alpha:
            continue
        found.append(k)
        todo += [(a, k), (k, b)]
    found.sort()
    while found:  # merge: re-test each against its neighbours, drop the weakest
        edges = [0, *found, n]
        ps = [tester.pvalue(edges[i], edges[i + 1], edges[i + 2])[0]
              for i in range(len(found))]
        worst = int(np.argmax(ps))
        if ps[worst] <= alpha:
            break
        del found[worst]
    return found


def noise_floor(points: Sequence[Point], linear: bool, ref: float, within_cv: float | None,
                relative: float, measured: np.ndarray | None = None) -> float:
    """The least noise a series can have, on the analysis scale: the within-run spread of a
    commit's mean, the rounding error of the metric's resolution (a uniform error over one
    unit: unit / sqrt(12)) and ``relative`` of the level. A series at zero (a failure rate
    that never failed) has no level to be relative to: only its within-run spread counts,
    and every move of such a series is real. ``measured``: every value the points hold
    (their ``raw``), when known already."""
    nsamples = float(np.median([max(len(p.samples), 1) for p in points])) if points else 1.0
    floor = within_cv / math.sqrt(nsamples) if within_cv else 0.0
    if linear and ref <= 0:
        return floor
    if measured is None:
        measured = np.concatenate([p.raw() for p in points]) if points else np.zeros(0)
    unit = resolution(measured)
    if not linear and unit:  # on the log scale, the unit relative to the typical value
        unit /= float(np.median(measured))
    return max(floor, unit / math.sqrt(12.0), relative * ref)


def analyse(points: Sequence[Point], alpha: float = 0.01, threshold: float = 0.05,
            floor: float = DEFAULT_NOISE_FLOOR) -> SeriesVerdict:
    """Detect the change points of one series (points oldest first) and decide whether a
    regression is active at the newest point. ``floor``: the least relative noise any
    series is taken to have (see noise_floor)."""
    linear = any(p.value <= 0 for p in points)  # a zero has no logarithm: failure rates
    all_levels, spreads, measured = run_levels(points, linear)
    within = spreads[~np.isnan(spreads)]
    within_cv = float(np.median(within)) if len(within) else None
    # relative quantities of a linear series are fractions of its typical level
    ref = float(np.median(np.abs(all_levels))) if linear and len(points) else 1.0
    floor = noise_floor(points, linear, ref, within_cv, floor, measured)

    # exact: the levels never move but for steps (a deterministic metric); every move is real
    between = diff_sd(all_levels)
    exact = between == 0.0
    sigma0 = max(between, floor)
    if len(points) < MIN_POINTS:  # too few runs to know the between-run noise: no verdict
        noise = Noise(_relative(sigma0, ref), within_cv and _relative(within_cv, ref),
                      math.inf, False)
        return SeriesVerdict((), (), (), noise, linear)
    spikes = find_spikes(all_levels, sigma0)
    keep = np.setdiff1d(np.arange(len(all_levels)), spikes)
    raw = all_levels[keep]
    levels = raw
    n = len(levels)

    bounds: list[int] = []
    sigma = sigma0
    if n >= 3 and sigma0 > 0:
        levels = winsorise_running(raw, WINSOR_SIGMAS * sigma0)
        for _ in range(2):  # refine noise and robust levels once the segments are known
            bounds = _segment(_Tester(levels, sigma, n - 1), alpha)
            sigma = max(residual_sd(raw, bounds), floor, 1e-12)
            levels = winsorise_segments(raw, bounds, WINSOR_SIGMAS * sigma)
        tester = _Tester(levels, sigma, n - len(bounds) - 1)
        bounds = _segment(tester, alpha)
    elif n >= 2 and sigma0 == 0 and np.ptp(levels) > 0:  # noiseless: every move is real
        bounds = [i for i in range(1, n) if levels[i] != levels[i - 1]]
        tester = _Tester(levels, 1e-12, 1)
    else:
        tester = _Tester(levels, max(sigma, 1e-12), max(n - 1, 1))

    heavy = not exact and heavy_tailed(raw, bounds, sigma)
    back = (lambda x: x) if linear else math.exp
    parts = drift.pieces(levels, bounds, sigma if sigma0 > 0 else 0.0)
    changes = []
    jumps: set[int] = set()  # where a change point starts a piece
    for j, (left, right) in enumerate(zip(parts[:-1], parts[1:], strict=True)):
        if not (left.line or right.line):
            short = j if left.stop - left.start < right.stop - right.start else j + 1
            p, se = tester.pvalue(left.start, right.start, right.stop,
                                  tails=heavy and _excursion(parts, short))
            if p > alpha and not exact:
                continue  # a short excursion a few heavy-tailed runs could make
            if sigma0 == 0:
                p, se = 0.0, 0.0
        else:  # next to a drift: a change point only where the fitted level jumps
            se = sigma * math.sqrt(left.variance[1] + right.variance[0])
            p = max_split_pvalue(drift.jump(levels, left, right) / sigma,
                                 right.stop - left.start)
            if p > alpha:
                continue
        jumps.add(right.start)
        if not exact and ((left.start == 0 and left.stop < HELD)
                          or (right.stop == n and n - right.start < HELD)):
            # a level held by fewer than HELD commits at either end of a noisy history: a
            # change and one or two odd runs look alike there. Not a change point (yet); at
            # the newest commits the active alert still sees it, and a step resting on one
            # run is measured again
            continue
        changes.append(ChangePoint(int(keep[right.start]), back(left.last), back(right.first),
                                   p, se))
    drifts = tuple(Drift(int(keep[q.start]), int(keep[q.stop - 1]), back(q.first),
                         back(q.last), max_split_pvalue(abs(q.last - q.first)
                                                        / (sigma * q.rise_se), n))
                   for q in parts if q.line)
    edges = [q.start for q in parts] + [n]
    lines = [q.line for q in parts]
    # a drift's level: its middle, or, for the newest piece, where it has got to
    means = [(q.first + q.last) / 2.0 if q.line else q.first for q in parts]
    if parts[-1].line:
        means[-1] = parts[-1].last

    z_alpha = critical_z(n, alpha)
    mde = math.inf
    if n > MDE_COMMITS_AFTER:
        mde_scale = mde_factor(n, alpha) * sigma  # on the analysis scale
        mde = _relative(mde_scale, ref) if linear else math.expm1(mde_scale)
    last = len(means) - 1
    baseline = _baseline(means, edges, last, lines) if last >= 1 else None
    if baseline is None and parts[-1].line and parts[-1].last > parts[-1].first:
        baseline = last  # drifting up since its own start, from no lower stable level
    toggle = None
    if baseline is not None and baseline < last and last >= 2:
        worth = threshold * abs(means[baseline]) if linear else math.log1p(threshold)
        toggle = _toggle_amplitude(means, baseline, worth)
    if toggle is not None:
        mde = max(mde, _relative(toggle, ref) if linear else math.expm1(toggle))
    unstable = mde > threshold or toggle is not None
    reach = None
    if unstable and toggle is None:
        limit = threshold * ref if linear else math.log1p(threshold)
        reach = commits_to_reach(sigma, n, alpha, limit)
        reach = reach + len(spikes) if reach is not None else None
    noise = Noise(cv=_relative(sigma, ref), within_cv=within_cv and _relative(within_cv, ref),
                  mde=mde, unstable=unstable, toggling=toggle is not None, reach=reach)
    regression = None
    if toggle is None:
        # an unstable series alerts only on a step that clearly exceeds its noise: one the
        # test finds with 80 % power given its own commits before and after, not merely a
        # significant one (z >= z_alpha + 0.84 instead of z >= z_alpha)
        clear = z_alpha + POWER_Z if noise.unstable else None
        regression = _active(tester, parts, means, jumps, keep, baseline, threshold, clear,
                             linear, exact=sigma0 == 0)
    return SeriesVerdict(tuple(changes), (regression,) if regression else (),
                         tuple(int(i) for i in spikes), noise, linear, drifts)


def _excursion(parts: Sequence[drift.Piece], j: int) -> bool:
    """Piece ``j`` could be a few odd runs rather than a level: it is at either end of the
    history, or the level after it comes back at least half way to the level before it (a
    step in two stages, 20 -> 23 -> 24, is no excursion)."""
    if j == 0 or j == len(parts) - 1:
        return True
    before, here, after = parts[j - 1].last, parts[j].first, parts[j + 1].first
    return abs(after - before) < abs(here - before) / 2.0


def _relative(value: float, ref: float) -> float:
    """A spread on the analysis scale as a fraction of the level (log scale: as it is)."""
    if ref == 1.0 or value == 0.0:
        return value
    return value / ref if ref > 0 else math.inf


def _baseline(means: Sequence[float], edges: Sequence[int], last: int,
              lines: Sequence[bool]) -> int | None:
    """Where the regression at segment ``last`` started from: the newest stable segment
    (STABLE_COMMITS or more) below it, or an older stable one further down when the level
    only climbed since (two steps up are one regression). None when no stable level before
    is below the newest one. Short segments (dips, blips) and drifts are never a baseline."""
    stable = [i for i in range(last - 1, -1, -1)
              if edges[i + 1] - edges[i] >= STABLE_COMMITS and not lines[i]]
    stable = stable or [0]  # a series that starts with short segments: its first
    below = [i for i in stable if means[i] < means[last]]
    if not below:
        return None
    b = below[0]
    for i in stable[stable.index(b) + 1:]:
        # a climb: lower and older, and nothing between went above the newest level (a
        # 100x excursion up and back between two quiet levels is not a climb)
        if means[i] >= means[b] or max(means[i + 1:b], default=-math.inf) > means[last]:
            break
        b = i
    return b


def _toggle_amplitude(means: Sequence[float], b: int, worth: float) -> float | None:
    """When the series toggles between levels, the size of the move, else None. It toggles
    when a level it reached since the baseline ``b`` (the newest, or any at least ``worth``
    above the baseline) was held before and left again: before the baseline, or since it
    with a return to the baseline's level in between. Levels match within a quarter of the
    move."""
    last = len(means) - 1
    amplitude = None
    for j in range(b + 1, last + 1):
        step = means[j] - means[b]
        if step <= 0 or (j < last and step < worth):
            continue
        near = step / 4.0
        # the last return to the baseline's level before j: the level j reached was held
        # before it (and so left again) when it was held at some i earlier than that
        back = max((k for k in range(b, j) if abs(means[k] - means[b]) <= near), default=-1)
        if any(abs(means[i] - means[j]) <= near for i in range(back) if i != b):
            amplitude = max(step, amplitude or 0.0)
    return amplitude


def _active(tester: _Tester, parts: Sequence[drift.Piece], means: Sequence[float],
            jumps: set[int], keep: np.ndarray, b: int | None, threshold: float,
            clear_z: float | None, linear: bool, exact: bool) -> Regression | None:
    """The regression present at the newest commit: the newest piece (a segment, or a drift
    that goes on at the newest commit: where it has got to) against ``b``, the last stable
    segment before it, when the rise is significant and worth an alert. Its culprits: the
    change points up (``jumps``: where one starts a piece) and the drifts up on the way.
    ``clear_z``: on an unstable series, the multiple of its standard error the step must
    exceed."""
    last = len(means) - 1
    if b is None:
        return None
    base, newest = parts[b], parts[last]
    # a drift is never a baseline but where the series has nothing else before (b == last:
    # a drift going on now; or a drift from the first commit, then a level): its start is
    # then the level before, and the drift part of the rise
    from_line = base.line and b != last
    start = newest.first if b == last else base.first if from_line else means[b]
    net = means[last] - start
    if exact:  # noiseless: every move is real
        p, se = 0.0, 0.0
    elif b == last:
        se = tester.sigma * newest.rise_se
        p = max_split_pvalue(abs(net) / se, newest.stop - newest.start)
    elif from_line:
        se = tester.sigma * math.sqrt(base.variance[0] + (
            newest.variance[1] if newest.line else 1.0 / (newest.stop - newest.start)))
        p = max_split_pvalue(abs(net) / se, newest.stop - base.start)
    elif newest.line or base.line:
        se = tester.sigma * math.sqrt(1.0 / (base.stop - base.start) + (
            newest.variance[1] if newest.line else 1.0 / (newest.stop - newest.start)))
        p = max_split_pvalue(abs(net) / se, newest.stop - base.start)
    else:
        p, se = tester.contrast(base.start, base.stop, newest.start, newest.stop)
    if linear:
        wanted = threshold * abs(start)  # any rise from zero is worth an alert
    else:
        wanted = math.log1p(threshold)
    if net + PRACTICAL_SE * se < wanted or net < PRACTICAL_FLOOR * wanted:
        return None
    if clear_z is not None and net < clear_z * se:
        return None
    rising = [j for j in range(b if from_line else min(b + 1, last), last + 1)
              if parts[j].line and parts[j].last > parts[j].first]
    culprits = tuple(sorted({int(keep[parts[j + 1].start]) for j in range(b, last)
                             if parts[j + 1].start in jumps
                             and parts[j + 1].first > parts[j].last}
                            | {int(keep[parts[j].start]) for j in rising}))
    culprits = culprits or (int(keep[newest.start]),)  # a rise made of small moves
    drifts = tuple((int(keep[parts[j].start]), int(keep[parts[j].stop - 1])) for j in rising)
    back = (lambda x: x) if linear else math.exp
    return Regression(culprits[0], culprits, back(start), back(means[last]), p, se,
                      noisy=clear_z is not None, drifts=drifts)


def benjamini_hochberg(pvalues: Sequence[float], q: float) -> float:
    """The largest p-value the Benjamini-Hochberg procedure rejects at FDR ``q`` (0.0 when
    it rejects none): false alarms controlled across many series, not per series."""
    p = np.sort(np.asarray(pvalues, dtype=float))
    m = len(p)
    if m == 0:
        return 0.0
    ok = np.nonzero(p <= q * np.arange(1, m + 1) / m)[0]
    return float(p[ok[-1]]) if len(ok) else 0.0
