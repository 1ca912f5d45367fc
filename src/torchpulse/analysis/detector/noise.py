"""Robust noise and levels: a run's level from its samples, the spread of levels between
commits (never collapsing on ties or two modes), the metric's resolution, the noise floor,
one-commit spikes, and winsorising so one slow run cannot fake a step."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from torchpulse.analysis.detector import distributions as dist

if TYPE_CHECKING:
    from torchpulse.analysis.detector.model import Point


MAD_TO_SD = 1.4826  # consistency factor of the median absolute deviation for normal data
SPIKE_SIGMAS = 4.0  # how far a lone commit must jump from both neighbours to be a spike
WINSOR_SIGMAS = 2.5  # levels further than this from their segment are pulled back to it
# a series whose runs lie beyond 3 noise deviations from their segment more often than
# this (normal noise: 0.27 %) has heavy tails: listing its change points, the mean of a
# segment of m commits is judged with the tails of Student's t with TAIL_DF * m degrees of
# freedom, what a couple of odd runs can do to a short mean (10 commits: t with 10)
HEAVY_SHARE = 0.01
TRIM = 0.1  # spread: the share of largest deviations a collapse-proof spread leaves out
TRIM_AT_LEAST = 2  # ... and at least this many (a step's difference, a spike's two)
COLLAPSE = 1.5  # spread: the median deviation has collapsed below this share of the RMS


@functools.lru_cache(maxsize=4096)
def _trim_factor(keep: int, total: int) -> float:
    """The consistency factor of a root mean square of normal deviations from which the
    largest ``total - keep`` of ``total`` were dropped (a truncated normal's variance)."""
    kept = keep / total
    if kept >= 1.0:
        return 1.0
    z = dist.norm_ppf((1.0 + kept) / 2.0)
    return 1.0 / math.sqrt(1.0 - 2.0 * z * dist.norm_pdf(z) / kept)


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


def residual_autocorrelation(levels: np.ndarray, bounds: Sequence[int]) -> float:
    """The lag-1 autocorrelation of the residuals around each segment's median (0.0 for
    fewer than 10 levels or none off their median): near 0 when the noise is white, near 1
    when it wanders (a random walk, a quote, AR(1) noise of a large phi)."""
    resid = _residuals(levels, bounds)
    power = float(np.dot(resid, resid))
    if len(resid) < 10 or power == 0.0:
        return 0.0
    return float(np.dot(resid[:-1], resid[1:])) / power


def wander(levels: np.ndarray) -> float:
    """How much the noise wanders, from successive differences alone: 1 + 2 x their lag-1
    autocorrelation (each difference pulled to within 3 spreads: a step is one large
    difference, not a wander), the phi of AR(1) noise -- 0 for white noise, 1 for a random
    walk or a quote; 0.0 for fewer than 10 levels."""
    if len(levels) < 10:
        return 0.0
    diffs = np.diff(levels)
    scale = spread(diffs)
    if scale == 0.0:
        return 0.0
    d = np.clip(diffs - np.median(diffs), -3.0 * scale, 3.0 * scale)
    power = float(np.dot(d, d))
    return 1.0 + 2.0 * float(np.dot(d[:-1], d[1:])) / power if power else 0.0


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
    x = np.asarray(levels, dtype=float)
    left, right = x[1:-1] - x[:-2], x[1:-1] - x[2:]  # every commit at once, as one by one
    spike = ((np.abs(left) > cut) & (np.abs(right) > cut) & (left * right > 0)
             & (np.abs(x[:-2] - x[2:]) < cut / 2))
    return [int(i) + 1 for i in np.flatnonzero(spike)]


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
