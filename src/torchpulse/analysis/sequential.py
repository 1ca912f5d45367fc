"""Sequential decisions on paired runs: add runs until the evidence decides, and stop there.

Used by ``torchpulse compare`` (is HEAD slower than BASE?) and ``torchpulse bisect`` (is this
commit on the good or the bad side?). The model:

* The unit of evidence is one run: one process measuring one commit. Runs come in rounds whose
  members run back to back (A B, then B A, ...), so a machine that drifts slowly weighs on
  both sides alike; a round's evidence is a difference of the log values of its runs (a ratio).
* After each *look* (a round count on a geometric schedule, so that few looks are spent) a
  Student-t confidence interval of the mean difference is formed. Its level is Bonferroni
  adjusted for the number of looks, so the chance that any of the intervals a test may form
  misses the true difference is at most ``alpha``; a decision read off an interval that
  covers the truth is right, so a test is wrong with probability at most ``alpha``.
* A decision is final when made; a test that has not decided at its last look is undecided.
  It never guesses.

Pinpoint (Chromium) adds repeats until two sides are clearly different or clearly the same;
this is the same idea with an interval that also says by how much.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from torchpulse.analysis.defaults import MIN_ROUNDS

SLOWER, FASTER, EQUIVALENT, UNDECIDED = "slower", "faster", "equivalent", "undecided"
GOOD, BAD = "good", "bad"


def looks(max_rounds: int, min_rounds: int = MIN_ROUNDS) -> list[int]:
    """The round counts at which a test looks: half as many rounds again each time, always
    ending at ``max_rounds`` (3, 5, 8, 12, 18, 20 for 20). Few looks keep the Bonferroni
    adjustment small."""
    if max_rounds < min_rounds:
        raise ValueError(f"at least {min_rounds} runs are needed, got a cap of {max_rounds}")
    points, n = [], min_rounds
    while n < max_rounds:
        points.append(n)
        n = max(n + 1, math.ceil(n * 1.5))
    points.append(max_rounds)
    return points


@dataclass(frozen=True)
class Pool:
    """The run-to-run variance of one benchmark (per run, log scale) learnt from earlier
    tests on it, as a sum of squares and its degrees of freedom. A bisection's probes all
    measure one benchmark on one machine, so each test can borrow the others' estimate:
    with a dozen degrees of freedom instead of two, the t quantile drops from about 30 to
    about 4 at the levels used, and a probe decides in a few rounds."""

    ss: float = 0.0
    df: int = 0

    def add(self, diffs: Sequence[float], factor: float) -> Pool:
        """This pool with a test's differences, each of variance ``factor`` runs'."""
        n = len(diffs)
        if n < 2:
            return self
        mean = math.fsum(diffs) / n
        ss = math.fsum((d - mean) ** 2 for d in diffs) / factor
        return Pool(self.ss + ss, self.df + n - 1)


@dataclass(frozen=True)
class Interval:
    """The mean of log differences with its interval, at the level used for the decision."""

    n: int
    mean: float
    low: float
    high: float
    level: float  # e.g. 0.99

    @property
    def ratio(self) -> float:
        return math.exp(self.mean)

    @property
    def ratio_low(self) -> float:
        return math.exp(self.low)

    @property
    def ratio_high(self) -> float:
        return math.exp(self.high)


def interval(diffs: Sequence[float], alpha: float, pool: Pool | None = None,
             factor: float = 1.0) -> Interval:
    """The two-sided 1 - ``alpha`` Student-t interval of the mean of ``diffs``, each the
    combination of ``factor`` runs' variance; its variance is estimated from ``diffs`` and
    the ``pool`` of earlier tests together. Identical differences (a deterministic metric)
    give an interval of zero width."""
    n = len(diffs)
    if n < 2:
        raise ValueError("an interval needs at least two differences")
    mean = math.fsum(diffs) / n
    both = (pool or Pool()).add(diffs, factor)
    var = both.ss / both.df * factor
    half = float(stats.t.ppf(1 - alpha / 2, both.df)) * math.sqrt(var / n)
    return Interval(n, mean, mean - half, mean + half, 1 - alpha)


def per_look_alpha(alpha: float, max_rounds: int, min_rounds: int = MIN_ROUNDS) -> float:
    return alpha / len(looks(max_rounds, min_rounds))


def change(iv: Interval, threshold: float) -> str | None:
    """What an interval of log(B/A) says about B against A with a practical ``threshold``
    (0.05: 5 %): slower or faster beyond it, equivalent within it, or nothing yet."""
    bound = math.log1p(threshold)
    if iv.low > bound:
        return SLOWER
    if iv.high < -bound:
        return FASTER
    if -bound < iv.low and iv.high < bound:
        return EQUIVALENT
    return None


def variance_bound(pool: Pool, confidence: float = 0.9) -> float:
    """An upper confidence bound of the per-run variance: the SPRT takes the variance as
    known, and an estimate from a few degrees of freedom is too small half of the time."""
    return pool.ss / float(stats.chi2.ppf(1 - confidence, pool.df))


def log_likelihood_ratio(diffs: Sequence[float], half_step: float, variance: float) -> float:
    """log P(diffs | bad place) / P(diffs | good place), for normal differences."""
    return 2 * half_step * math.fsum(diffs) / variance


def sprt(diffs: Sequence[float], half_step: float, variance: float,
         alpha: float) -> str | None:
    """Wald's sequential probability ratio test between two places a probe can be: every
    difference has mean +``half_step`` (the bad side) or -``half_step`` (the good side) and
    the given variance. It decides when the log likelihood ratio, 2 * half_step * sum /
    variance, leaves +-log((1 - alpha) / alpha): each wrong side has probability about
    ``alpha``, and it needs far fewer rounds than an interval that must exclude zero,
    because it knows how far apart the two places are."""
    if half_step <= 0 or variance <= 0:
        return None
    bound = math.log((1 - alpha) / alpha)
    llr = log_likelihood_ratio(diffs, half_step, variance)
    if llr >= bound:
        return BAD
    if llr <= -bound:
        return GOOD
    return None


def side(iv: Interval) -> str | None:
    """What an interval of (probe - midpoint of good and bad), signed so that the bad side
    is positive, says: the probe is on the good side, the bad side, or nothing yet."""
    if iv.low > 0:
        return BAD
    if iv.high < 0:
        return GOOD
    return None
