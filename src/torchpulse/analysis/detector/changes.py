"""The change-point analysis of one series, as a sequence of named steps: its levels on the
analysis scale (``_scaled``), spikes set aside and segmented (``_segmented``), the segments
regrouped into levels and drifts (drift.pieces), the change points listed
(``_change_points``), the noise and what a step must be to be seen (``_noise``), the
regression active at the newest commit (detector.active), and, for a series that wanders
like a random walk, its moves instead (``_wandering``, detector.walk). The model behind it:
the package's docstring (torchpulse.analysis.detector)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from torchpulse.analysis.defaults import DEFAULT_NOISE_FLOOR
from torchpulse.analysis.detector import active, curves, drift, walk
from torchpulse.analysis.detector.active import to_units
from torchpulse.analysis.detector.drift import Piece
from torchpulse.analysis.detector.model import (
    ChangePoint,
    Drift,
    Noise,
    Point,
    Regression,
    SeriesVerdict,
)
from torchpulse.analysis.detector.noise import (
    WINSOR_SIGMAS,
    diff_sd,
    find_spikes,
    heavy_tailed,
    residual_autocorrelation,
    residual_sd,
    run_levels,
    wander,
    winsorise_running,
    winsorise_segments,
)
from torchpulse.analysis.detector.noise import noise_floor as least_noise
from torchpulse.analysis.detector.significance import (
    MDE_COMMITS_AFTER,
    POWER_Z,
    Tester,
    commits_to_reach,
    critical_z,
    max_split_pvalue,
    mde_factor,
    segment,
)

MIN_POINTS = 5  # fewer commits tell nothing about between-run noise; such series get no alert
# a change point is listed once this many commits hold the new level (and the old one, at the
# start of a history): the commits after a step that the smallest detectable step assumes
HELD = MDE_COMMITS_AFTER
# residuals around the segments whose lag-1 autocorrelation exceeds this many of its
# standard errors under white noise (1 / sqrt(n)) are not white: the noise wanders, and a
# mean of m of its commits varies (1 + rho) / (1 - rho) times more than white noise's.
# 2 standard errors, not 2.5: segmentation at the white noise's spread cuts some of the
# wander away and leaves AR(0.3)'s residuals at 0.1-0.2 over 100 commits
# (experiments/diary/detection.md)
RHO_SIGMAS = 2.0
RHO_MAX = 0.95
# ... and only where the successive differences say the noise wanders (noise.wander, whose
# estimate of phi has a standard error of 0.14 over 100 commits): an undetected step leaves
# correlated residuals too, but one large difference, not a wander
WANDER_MIN = 0.1
# a series whose moves look like a walk's is read as one when its residuals around the
# segments are correlated beyond this many standard errors of white noise where the pieces
# hold a drift, and WALK_RHO_SIGMAS_LEVELS where they hold levels only: a walk's are by 7.5
# in the median (2 of 166 null walks of the moving family under 0.5, 11 under 2), a drift's
# in white noise over part of 40-100 commits by under 1.4, one by 1.6, of those that pass
# walk.wanders (tests/analysis/test_walk.py). At 2, a walk cut into lines and levels often
# kept only 1.5-2 (34 of 300 null walks; at 1.7: 20, experiments/walk_routing.py)
WALK_RHO_SIGMAS = 1.7
WALK_RHO_SIGMAS_LEVELS = 0.5


@dataclass(frozen=True)
class _Scaled:
    """A series' levels on its analysis scale, and what bounds its noise."""

    levels: np.ndarray  # every point's level (log scale, or linear)
    linear: bool  # the series has zeros: analysed on a linear scale
    ref: float  # what relative quantities are fractions of (1.0 on the log scale)
    within_cv: float | None  # the typical spread inside one run
    floor: float  # the least noise the series can have (noise_floor)
    sigma0: float  # the first noise estimate: successive differences, never below the floor
    exact: bool  # the levels never move but for steps (a deterministic metric)


@dataclass(frozen=True)
class _Segmented:
    """The series without its spikes, segmented, with its noise."""

    keep: np.ndarray  # the points kept (spikes set aside): their indices in the series
    spikes: list[int]
    raw: np.ndarray  # the kept points' levels
    levels: np.ndarray  # ... each pulled to within WINSOR_SIGMAS of its segment
    bounds: list[int]  # where the segments start (indices into ``levels``)
    sigma: float  # the noise, once the segments are known
    tester: Tester
    heavy: bool  # more runs far from their segment than normal noise makes


