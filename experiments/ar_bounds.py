# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""A yardstick for the moving family's autocorrelated kinds (issue 51): can one test keep
AR(1) noise free of change points and still find steps, in that noise and in white noise?

The test knows that the noise is AR(1) but neither its phi nor its deviation, nor where or
how large a step is: the likelihood ratio of "a level, one step, AR(1) noise" against "a
level, AR(1) noise", phi and the deviation profiled out in each (exact Gaussian likelihood,
the first commit from the stationary distribution; phi on a grid from 0 to PHI_MAX), the
step tried at every commit that leaves 3 on either side and placed where the fit puts it.
A change is listed where the statistic passes c.

Each kind's own c (1 % of its null series listed) says what a test could do knowing the
kind; one bar for all (the largest of those c) is what a detector that does not know it can
do: the nulls each kind then lists, and the steps it locates within 3 commits, as the
family's target counts. White noise with steps of 2.5 deviations held for the newest 3, 5 or
10 commits is near the synthetic family's "+5 % at 2 % noise" (target: found in 96 %), but
Gaussian: that family's noise has slow runs and outliers, which only evaluate-detection draws.

    .venv/bin/python experiments/ar_bounds.py [NULL_SERIES] [STEP_SERIES] [SEED]
"""

import sys

import numpy as np

from torchpulse.evaluation import moving
from torchpulse.evaluation.shapes import AFTER, ShapeTruth

NULL_RATE = 0.01
LOCATED = 3
HELD = 3
COMMITS = 100
PHIS = np.linspace(0.0, 0.95, 20)  # PHI_MAX 0.95: the detector's RHO_MAX
KINDS = ("white", "ar1-0.3", "ar1-0.6", "ar1-0.9")
STEPS = {"white": (2.5,)}  # others: the family's 3 and 5 deviations
# bands of the phi fitted with the step, each with a bar of its own (adaptive_bars)
BANDS = np.array([0.0, 0.125, 0.275, 0.425, 0.575, 0.725, 0.875, 1.0])
HELD_FOR = (3, 5, 10)  # white noise's steps: commits at the new level, at the newest end


def draws(kind: str, size: float, series: int, rng: np.random.Generator, held: int = 0
          ) -> tuple[np.ndarray, np.ndarray]:
    """``series`` series on the log scale and their steps' places (-1 without a step): as
    the moving family places them, or ``held`` commits before the end."""
    out, at = np.empty((series, COMMITS)), np.full(series, -1)
    for i in range(series):
        if size:
            at[i] = COMMITS - held if held else int(
                rng.integers(COMMITS // 5, COMMITS - AFTER + 1))
        if kind == "white":
            out[i] = rng.normal(0.0, moving.SIGMA, COMMITS)
            if size:
                out[i, at[i]:] += size
            continue
        truth = ShapeTruth("x", "0", kind, "step" if size else "none", size, int(at[i]))
        out[i] = np.log(np.array(moving.draw(truth, COMMITS, rng)) / 0.01)
    return out, at


def _whiten(x: np.ndarray, phi: float) -> np.ndarray:
    """AR(1) innovations of the rows of ``x`` (the first scaled to the stationary deviation)."""
    z = np.empty_like(x)
    z[..., 0] = np.sqrt(1.0 - phi * phi) * x[..., 0]
    z[..., 1:] = x[..., 1:] - phi * x[..., :-1]
    return z


def statistic(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(twice the log likelihood ratio, the step's place, the phi fitted with the step) for
    each row of ``y``."""
    n = y.shape[1]
    places = np.arange(HELD, n - HELD + 1)
    steps = (np.arange(n)[None, :] >= places[:, None]).astype(float)  # K x n
    best0 = np.full(len(y), -np.inf)
    best1 = np.full(len(y), -np.inf)
    where = np.zeros(len(y), dtype=int)
    fitted = np.zeros(len(y))
    for phi in PHIS:
        z = _whiten(y, phi)
        c = _whiten(np.ones(n), phi)
        q = c / np.linalg.norm(c)
        w = _whiten(steps, phi)
        w -= np.outer(w @ q, q)  # the steps projected off the level
        den = (w * w).sum(axis=1)
        a = z @ q
        rss0 = (z * z).sum(axis=1) - a * a
        rss1 = rss0[:, None] - (z @ w.T) ** 2 / den[None, :]
        jacobian = 0.5 * np.log(1.0 - phi * phi)
        ll0 = -0.5 * n * np.log(rss0) + jacobian
        k = rss1.argmin(axis=1)
        ll1 = -0.5 * n * np.log(rss1[np.arange(len(y)), k]) + jacobian
        best0 = np.maximum(best0, ll0)
        better = ll1 > best1
        best1 = np.where(better, ll1, best1)
        where = np.where(better, places[k], where)
        fitted = np.where(better, phi, fitted)
    return 2.0 * (best1 - best0), where, fitted


