"""Segmentation and p-values: t-tests of a mean level between stretches of a series, the
correction for the places a split could go (Siegmund), binary segmentation with Hunter's
merge step, the smallest detectable step, and false-discovery control across series."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from torchpulse.analysis.detector import distributions as dist

# the minimum detectable effect is the 80 %-power step size: scipy's norm.ppf(0.8), written
# out so that importing this module does not import scipy (a test holds the two equal)
POWER_Z = 0.8416212335729143
MDE_COMMITS_AFTER = 3
TAIL_DF = 1  # see changes.HEAVY_SHARE: the tails a heavy-tailed series' short mean is given
REACH_CAP = 100  # how far the projection of an unstable series' mde looks


def _nu(x: np.ndarray) -> np.ndarray:
    """Siegmund's overshoot correction for a discrete-time maximum."""
    h = x / 2.0
    below = dist.norm_cdf(h)
    return (2.0 / x) * (below - 0.5) / (h * below + dist.norm_pdf(h))


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
    if z <= 0:
        return 1.0
    one_split = 2.0 * dist.norm_sf(z)  # the p of one split
    bonferroni = one_split * (m - 1)
    t = np.arange(1, m) / m
    siegmund = z * dist.norm_pdf(z) * float(np.sum(_nu(z / np.sqrt(m * t * (1 - t)))
                                                      / (t * (1 - t)))) / m
    # the approximation is for the tail: near z = 0 it tends to 0, so it is held at the p of
    # one split, which the maximum over all splits can never be below
    return float(max(one_split, min(1.0, bonferroni, siegmund)))


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


class Tester:
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
        z = dist.norm_isf(dist.t_sf(abs(t), dof))
        return max_split_pvalue(z, b - a), se

    def contrast(self, a: int, b: int, c: int, d: int) -> tuple[float, float]:
        """Two-sided p of a different mean in [c, d) than in [a, b) (b <= c), adjusted for
        the places a change could have gone between a and d; and its stderr."""
        se = self.sigma * math.sqrt(1.0 / (b - a) + 1.0 / (d - c))
        t = (self._mean(c, d) - self._mean(a, b)) / se
        z = dist.norm_isf(dist.t_sf(abs(t), self.dof))
        return max_split_pvalue(z, d - a), se

    def best_split(self, a: int, b: int) -> int | None:
        if b - a < 2:
            return None
        k, t = self.split_stats(a, b)
        return int(k[np.argmax(np.abs(t))])


def best_split(levels: np.ndarray) -> int | None:
    """Where the one split that best separates two mean levels of ``levels`` lies (the
    least-squares estimate of a single change), None for fewer than two points."""
    return Tester(np.asarray(levels, dtype=float), 1.0, 1).best_split(0, len(levels))


def segment(tester: Tester, alpha: float) -> list[int]:
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


def benjamini_hochberg(pvalues: Sequence[float], q: float) -> float:
    """The largest p-value the Benjamini-Hochberg procedure rejects at FDR ``q`` (0.0 when
    it rejects none): false alarms controlled across many series, not per series."""
    p = np.sort(np.asarray(pvalues, dtype=float))
    m = len(p)
    if m == 0:
        return 0.0
    ok = np.nonzero(p <= q * np.arange(1, m + 1) / m)[0]
    return float(p[ok[-1]]) if len(ok) else 0.0