def analyse(points: Sequence[Point], alpha: float = 0.01, threshold: float = 0.05,
            noise_floor: float = DEFAULT_NOISE_FLOOR) -> SeriesVerdict:
    """Detect the change points of one series (points oldest first) and decide whether a
    regression is active at the newest point. ``noise_floor``: the least relative noise any
    series is taken to have (see noise.noise_floor)."""
    scaled = _scaled(points, noise_floor)
    if len(points) < MIN_POINTS:  # too few runs to know the between-run noise: no verdict
        noise = Noise(_relative(scaled.sigma0, scaled.ref),
                      scaled.within_cv and _relative(scaled.within_cv, scaled.ref),
                      math.inf, False)
        return SeriesVerdict((), (), (), noise, scaled.linear)
    fit = _segmented(scaled, alpha)
    parts = drift.pieces(fit.levels, fit.bounds, fit.sigma if scaled.sigma0 > 0 else 0.0)
    changes, jumps = _change_points(scaled, fit, parts, alpha)
    edges = [q.start for q in parts] + [len(fit.levels)]
    lines = [q.line for q in parts]
    # a drift's level: its middle, or, for the newest piece, where it has got to
    means = [(q.first + q.last) / 2.0 if q.line else q.first for q in parts]
    if parts[-1].line:
        means[-1] = parts[-1].last
    noise, baseline, toggle = _noise(scaled, fit, parts, means, edges, lines, alpha,
                                     threshold)
    regression = None
    if toggle is None:
        # an unstable series alerts only on a step that clearly exceeds its noise: one the
        # test finds with 80 % power given its own commits before and after, not merely a
        # significant one (z >= z_alpha + 0.84 instead of z >= z_alpha)
        clear = critical_z(len(fit.levels), alpha) + POWER_Z if noise.unstable else None
        regression = active.regression(fit.tester, parts, means, jumps, fit.keep, baseline,
                                       threshold, clear, scaled.linear,
                                       exact=scaled.sigma0 == 0)
    drifts = _drifts(scaled, fit, parts)
    if _wandering(scaled, fit, parts):
        # a random walk's wander is neither change points nor drifts: its changes are the
        # moves beyond its own, its drifts those steeper than it, and a rise is a
        # regression only through one of them
        moves = walk.changes(scaled.levels, least=math.log1p(threshold))
        changes = _listed(moves, len(points))
        since = int(fit.keep[parts[baseline].start]) if baseline is not None else 0
        drifts = tuple(d for d in drifts if walk.beyond(scaled.levels, d.start, d.end))
        regression = _through_moves(regression, moves, drifts, since)
    elif not scaled.exact:  # a staircase along a smooth curve is one drift (detector.curves)
        changes, drifts, regression = curves.merge(fit.keep, fit.raw, changes, drifts,
                                                   regression, to_units(scaled.linear))
    return SeriesVerdict(tuple(changes), (regression,) if regression else (),
                         tuple(int(i) for i in fit.spikes), noise, scaled.linear, drifts)


def _wandering(scaled: _Scaled, fit: _Segmented, parts: Sequence[Piece]) -> bool:
    """The series moves like a random walk (walk.wanders), and, unless most of its moves
    are zero, segmentation leaves its residuals correlated: beyond WALK_RHO_SIGMAS standard
    errors of white noise where the pieces hold a drift (a drift of a few commits in white
    noise lifts its moves for a while, enough to pass for a walk's, but around its segments
    it is white), beyond WALK_RHO_SIGMAS_LEVELS where they hold levels only."""
    if scaled.exact or scaled.linear or not walk.wanders(scaled.levels):
        return False
    sigmas = WALK_RHO_SIGMAS if any(q.line for q in parts) else WALK_RHO_SIGMAS_LEVELS
    return walk.sparse(scaled.levels) or residual_autocorrelation(
        fit.levels, fit.bounds) > sigmas / math.sqrt(len(fit.levels))


def _listed(moves: Sequence[walk.Move], n: int) -> list[ChangePoint]:
    """A wandering series' changes as change points, once HELD commits hold each level
    (as segmentation's are listed)."""
    return [ChangePoint(m.index, math.exp(m.before), math.exp(m.after), m.pvalue, m.stderr)
            for m in moves if m.index >= HELD and n - m.index >= HELD]