def adaptive_bars(null: dict) -> np.ndarray:
    """A bar for each band of the phi fitted with the step (BANDS): in each band, the
    largest of the kinds' 1 - NULL_RATE quantiles of their null series that fall in it, so
    that no kind lists more than NULL_RATE of its null series."""
    bars = np.zeros(len(BANDS) - 1)
    for b in range(len(BANDS) - 1):
        for stat, phi in null.values():
            inside = stat[(phi >= BANDS[b]) & (phi < BANDS[b + 1])]
            if len(inside):
                # a band with few of a kind's series: its largest (the quantile is no better)
                q = np.quantile(inside, 1.0 - NULL_RATE) if len(inside) >= 100 else inside.max()
                bars[b] = max(bars[b], q)
    return bars


def _over(stat: np.ndarray, phi: np.ndarray, bars: np.ndarray) -> np.ndarray:
    return stat > bars[np.clip(np.searchsorted(BANDS, phi, side="right") - 1, 0, len(bars) - 1)]


def main() -> None:
    nulls = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    rng = np.random.default_rng([seed, 51, 4])
    null, stepped = {}, {}
    for kind in KINDS:
        stat, _, phi = statistic(draws(kind, 0.0, nulls, rng)[0])
        null[kind] = (stat, phi)
        for k in STEPS.get(kind, moving.STEP_SIGMAS):
            for held in HELD_FOR if kind == "white" else (0,):
                y, at = draws(kind, k * moving.SIGMA, steps, rng, held)
                stat, place, phi = statistic(y)
                stepped[kind, k, held] = (stat, np.abs(place - at) <= LOCATED, phi)
    own = {kind: float(np.quantile(null[kind][0], 1.0 - NULL_RATE)) for kind in KINDS}
    bar = max(own.values())
    bars = adaptive_bars(null)
    print(f"one bar for all: {bar:.1f}; by the phi fitted with the step "
          + ", ".join(f"[{a:.3g}, {b:.3g}) {c:.1f}" for a, b, c in zip(BANDS[:-1], BANDS[1:], bars,
                                                                     strict=True)))
    print("| kind | c at 1 % of its nulls | steps located there | nulls at the one bar "
          "| steps located at the one bar | nulls at the bars by phi | steps located there |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        cells = [(f"{k:g} dev" + (f", newest {held}" if held else ""), s, near, phi)
                 for (which, k, held), (s, near, phi) in stepped.items() if which == kind]
        there = " / ".join(f"{name} {np.mean((s > own[kind]) & near):.1%}"
                           for name, s, near, _ in cells)
        at_bar = " / ".join(f"{name} {np.mean((s > bar) & near):.1%}"
                            for name, s, near, _ in cells)
        adaptive = " / ".join(f"{name} {np.mean(_over(s, phi, bars) & near):.1%}"
                              for name, s, near, phi in cells)
        listed = np.mean(_over(*null[kind], bars))
        print(f"| {kind} | {own[kind]:.1f} | {there} | {np.mean(null[kind][0] > bar):.2%} | "
              f"{at_bar} | {listed:.2%} | {adaptive} |")


if __name__ == "__main__":
    main()
