"""Series that wander like a random walk, and which of their moves are changes.

A host whose speed drifts over an afternoon, a quote held between small updates: the
series' level moves a little at many commits and never comes back, so segmenting it against
white noise cuts it at most of its moves (issue 51; experiments/diary/detection.md, "What
the quote and the walk allow"). For such a series a change is a move beyond what the
series' own moves allow, whose new level holds.

``wanders`` says whether a series is one (all estimated from its moves, the successive
differences of its levels):

* the moves' lag-1 autocorrelation is above RHO1 (and below RHO1_MAX: a ramp's moves
  follow each other) and their autocorrelations at lags 1-3, summed, above RHO3 and below
  RHO3_MAX (each move pulled to within 3 robust spreads first, so that one step's move
  does not decide them): white noise's moves and a step in it give -0.5 and about -0.5, a
  walk's or a quote's 0 and 0, AR(0.6)'s -0.2 and about -0.4 summed, AR(0.9)'s -0.05 and
  -0.14, a ramp of a few commits in white noise's 0.4-1.0 summed. Where most moves are zero
  (a quote), the bounds are SPARSE_RHO1 and SPARSE_RHO3 and the moves must not go back and
  forth (``_back_and_forth``); and, where they are not, the moves are not autocorrelated
  at any lag up to SEASON_LAGS (``_seasonal``: a monthly series' season persists from
  one month to the next like a walk, and its moves are white at lags 1-3);
* the levels persist: their lag-1 regression on their predecessors, with a trend and a
  level shift where it fits best (``persistence``, a Dickey-Fuller phi), is above
  PERSISTENCE. Over 100 commits it tells a walk (a median of 0.84) or AR(0.9) (0.79) from
  AR(0.6) (0.52, give or take 0.09), which the moves' correlations alone do not; the shift
  keeps one step in white or AR(0.6) noise, and the trend a drift, from reading as
  persistence. Where most moves are zero the regression is left to ``_stays_moved`` (a
  quote's moves add up, a toggle's come back);
* the moves take at least DISTINCT sizes: a counter or a noiseless ramp makes fewer;
* the series has LEAST_POINTS commits or more.

(changes.analyse asks one thing more of a series whose moves are not mostly zero: that
segmentation does not leave its residuals white or anti-correlated. A drift with a step in
white noise can pass the tests above; around its segments it is white.)

``changes`` lists the moves that are changes. The moves are taken about their median (a
drift's slope); a share p of them is non-zero (1 for a walk, the update rate for a quote),
those normal with the robust spread s of the non-zero ones. A move is a candidate when its
size passes c, set so that the largest of the n moves passes it with probability ALPHA when
nothing changed: 1 - (1 - 2 p Q(c / s))^n = ALPHA (experiments/moving_bounds.py is the
yardstick this follows); a move as large as the alert's threshold is always a candidate.
It is a change when the level it reaches holds: each of the HOLD commits from it differs
from the mean of the HOLD before it, the drift taken out, by more than half the move (and
c / 2), in the move's direction; a toggle's or a spike's move comes back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from torchpulse.analysis.detector import distributions as dist
from torchpulse.analysis.detector.noise import MAD_TO_SD

LAGS = 14  # how far apart a quote's levels are compared: two weeks of a weekly season
# fewer commits are never routed: a short ramp's moves or one large step then decide the
# persistence and the correlations (a 10-commit drift in 30 read as a walk)
LEAST_POINTS = 40
# 2.5 standard errors below a walk's 0 at 100 commits (0.1 for lag 1, 0.17 for the sum of
# lags 1-3): at 2 (-0.2, -0.35) one null walk in 17 failed one of them by chance (issue 51,
# 2026-11-29). AR(0.6)'s moves (-0.2 and about -0.4) pass more often; PERSISTENCE keeps them
RHO1 = -0.25
RHO3 = -0.45
RHO1_MAX = 0.4  # above: the moves themselves drift smoothly (a ramp), a walk's do not
RHO3_MAX = 0.4  # ... and their lag 1-3 sum: a ramp of a few commits in white noise
# over 100 commits (the moving family's generator, 400 series a kind): a walk's persistence
# is under it in 5.2 %, AR(0.9)'s in 16.5 %, AR(0.6)'s over it in 1.5 % (2.2 % with a step
# of 3 deviations). At 0.75 (until the season test kept seasons out): 16, 38, 0 and 0.5 %
PERSISTENCE = 0.7
# the moves' autocorrelations at lags 1..SEASON_LAGS (a quarter of the moves at most) are
# jointly zero by Ljung-Box at this level: a season is not a walk however its lags 1-3
# look. The annotated set's seasonal series give 1e-18 (road deaths) to 1e-230 (JFK's
# passengers), the least of 400 AR(0.9) series 3e-4 (at 0.001 one in 80 of the moving
# family's walks and AR(0.9) lost its routing), the USD-ISK rate 1e-3
SEASON_LAGS = 24
SEASON_ALPHA = 1e-6
SPARSE_RHO1 = -0.25  # ... when most moves are zero: a coarse timer's toggles give -0.5
SPARSE_RHO3 = -0.35
BACK_AND_FORTH = 0.01
STAYS = 2.0  # a quote updated at a fifth of commits: 0.96 / 0.2; a toggle's about 1
DISTINCT = 12
ALPHA = 0.01  # the chance that a series which only wanders gets a change
HOLD = 3  # commits a move's new level must hold, each of them, for it to be a change
LEAST_MOVES = 8  # fewer non-zero moves: no spread to judge them by
RAMP = LAGS  # the widest window an episode is looked for in, in commits


@dataclass(frozen=True)
class Move:
    """A change in a wandering series, on the analysis scale: ``index`` is the first point
    at the new level."""

    index: int
    before: float  # the mean of the HOLD levels before it
    after: float  # the mean of the HOLD levels from it
    pvalue: float  # of a move this large among the series' n moves
    stderr: float  # the spread of the series' own moves


def _mad(d: np.ndarray) -> float:
    """The median absolute deviation as a standard deviation (no fallback: a step straddled
    by fewer than half the differences does not move it)."""
    return float(MAD_TO_SD * np.median(np.abs(d - np.median(d))))


def _walk_like_moves(d: np.ndarray) -> bool:
    """The moves ``d`` are uncorrelated like a walk's and take enough distinct sizes."""
    scale = float(np.max(np.abs(d))) if len(d) else 0.0
    if len(d) < 8 or scale == 0.0 or len(np.unique(np.round(d / scale, 6))) < DISTINCT:
        return False
    centre, s = float(np.median(d)), _mad(d)
    rho1, rho3, rho3_max = RHO1, RHO3, RHO3_MAX
    quote = s == 0.0
    if quote:  # most moves the same (a quote's zeros): the spread of the others, and
        # bounds halfway to white noise's (a quote's few moves scatter its correlations)
        moved = d[d != centre] - centre
        if _back_and_forth(moved):
            return False
        s = _mad(moved) or float(np.max(np.abs(moved)))
        rho1, rho3, rho3_max = SPARSE_RHO1, SPARSE_RHO3, math.inf
    d = np.clip(d, centre - 3.0 * s, centre + 3.0 * s)
    d = d - np.mean(d)  # the clipped moves' mean: one large step does not shift it
    denominator = float(np.dot(d, d))
    if denominator == 0.0:
        return True
    rho = _autocorrelations(d, denominator, 3 if quote else max(3, _season_lags(len(d))))
    if not (rho1 < rho[0] < RHO1_MAX and rho3 < sum(rho[:3]) < rho3_max):
        return False
    return quote or not _seasonal(len(d), rho)