def _through_moves(regression: Regression | None, moves: Sequence[walk.Move],
                   drifts: Sequence[Drift], since: int) -> Regression | None:
    """The active regression of a wandering series: the detector's, when a move up since
    its baseline's start is a change, or one of its drifts up is steeper than the walk
    (those are its culprits); else None, the rise being the walk's own."""
    if regression is None:
        return None
    rising = tuple((d.start, d.end) for d in drifts
                   if (d.start, d.end) in regression.drifts)
    ups = sorted({m.index for m in moves if m.after > m.before and m.index > since}
                 | {start for start, _ in rising})
    if not ups:
        return None
    return replace(regression, index=ups[0], culprits=tuple(ups), drifts=rising)


def _scaled(points: Sequence[Point], relative_floor: float) -> _Scaled:
    """The points' levels, the scale they are analysed on, and the noise's first bounds."""
    linear = any(p.value <= 0 for p in points)  # a zero has no logarithm: failure rates
    levels, spreads, measured = run_levels(points, linear)
    within = spreads[~np.isnan(spreads)]
    within_cv = float(np.median(within)) if len(within) else None
    # relative quantities of a linear series are fractions of its typical level
    ref = float(np.median(np.abs(levels))) if linear and len(points) else 1.0
    floor = least_noise(points, linear, ref, within_cv, relative_floor, measured)
    # exact: the levels never move but for steps (a deterministic metric); every move is real
    between = diff_sd(levels)
    return _Scaled(levels, linear, ref, within_cv, floor, max(between, floor), between == 0.0)


def _segmented(scaled: _Scaled, alpha: float) -> _Segmented:
    """One-commit spikes set aside, the rest segmented at ``alpha``, the noise and the
    robust levels refined twice once the segments are known."""
    sigma0 = scaled.sigma0
    spikes = find_spikes(scaled.levels, sigma0)
    keep = np.setdiff1d(np.arange(len(scaled.levels)), spikes)
    raw = scaled.levels[keep]
    levels = raw
    n = len(levels)
    bounds: list[int] = []
    sigma = sigma0
    if n >= 3 and sigma0 > 0:
        levels = winsorise_running(raw, WINSOR_SIGMAS * sigma0)
        for _ in range(2):  # refine noise and robust levels once the segments are known
            bounds = segment(Tester(levels, sigma, n - 1), alpha)
            sigma = max(residual_sd(raw, bounds), scaled.floor, 1e-12)
            levels = winsorise_segments(raw, bounds, WINSOR_SIGMAS * sigma)
        tester = Tester(levels, sigma, n - len(bounds) - 1)
        bounds = segment(tester, alpha)
        tester, bounds, sigma = _decorrelated(scaled, raw, levels, tester, bounds, alpha)
    elif n >= 2 and sigma0 == 0 and np.ptp(levels) > 0:  # noiseless: every move is real
        bounds = [i for i in range(1, n) if levels[i] != levels[i - 1]]
        tester = Tester(levels, 1e-12, 1)
    else:
        tester = Tester(levels, max(sigma, 1e-12), max(n - 1, 1))
    heavy = not scaled.exact and heavy_tailed(raw, bounds, sigma)
    return _Segmented(keep, spikes, raw, levels, bounds, sigma, tester, heavy)


def _decorrelated(scaled: _Scaled, raw: np.ndarray, levels: np.ndarray, tester: Tester,
                  bounds: list[int], alpha: float) -> tuple[Tester, list[int], float]:
    """Autocorrelated noise widens the noise instead of drawing change points: while the
    residuals around the segments are correlated beyond what white noise shows, the noise
    is the residuals' spread times sqrt((1 + rho) / (1 - rho)) and the series is segmented
    again with it (fewer segments leave more of the wander in the residuals)."""
    n = len(levels)
    if wander(levels) <= WANDER_MIN:
        return tester, bounds, tester.sigma
    for _ in range(4):
        rho = residual_autocorrelation(levels, bounds)
        if rho <= RHO_SIGMAS / math.sqrt(n):
            break
        rho = min(rho, RHO_MAX)
        # the residuals' spread widened, then floored: the floor is no wander to widen (a
        # count creeping by 0.003 % had its 0.1 % floor widened to 0.38 %, and a 1 % step
        # was no longer clear of it)
        wider = max(residual_sd(raw, bounds) * math.sqrt((1.0 + rho) / (1.0 - rho)),
                    scaled.floor, 1e-12)
        if wider <= tester.sigma * 1.001:
            break
        tester = Tester(levels, wider, n - len(bounds) - 1)
        bounds = segment(tester, alpha)
    return tester, bounds, tester.sigma


