# An experiment, not product (run from a checkout with .venv); its results: the closing note
# of issue 51 and experiments/diary/detection.md when it is taken further.
"""A level-shift test under a local-level model (a random walk plus white noise), tried on
the families of evaluate-detection in process, next to the production detector.

The moving family's quote and walk are random walks, and the production detector reads
their wander as change points (85-99 % of null series get one). A local-level model
estimates both parts of the movement from the data: successive differences have variance
2 e + w and differences two apart 2 e + 2 w (e: white noise, w: the walk's increment), so
w = v2 - v1 and e = (2 v1 - v2) / 2, each from a collapse-proof spread (noise.spread). A
shift at commit i is the difference of the means of the WINDOW commits after and before
it, whose variance under the model is 2 e / m + w (2 m^2 + 1) / (3 m); a change point is a
local maximum of that z beyond the Bonferroni bound over n / m windows at ALPHA.

Which series the hybrid hands to the test is decided by the walk's share of the successive
differences' variance: ROUTE "two" from the spreads of differences one and two apart, ROUTE
"multi" (the default) from a least-squares fit of the squared median deviations of the
differences 1..LAGS apart, which a step or a season does not make grow. What decides a
routed series: TEST "moves" (the default; move_changes, a test on the largest moves) or
"windows" (local_level_changes, the window means above). With MOVES_ROUTE (the default) a
series is routed when its share passes MOVES_SHARE, its moves' lag-1 autocorrelation
MOVES_RHO, their autocorrelations at lags 1-3 summed MOVES_RHO3, and its moves take
MOVES_DISTINCT sizes or more (experiments/diary/detection.md).

Run: .venv/bin/python experiments/local_level.py [SEED] [PER_CELL]
     .venv/bin/python experiments/local_level.py shares [SEED]   (each kind's routing share)
"""

import math
import sys
import time
from collections import defaultdict

import numpy as np
from scipy.stats import norm

from torchpulse.analysis.detector import Point, analyse
from torchpulse.analysis.detector.noise import spread
from torchpulse.evaluation import moving, shapes, synthetic

WINDOW = 5
ALPHA = 0.01
WALK_SHARE = 0.5  # above it, the local-level test decides (the hybrid column)
ROUTE = "multi"  # how the share is estimated: "multi" (walk_and_white) or "two" (v1, v2)


def walk_share(values: list[float]) -> float:
    """The walk's share of the successive differences' variance, w / v1: 0 for white noise,
    near 1 for a random walk or a quote."""
    x = np.log(np.asarray(values, dtype=float))
    if len(x) < 4:
        return 0.0
    v1 = spread(np.diff(x)) ** 2
    v2 = spread(x[2:] - x[:-2]) ** 2
    return 0.0 if v1 == 0.0 else max(v2 - v1, 0.0) / v1


LAGS = 14  # the lags the multi-lag fit reads: two weeks of a weekly season


def walk_and_white(x: np.ndarray) -> tuple[float, float]:
    """(w, e) of the local-level model from the robust spreads of differences 1..LAGS apart,
    s_k^2 = 2 e + k w, by least squares over k: a step straddled by a few differences of
    each lag does not move a robust spread, and a season makes s_k oscillate, not grow."""
    lags = [k for k in range(1, LAGS + 1) if len(x) - k >= 8]
    if len(lags) < 3:
        v1 = spread(np.diff(x)) ** 2
        return 0.0, v1 / 2.0
    s2 = np.array([_mad(x[k:] - x[:-k]) ** 2 for k in lags])
    design = np.stack([np.ones(len(lags)), np.asarray(lags, dtype=float)], axis=1)
    (intercept, slope), *_ = np.linalg.lstsq(design, s2, rcond=None)
    return max(float(slope), 0.0), max(float(intercept) / 2.0, 0.0)


def _mad(d: np.ndarray) -> float:
    """The median absolute deviation as a standard deviation: a step straddled by fewer
    than half the differences of a lag does not move it (noise.spread falls back to a
    trimmed root mean square on two modes, which a step's differences make)."""
    return float(1.4826 * np.median(np.abs(d - np.median(d))))


def walk_share_multi(values: list[float]) -> float:
    """w / (2 e + w): the walk's share of the successive differences' variance, from the
    multi-lag fit."""
    x = np.log(np.asarray(values, dtype=float))
    if len(x) < 12:
        return 0.0
    w, e = walk_and_white(x)
    return 0.0 if w + 2 * e == 0.0 else w / (w + 2 * e)