def _autocorrelations(d: np.ndarray, denominator: float, lags: int) -> list[float]:
    """The centred moves' autocorrelations at lags 1..``lags``."""
    return [float(np.dot(d[k:], d[:-k]) / denominator) for k in range(1, lags + 1)]


def _season_lags(n: int) -> int:
    return min(SEASON_LAGS, n // 4)  # a quarter of the moves at most


def _seasonal(n: int, rho: list[float]) -> bool:
    """The n moves are autocorrelated at some lag up to SEASON_LAGS (``rho``, from lag 1)
    by Ljung-Box's Q at SEASON_ALPHA: a series that comes back each season, whose
    neighbouring levels persist as a walk's do."""
    lags = _season_lags(n)
    if lags < 4:
        return False
    q = n * (n + 2) * sum(rho[k - 1] ** 2 / (n - k) for k in range(1, lags + 1))
    return float(dist.chi2_sf(q, lags)) < SEASON_ALPHA


def _back_and_forth(moved: np.ndarray) -> bool:
    """The non-zero moves (but those under half their median size: a run's jitter) change
    direction more often than a walk's (half the time) would with probability
    BACK_AND_FORTH: a coarse timer or a counter toggling between values."""
    moved = moved[np.abs(moved) >= np.median(np.abs(moved)) / 2.0]  # not a run's jitter
    if len(moved) < 2:
        return False
    turns = int(np.sum(np.sign(moved[1:]) != np.sign(moved[:-1])))
    return dist.binom_sf_half(turns - 1, len(moved) - 1) < BACK_AND_FORTH


def _stays_moved(x: np.ndarray) -> bool:
    """For a series that holds at most commits: the share of commits LAGS apart at
    different levels is at least STAYS times the share of neighbours that are (a quote's
    moves add up; a toggling counter's or a coarse timer's come back). Differences under
    half the median move are a run's jitter, not a move; the pairs one step sets apart are
    not counted as moved."""
    d = np.abs(np.diff(x))
    if len(x) <= LAGS or not np.any(d > 0.0):
        return False
    jitter = float(np.median(d[d > 0.0])) / 2.0
    apart = float(np.mean(np.abs(x[LAGS:] - x[:-LAGS]) > jitter))
    straddling = LAGS / (len(x) - LAGS)  # the pairs one step would set apart
    return apart - straddling >= STAYS * float(np.mean(d > jitter))


def wanders(levels: np.ndarray) -> bool:
    """Whether the series (levels on the analysis scale, oldest first) moves like a random
    walk: its changes are then told by ``changes``, not by segmentation. Where most moves
    are zero (a quote) _stays_moved stands in for the persistence."""
    x = np.asarray(levels, dtype=float)
    if len(x) < LEAST_POINTS:
        return False
    if not _walk_like_moves(np.diff(x)):  # the cheapest test first: most series fail it
        return False
    wander = _stays_moved(x) if sparse(x) else persistence(x) > PERSISTENCE
    return wander and not _ramps(x)


def _ramps(x: np.ndarray) -> bool:
    """The series rises or falls over 2..RAMP commits by more than its own moves allow: an
    episode (a drift of a few commits, a crash) that a walk does not make, which
    segmentation and the drift grouping read, not this test. A window's moves are summed,
    the drift taken out, and either its largest move in the sum's direction left out or
    the moves that are changes (a step is one move, a ramp many); what is left has
    variance (1 + p (k - 1)) s^2 under the walk for k moves (one of them given: a quote's
    window holds an update far more often than its share p makes it look). It is a ramp
    beyond the Bonferroni bound over both sums of every window at ALPHA."""
    dev, s, share = _moves(np.diff(x))
    widths = range(2, min(RAMP, len(dev)) + 1)
    if s == 0.0 or not len(widths):
        return False
    crit = float(dist.norm_isf(ALPHA / (4.0 * len(dev) * len(widths))))
    unchanged = dev.copy()
    unchanged[[m.index - 1 for m in changes(x)]] = 0.0
    for m in widths:
        windows = np.lib.stride_tricks.sliding_window_view(dev, m)
        sums = windows.sum(axis=1)
        largest = np.where(sums >= 0.0, windows.max(axis=1), windows.min(axis=1))
        if float(np.max(np.abs(sums - largest))) > crit * s * math.sqrt(1.0 + share * (m - 2)):
            return True
        sums = np.lib.stride_tricks.sliding_window_view(unchanged, m).sum(axis=1)
        if float(np.max(np.abs(sums))) > crit * s * math.sqrt(1.0 + share * (m - 1)):
            return True
    return False


def persistence(levels: np.ndarray) -> float:
    """The levels' lag-1 regression coefficient on their predecessors (a Dickey-Fuller
    phi), with a linear trend and a level shift where it fits best (a step and its pulse
    as regressors, at any commit but the first and last two): near 1 for a walk, phi for
    AR(1) noise, with a step in it or not, near 0 for white noise along a drift. Without
    the shift a step reads as persistence (AR(0.3) noise with a step of 5 deviations: 0.87
    in the median, the moving family on seed 17); with the shift at the largest move
    instead, a step smeared over a few commits of AR(0.6) noise did; without the trend, a
    drift over the whole history with a step in it did."""
    x = np.asarray(levels, dtype=float)
    x = x - x.mean()  # the constant is in the design; centring keeps it well conditioned
    n = len(x) - 1
    if n < 8:
        return 0.0
    y, z = x[1:], x[:-1]
    trend = (np.arange(n) - (n - 1) / 2.0) / n
    base = np.stack([np.ones(n), z, trend])  # the regressors every fit shares
    # the fits for every place of the shift at once, from suffix sums (memory in n, not n^2:
    # a history of thousands of commits): regressors 1, z, trend, step (from i on), pulse (at i)
    places = np.arange(2, n - 2)  # the shift's first point in y: commits 3 .. n - 2 of x
    suffix = np.cumsum(np.concatenate([base, y[None, :]])[:, ::-1], axis=1)[:, ::-1]
    after = suffix[:, places]  # sums over the points from each place on: 1, z, trend, y
    k = len(places)
    gram = np.empty((k, 5, 5))
    gram[:, :3, :3] = base @ base.T
    gram[:, :3, 3] = gram[:, 3, :3] = after[:3].T
    gram[:, :3, 4] = gram[:, 4, :3] = base[:, places].T
    gram[:, 3, 3] = after[0]
    gram[:, 3, 4] = gram[:, 4, 3] = gram[:, 4, 4] = 1.0
    moment = np.empty((k, 5))
    moment[:, :3] = base @ y
    moment[:, 3] = after[3]
    moment[:, 4] = y[places]
    # a pseudo-inverse: a design can be singular (a constant series, a noiseless step)
    beta = np.einsum("kij,kj->ki", np.linalg.pinv(gram), moment)
    rss = float(np.dot(y, y)) - np.einsum("ki,ki->k", beta, moment)
    return float(beta[int(np.argmin(rss)), 1])


def sparse(levels: np.ndarray) -> bool:
    """Most of the series' moves are zero (a quote held between updates)."""
    return len(levels) > 1 and _mad(np.diff(np.asarray(levels, dtype=float))) == 0.0


def beyond(levels: np.ndarray, start: int, end: int) -> bool:
    """The rise or fall from ``start`` to ``end`` (a drift the drift grouping found) is more
    than the wandering series' own moves make over that many commits, beyond the
    Bonferroni bound over every start and end at ALPHA (the drift grouping picked the span
    where the walk went furthest): a drift in the walk, not the walk. The series' own slope
    is the median move outside the span (the span's would hide it)."""
    x = np.asarray(levels, dtype=float)
    d = np.diff(x)
    dev, s, share = _moves(d)
    m = end - start
    elsewhere = np.concatenate([d[:start], d[end:]])
    if s == 0.0 or m <= 0 or len(elsewhere) < LEAST_MOVES:
        return True
    rise = float(x[end] - x[start]) - float(np.median(elsewhere)) * m
    crit = float(dist.norm_isf(ALPHA / (len(d) * len(d))))
    return abs(rise) > crit * s * math.sqrt(m * share)


def _moves(d: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The moves about their median (a drift's slope), the robust spread s of the non-zero
    ones (0: fewer than LEAST_MOVES, or all the same) and the share p that is non-zero."""
    dev = d - float(np.median(d)) if len(d) else d
    moved = dev[dev != 0.0]
    s = _mad(moved) if len(moved) >= LEAST_MOVES else 0.0
    return dev, s, len(moved) / len(d) if len(d) else 0.0


def changes(levels: np.ndarray, least: float = math.inf) -> list[Move]:
    """The moves of a wandering series that are changes, oldest first: each with at least
    one commit before and after it (up to HOLD of each are compared). A move of ``least``
    or more (the threshold worth an alert, on the analysis scale) is a candidate however
    large the series' own moves are: a wander does not hide a step the user asked for."""
    x = np.asarray(levels, dtype=float)
    d = np.diff(x)
    if len(d) == 0:
        return []
    slope = float(np.median(d))
    dev, s, share = _moves(d)
    n = len(d)
    if s == 0.0:  # all the same but a few moves: those few are the candidates
        candidates, c = np.flatnonzero(dev), 0.0
    else:
        tail = (1.0 - (1.0 - ALPHA) ** (1.0 / n)) / (2.0 * share)
        c = min(s * float(dist.norm_isf(min(tail, 0.5))), least)
        candidates = np.flatnonzero(np.abs(dev) >= c)
    found = []
    for j in candidates:
        i = int(j) + 1  # the commit the move arrives at
        after, before = x[i:i + HOLD], x[max(i - HOLD, 0):i]
        drifted = slope * (len(before) + len(after)) / 2.0
        # each commit after, not only their mean: a flip-flop's mean holds half the move
        held = np.sign(dev[j]) * (after - before.mean() - drifted)
        if held.min() <= max(c / 2.0, abs(dev[j]) / 2.0):
            continue  # the level comes back: a toggle or a spike
        if s == 0.0:
            p = 0.0
        else:
            tail = min(2.0 * share * float(dist.norm_sf(abs(dev[j]) / s)), 1.0)
            p = -math.expm1(n * math.log1p(-tail)) if tail < 1.0 else 1.0
        found.append(Move(i, float(before.mean()), float(after.mean()), p, s))
    return found