def _change_points(scaled: _Scaled, fit: _Segmented, parts: Sequence[Piece],
                   alpha: float) -> tuple[list[ChangePoint], set[int]]:
    """The change points between the pieces, and where a change starts a piece (``jumps``:
    a change point, or one too near either end of the history to list yet)."""
    back, n, sigma = to_units(scaled.linear), len(fit.levels), fit.sigma
    changes = []
    jumps: set[int] = set()
    for j, (left, right) in enumerate(zip(parts[:-1], parts[1:], strict=True)):
        if not (left.line or right.line):
            short = j if left.stop - left.start < right.stop - right.start else j + 1
            p, se = fit.tester.pvalue(left.start, right.start, right.stop,
                                      tails=fit.heavy and _excursion(parts, short))
            if p > alpha and not scaled.exact:
                continue  # a short excursion a few heavy-tailed runs could make
            if scaled.sigma0 == 0:
                p, se = 0.0, 0.0
        else:  # next to a drift: a change point only where the fitted level jumps
            se = sigma * math.sqrt(left.variance[1] + right.variance[0])
            p = max_split_pvalue(drift.jump(fit.levels, left, right) / sigma,
                                 right.stop - left.start)
            if p > alpha:
                continue
        jumps.add(right.start)
        if not scaled.exact and ((left.start == 0 and left.stop < HELD)
                                 or (right.stop == n and n - right.start < HELD)):
            # a level held by fewer than HELD commits at either end of a noisy history: a
            # change and one or two odd runs look alike there. Not a change point (yet); at
            # the newest commits the active alert still sees it, and a step resting on one
            # run is measured again
            continue
        changes.append(ChangePoint(int(fit.keep[right.start]), back(left.last),
                                   back(right.first), p, se))
    return changes, jumps


def _drifts(scaled: _Scaled, fit: _Segmented, parts: Sequence[Piece]) -> tuple[Drift, ...]:
    """The pieces that are lines, each a Drift over its commits."""
    back, n = to_units(scaled.linear), len(fit.levels)
    return tuple(Drift(int(fit.keep[q.start]), int(fit.keep[q.stop - 1]), back(q.first),
                       back(q.last), max_split_pvalue(abs(q.last - q.first)
                                                      / (fit.sigma * q.rise_se), n))
                 for q in parts if q.line)


def _noise(scaled: _Scaled, fit: _Segmented, parts: Sequence[Piece], means: list[float],
           edges: list[int], lines: list[bool], alpha: float, threshold: float
           ) -> tuple[Noise, int | None, float | None]:
    """The series' noise (its smallest detectable step, whether it toggles, from how many
    commits a threshold-size step would show), the piece a rise at the newest commit is
    measured from, and the size of a toggle (None: it does not toggle)."""
    linear, ref, sigma, n = scaled.linear, scaled.ref, fit.sigma, len(fit.levels)
    mde = math.inf
    if n > MDE_COMMITS_AFTER:
        mde_scale = mde_factor(n, alpha) * sigma  # on the analysis scale
        mde = _relative(mde_scale, ref) if linear else math.expm1(mde_scale)
    last = len(means) - 1
    baseline = active.baseline_of(means, edges, last, lines) if last >= 1 else None
    if baseline is None and parts[-1].line and parts[-1].last > parts[-1].first:
        baseline = last  # drifting up since its own start, from no lower stable level
    toggle = None
    if baseline is not None and baseline < last and last >= 2:
        worth = threshold * abs(means[baseline]) if linear else math.log1p(threshold)
        toggle = active.toggle_amplitude(means, baseline, worth)
    if toggle is not None:
        mde = max(mde, _relative(toggle, ref) if linear else math.expm1(toggle))
    unstable = mde > threshold or toggle is not None
    reach = None
    if unstable and toggle is None:
        limit = threshold * ref if linear else math.log1p(threshold)
        reach = commits_to_reach(sigma, n, alpha, limit)
        reach = reach + len(fit.spikes) if reach is not None else None
    noise = Noise(cv=_relative(sigma, ref),
                  within_cv=scaled.within_cv and _relative(scaled.within_cv, ref),
                  mde=mde, unstable=unstable, toggling=toggle is not None, reach=reach)
    return noise, baseline, toggle




def _excursion(parts: Sequence[Piece], j: int) -> bool:
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