def local_level_changes(values: list[float]) -> list[int]:
    """Indices (into ``values``) where the level shifts beyond the model's wander."""
    x = np.log(np.asarray(values, dtype=float))
    n = len(x)
    if n < 2 * WINDOW + 1:
        return []
    v1 = spread(np.diff(x)) ** 2
    v2 = spread(x[2:] - x[:-2]) ** 2
    if v1 == 0.0:  # exact: every move is a change point
        return [i for i in range(1, n) if x[i] != x[i - 1]]
    walk = max(v2 - v1, 0.0)
    white = max((2.0 * v1 - v2) / 2.0, 0.0)
    m = WINDOW
    var = 2.0 * white / m + walk * (2 * m * m + 1) / (3 * m)
    var = max(var, v1 / m)  # never below what the differences alone say
    cums = np.concatenate([[0.0], np.cumsum(x)])
    idx = np.arange(m, n - m + 1)
    after = (cums[idx + m] - cums[idx]) / m
    before = (cums[idx] - cums[idx - m]) / m
    z = np.abs(after - before) / math.sqrt(var)
    crit = norm.isf(ALPHA / (2.0 * max(n / m, 1.0)))
    found: list[int] = []
    for j in np.argsort(-z):
        if z[j] < crit:
            break
        i = int(idx[j])
        if all(abs(i - f) >= m for f in found):
            found.append(i)
    return sorted(found)


TEST = "moves"  # what decides a routed series: "moves" (move_changes) or "windows" (above)
HOLD = 3  # commits a move's new level must hold, on average, for it to be a change


def move_changes(values: list[float]) -> list[int]:
    """Indices where the move from the commit before is beyond what the series' own moves
    allow and the level it reaches holds. The moves are taken about their median (a drift's
    slope); a share p of them is non-zero (1 for a walk, the update rate for a quote), those
    normal with the robust spread s of the non-zero ones. A move is a candidate when its
    size passes c, c such that the largest of the n moves passes it with probability ALPHA
    when nothing changed: 1 - (1 - 2 p Q(c / s))^n = ALPHA (experiments/moving_bounds.py:
    the yardstick this test follows); it is a change when the means of the HOLD commits
    from it and the HOLD before it, the drift taken out, differ by more than half the move
    (and c / 2): a toggle's or a spike's move comes back. Moves that are all the same but
    a few (an exact series, a noiseless drift): those few, if their level holds."""
    x = np.log(np.asarray(values, dtype=float))
    d = np.diff(x)
    dev = d - np.median(d)
    moved = dev[dev != 0.0]
    s = _mad(moved) if len(moved) >= 8 else 0.0
    if s == 0.0:  # exact: every move off the common one is a candidate
        candidates, c = np.flatnonzero(dev), 0.0
    else:
        p = len(moved) / len(d)
        tail = (1.0 - (1.0 - ALPHA) ** (1.0 / len(d))) / (2.0 * p)
        c = s * norm.isf(min(tail, 0.5))
        candidates = np.flatnonzero(np.abs(dev) > c)
    found = []
    for j in candidates:
        i = int(j) + 1  # the commit the move arrives at
        after, before = x[i:i + HOLD], x[max(i - HOLD, 0):i]
        slope = np.median(d) * (len(before) + len(after)) / 2.0  # the drift between them
        if abs(after.mean() - before.mean() - slope) > max(c / 2.0, abs(dev[j]) / 2.0):
            found.append(i)
    return found


MOVES_ROUTE = True  # route by the moves' autocorrelations too (and a lower share)
MOVES_SHARE = 0.2
MOVES_RHO = -0.15  # white noise's moves: -0.5; a walk's, a quote's: 0; AR(0.9)'s: -0.05
MOVES_RHO3 = -0.25  # the moves' autocorrelations at lags 1-3, summed: a walk's 0, AR(0.6)'s -0.4
MOVES_DISTINCT = 12  # fewer distinct moves: a counter or a noiseless ramp, not a walk


def walk_like_moves(values: list[float]) -> bool:
    """Whether the moves look like a walk's (MOVES_RHO, MOVES_RHO3, MOVES_DISTINCT): their
    autocorrelations at lags 1-3, each move pulled to within 3 robust spreads of their
    median first (one step's move does not decide them), and how many different sizes they
    take (to a millionth of the largest)."""
    d = np.diff(np.log(np.asarray(values, dtype=float)))
    scale = float(np.max(np.abs(d))) if len(d) else 0.0
    if len(d) < 8 or scale == 0.0 or len(np.unique(np.round(d / scale, 6))) < MOVES_DISTINCT:
        return False
    centre, s = np.median(d), _mad(d)
    if s == 0.0:  # most moves the same (a quote's zeros): read as uncorrelated
        return True
    d = np.clip(d, centre - 3 * s, centre + 3 * s) - np.mean(d)
    denominator = float(np.dot(d, d))
    if denominator == 0.0:
        return True
    rho = [float(np.dot(d[k:], d[:-k]) / denominator) for k in (1, 2, 3)]
    return rho[0] > MOVES_RHO and sum(rho) > MOVES_RHO3


