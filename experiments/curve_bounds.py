# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""A yardstick for the moving family's smooth trends (issue 51): for the logistic, exponential
and polynomial kinds, a test that knows the family of curves each kind is drawn from and the
noise's deviation, but not the curve's parameters, nor where or how large a step is.

Each series (on the log scale, as the detector reads it) is fitted twice by least squares:
the best curve of its kind (offset and rise free, the shape's parameters searched on a fine
grid: logistic centre and width, the exponential's rate, the four polynomial shapes), and the
best curve with one step at any commit that leaves 3 on either side. The test statistic is
what the step takes off the residual sum of squares, in noise variances (the likelihood
ratio of one step of unknown size and place, with the noise's deviation known); the step is
placed where that fit puts it. A change is listed where the statistic passes c, c set so
that NULL_RATE of the series without a change are listed; a step is located when it is
listed and placed within 3 commits of the planted one, as the family's target counts.

The same with the deviation estimated from the series (the statistic divided by the
step fit's residual variance, an F ratio) is printed beside it: what a detector that must
estimate its noise could do at best with this knowledge of the curves.

    .venv/bin/python experiments/curve_bounds.py [NULL_SERIES] [STEP_SERIES] [SEED]

Prints, per kind and step size, the c that lists 1 % of the null series and the steps
located there, and the largest c that locates 90 % of the steps with the null series it
then lists.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import ar_bounds  # noqa: E402

from torchpulse.evaluation import moving  # noqa: E402

NULL_RATE = 0.01  # issue 51's target: under 1 % of the null series with a change point
TARGET = 0.90  # ... and steps of 3 deviations or more located within 3 commits in 90 %
LOCATED = 3
HELD = 3  # a step is tried at every commit that leaves this many on either side
COMMITS = 100
CHUNK = 16
STEP_F = 9.0  # the detector's bar for a step on a curve (analysis/detector/curves.py)


def shapes(kind: str, n: int) -> np.ndarray:
    """Candidate curves of the kind, each rising from 0 to 1 over ``n`` commits (rows);
    the grids reach past the ranges evaluation/moving.py draws from."""
    t = np.linspace(0.0, 1.0, n)
    if kind == "logistic":
        centres, widths = np.linspace(0.2, 0.8, 121), np.linspace(0.03, 0.2, 69)
        c, w = np.meshgrid(centres, widths, indexing="ij")
        curves = 1.0 / (1.0 + np.exp(-(t[None, :] - c.reshape(-1, 1)) / w.reshape(-1, 1)))
    elif kind == "exponential":
        rates = np.linspace(1.0, 6.0, 501)
        curves = np.expm1(rates[:, None] * t[None, :])
    else:
        powers = [t ** 2, t ** 3]
        curves = np.array(powers + [1.0 - p[::-1] for p in powers])
    low, high = curves.min(axis=1, keepdims=True), curves.max(axis=1, keepdims=True)
    return (curves - low) / (high - low)


class Fitter:
    """Least squares of y on [1, curve columns] and of y on [1, curve columns, step at k], for
    every curve of a grid and every k, in closed form: each curve's columns are made
    orthonormal once, the step's column is projected off them, and each (curve, k) costs a
    few flops. ``curves``: m x n (one column each) or m x n x p."""

    def __init__(self, curves: np.ndarray):
        if curves.ndim == 2:
            curves = curves[:, :, None]
        m, n, _ = curves.shape
        self.n = n
        self.places = np.arange(HELD, n - HELD + 1)  # the step's first commit
        design = np.concatenate([np.ones((m, n, 1)), curves], axis=2)
        self.q = np.linalg.qr(design)[0]  # m x n x (p + 1), orthonormal columns
        tail = np.cumsum(self.q[:, ::-1, :], axis=1)[:, ::-1, :]  # sums over i >= k
        self.q_tail = tail[:, self.places, :]  # m x K x (p + 1)
        after = (n - self.places).astype(float)
        self.den = after[None, :] - (self.q_tail ** 2).sum(axis=2)  # |S_k projected off|^2

    def fit(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For series ``y`` (N x n): the best curve's RSS, the best curve-and-step RSS and
        the step's place."""
        a = np.einsum("mnp,Nn->Nmp", self.q, y)  # the curve's coefficients
        rss0 = (y * y).sum(axis=1)[:, None] - (a * a).sum(axis=2)
        y_tail = np.cumsum(y[:, ::-1], axis=1)[:, ::-1][:, self.places]  # N x K
        # the residual's sum over i >= k: the step column's product with the residual
        r_tail = y_tail[:, None, :] - np.einsum("Nmp,mKp->NmK", a, self.q_tail)
        rss1 = rss0[:, :, None] - r_tail ** 2 / self.den[None]
        flat = rss1.reshape(len(y), -1)
        best = flat.argmin(axis=1)
        return rss0.min(axis=1), flat[np.arange(len(y)), best], self.places[best % len(self.places)]


class Fitters:
    """The least of several Fitters' fits (curves with different numbers of columns)."""

    def __init__(self, *fitters: Fitter):
        self.fitters = fitters
        self.n = fitters[0].n

    def fit(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fits = [f.fit(y) for f in self.fitters]
        rss0 = np.min([f[0] for f in fits], axis=0)
        which = np.argmin([f[1] for f in fits], axis=0)
        rss1 = np.array([fits[w][1][i] for i, w in enumerate(which)])
        place = np.array([fits[w][2][i] for i, w in enumerate(which)])
        return rss0, rss1, place


def generic(n: int) -> Fitters:
    """The detector's own smooth curves (analysis/detector/curves.py), for any rising
    series: a cubic, a ramp (flat, a line, flat; knots at least 8 commits apart) and a
    logistic of any centre and width, four parameters each."""
    t = np.linspace(0.0, 1.0, n)
    cubic = np.stack([t, t ** 2, t ** 3], axis=1)[None]  # 1 x n x 3
    knots = [(a, b) for a in range(0, n, 2) for b in range(a + 8, n, 2)]
    ramps = np.array([np.clip((np.arange(n) - a) / (b - a), 0.0, 1.0) for a, b in knots])
    centres, widths = np.linspace(-0.2, 1.2, 141), np.geomspace(0.01, 0.5, 60)
    c, w = np.meshgrid(centres, widths, indexing="ij")
    logistic = 1.0 / (1.0 + np.exp(-(t[None, :] - c.reshape(-1, 1)) / w.reshape(-1, 1)))
    logistic = logistic[np.ptp(logistic, axis=1) > 1e-3]  # no flat ones: they add nothing
    return Fitters(Fitter(cubic), Fitter(ramps), Fitter(logistic))


def statistics(fitter: Fitter, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(known-deviation statistic, F ratio, the step's place) for each series."""
    parts = [fitter.fit(y[i:i + CHUNK]) for i in range(0, len(y), CHUNK)]
    rss0, rss1, place = (np.concatenate(p) for p in zip(*parts, strict=True))
    known = (rss0 - rss1) / moving.SIGMA ** 2
    estimated = (rss0 - rss1) / (rss1 / (fitter.n - 4))
    return known, estimated, place


def _located(null: np.ndarray, stat: np.ndarray, near: np.ndarray, c: float
             ) -> tuple[float, float]:
    """(null series listed, steps located) where the statistic must pass ``c``."""
    return float(np.mean(null > c)), float(np.mean((stat > c) & near))


def report(kind: str, nulls: int, steps: int, seed: int, fitters: dict) -> None:
    rng = np.random.default_rng([seed, 51, 3])
    null_y = ar_bounds.draws(kind, 0.0, nulls, rng)[0]
    step_y, at = zip(*(ar_bounds.draws(kind, k * moving.SIGMA, steps, rng)
                       for k in moving.STEP_SIGMAS), strict=True)
    step_y, at = np.concatenate(step_y), np.concatenate(at)
    size = np.repeat(moving.STEP_SIGMAS, steps)
    for name, fitter in fitters.items():
        if fitter is None:
            fitter = Fitter(shapes(kind, COMMITS))
        null_known, null_f, _ = statistics(fitter, null_y)
        known, f_ratio, place = statistics(fitter, step_y)
        near = np.abs(place - at) <= LOCATED
        for label, null, stat in (("known", null_known, known),
                                  ("estimated", null_f, f_ratio)):
            c = float(np.quantile(null, 1.0 - NULL_RATE))
            cells = [f"{np.mean((stat > c) & near & (size == k)) / np.mean(size == k):6.1%}"
                     for k in moving.STEP_SIGMAS]
            _, pooled = _located(null, stat, near, c)
            # the largest c at which the pooled steps are located in TARGET of series
            hits = np.sort(stat[near])[::-1]
            need = int(np.ceil(TARGET * len(stat)))
            c90 = float(hits[need - 1]) if need <= len(hits) else float("nan")
            listed90 = float(np.mean(null >= c90)) if c90 == c90 else float("nan")
            at_step_f = _located(null, stat, near, STEP_F) if label == "estimated" else None
            print(f"| {kind} | {name} | {label} | {c:.1f} | {' / '.join(cells)} | "
                  f"{pooled:.1%} | {c90:.1f} | {listed90:.1%} | "
                  + (f"{at_step_f[0]:.1%} / {at_step_f[1]:.1%} |" if at_step_f else "- |"),
                  flush=True)


def main() -> None:
    nulls = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    print("| kind | curves | deviation | c at 1 % of nulls | 3 / 5 dev located there | "
          "pooled | c locating 90 % pooled | nulls listed there | at F 9: nulls / located |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    fitters = {"the kind's own": None, "the detector's": generic(COMMITS)}
    for kind in ("logistic", "exponential", "polynomial"):
        report(kind, nulls, steps, seed, fitters)


if __name__ == "__main__":
    main()
