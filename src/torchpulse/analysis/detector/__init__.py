"""The detector: change detection on one benchmark series -- levels, noise, change points,
drifts, the active regression. Pure maths on one series, no I/O.

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
  regrouped into constant levels and lines (drift).
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
* Noise that wanders (AR(1), a random walk: its successive differences are correlated, and
  so are the residuals around the segments) widens the noise estimate by the effective
  sample size instead of being cut into change points (changes._decorrelated).
* A series whose moves are a random walk's (uncorrelated, adding up, at least 40 commits,
  no episode of a few commits beyond them; segmentation leaves its residuals correlated)
  gets as change points only the moves beyond what its own moves allow whose level holds,
  and a regression only through one of them (walk): its wander is neither a change point
  nor a drift.
* Two or more change points and drifts in a row, all the same way, are one drift where a
  cubic over their span fits as well and leaves only noise (curves): a rise along a curve
  is one finding, as a straight one is.
* Series with a zero among their values (failure rates) are analysed on a linear scale; all
  others on a log scale.
* An unstable series is told from how many commits a threshold-size step would be
  detectable at its present noise (commits_to_reach), or that none would do: more commits
  only pin down the level before a step, so the detectable step levels off.

Its modules, by question: ``model`` (the value objects), ``noise`` (robust levels and noise),
``significance`` (tests, segmentation, p-values), ``drift`` (levels and lines), ``changes``
(the analysis of a time or count series, as named steps), ``active`` (the regression at
the newest commit), ``walk`` (series that wander like a random walk), ``curves``
(staircases along a curve) and ``exact`` (exact counters).
Everything else reads it through this package: ``verdict`` is the entry point.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchpulse.analysis.detector import exact
from torchpulse.analysis.detector.active import STABLE_COMMITS
from torchpulse.analysis.detector.changes import MIN_POINTS, analyse
from torchpulse.analysis.detector.model import (
    ChangePoint,
    Drift,
    Noise,
    Point,
    Regression,
    SeriesVerdict,
)
from torchpulse.analysis.detector.noise import MAD_TO_SD
from torchpulse.analysis.detector.significance import benjamini_hochberg, best_split

__all__ = ["MAD_TO_SD", "MIN_POINTS", "STABLE_COMMITS", "ChangePoint", "Drift", "Noise",
           "Point", "Regression", "SeriesVerdict", "analyse", "benjamini_hochberg",
           "best_split", "least_points", "verdict"]


def verdict(points: Sequence[Point], *, exact_counter: bool, alpha: float,
            threshold: float | None, noise_floor: float) -> SeriesVerdict:
    """What detection concludes about a series: an exact counter's (any increase is a
    regression; ``threshold`` None) by exact.analyse, any other by analyse."""
    if exact_counter:
        return exact.analyse(points)
    assert threshold is not None
    return analyse(points, alpha=alpha, threshold=threshold, noise_floor=noise_floor)


def least_points(exact_counter: bool) -> int:
    """Commits a series needs before it gets a verdict: an exact counter needs no noise
    estimate."""
    return exact.MIN_POINTS if exact_counter else MIN_POINTS