def score(rows, name, truths, draw):
    for t in truths:
        values, _ = draw(t)
        kept = [(i, v) for i, v in enumerate(values) if v is not None]
        where = [i for i, _ in kept]
        series = [v for _, v in kept]
        theirs = [where[c.index] for c in analyse(
            [Point(f"c{i}", v) for i, v in enumerate(series)]).change_points]
        # the hybrid: the routed test where the walk dominates, the detector elsewhere
        share = (walk_share_multi(series) if ROUTE == "multi" else walk_share(series))
        routed = move_changes if TEST == "moves" else local_level_changes
        sent = (share > WALK_SHARE if not MOVES_ROUTE
                else share > MOVES_SHARE and walk_like_moves(series))
        ours = [where[i] for i in routed(series)] if sent else theirs
        kind = getattr(t, "shape", getattr(t, "kind", "?"))
        change = getattr(t, "change", "step" if kind == "step" else "none")
        size = round(t.size, 3) if change == "step" else 0.0
        row = rows[(name, kind, change, size)]
        row[0] += 1
        for k, found in ((1, ours), (3, theirs)):
            row[k] += bool(found)
            row[k + 1] += change == "step" and any(abs(c - t.at) <= 3 for c in found)


def main(seed: int, per: int) -> None:
    started = time.time()
    rng = np.random.default_rng(seed)
    rows = defaultdict(lambda: [0, 0, 0, 0, 0])
    score(rows, "moving", moving.plan(100, per, 4 * per, rng),
          lambda t: (moving.draw(t, 100, rng), None))
    score(rows, "shapes", shapes.plan(100, per, rng, 4 * per),
          lambda t: (shapes.draw(t, 100, rng).values, None))
    noise = synthetic.NoiseModel()

    def drawn(t):
        s = synthetic._samples(synthetic._levels(t, 60), t.cv, noise, rng)
        return [float(np.median(r)) for r in s], None

    score(rows, "synthetic", synthetic.plan(max(per // 4, 1), 4 * per, 60, rng), drawn)
    print("| family | kind | change | size | n | any (hybrid) | located | "
          "any (detector) | located |\n|---|---|---|---:|---:|---:|---:|---:|---:|")
    for (fam, kind, change, size), (n, a, loc, a2, loc2) in sorted(rows.items()):
        print(f"| {fam} | {kind} | {change} | {size:.3f} | {n} | {a / n:.3f} | "
              f"{loc / n:.3f} | {a2 / n:.3f} | {loc2 / n:.3f} |")
    print(f"\n{time.time() - started:.1f} s")


def shares(seed: int, per: int = 20) -> None:
    """Per family, kind and change: the share of series the hybrid would hand to the test."""
    rng = np.random.default_rng(seed)
    out = defaultdict(list)

    def add(name, truths, draw):
        for t in truths:
            values = [v for v in draw(t) if v is not None]
            kind = getattr(t, "shape", getattr(t, "kind", "?"))
            change = getattr(t, "change", "step" if kind == "step" else "none")
            share = walk_share_multi(values) if ROUTE == "multi" else walk_share(values)
            out[(name, kind, change)].append(share)

    add("moving", moving.plan(100, per, 4 * per, rng), lambda t: moving.draw(t, 100, rng))
    add("shapes", shapes.plan(100, per, rng, 4 * per),
        lambda t: shapes.draw(t, 100, rng).values)
    noise = synthetic.NoiseModel()
    add("synthetic", synthetic.plan(max(per // 4, 1), 4 * per, 60, rng),
        lambda t: [float(np.median(r)) for r in synthetic._samples(
            synthetic._levels(t, 60), t.cv, noise, rng)])
    print("| family | kind | change | n | median share | routed (share > WALK_SHARE) |\n"
          "|---|---|---|---:|---:|---:|")
    for (fam, kind, change), v in sorted(out.items()):
        v = np.asarray(v)
        print(f"| {fam} | {kind} | {change} | {len(v)} | {np.median(v):.2f} | "
              f"{np.mean(v > WALK_SHARE):.2f} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "shares":
        shares(int(sys.argv[2]) if len(sys.argv) > 2 else 17)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 17,
             int(sys.argv[2]) if len(sys.argv) > 2 else 20)
