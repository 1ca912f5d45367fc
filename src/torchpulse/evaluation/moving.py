"""Series that move for reasons other than a change: the third family of evaluate-detection.

On a public set of real-world series with change points drawn by human annotators, the
alert drew change points where people see none (issue 51): a quote held between small
updates, smooth growth curves, noisy measurements with outliers and short excursions,
seasonal series. Benchmarks move like that too: a counter that flips between values, a host
whose speed drifts over an afternoon, weekly load on shared runners. Each kind here is built
around one noise deviation SIGMA (1 % of the level, on the log scale) and comes without a
change, where a person would draw no change point, and with a planted step of STEP_SIGMAS
deviations, at least AFTER commits before the newest:

* ``quote``: a value held between irregular updates of one deviation (a fifth of commits);
* ``walk``: a random walk, increments of WALK_SHARE of a deviation;
* ``logistic``, ``exponential``, ``polynomial``: a smooth rise of TREND_SIGMAS deviations
  over the history, white noise of one deviation around it;
* ``ar1-0.3``, ``ar1-0.6``, ``ar1-0.9``: autocorrelated noise (AR(1) with that phi),
  marginal deviation one;
* ``seasonal``: a weekly cycle of SEASON_SIGMAS deviations, white noise of one;
* ``outliers``: white noise, OUTLIER_SHARE of commits far out (5-10 deviations) and a few
  short excursions (2-3 commits at 4 deviations).

A person reads the trends as a drift and the rest as noise, so any change point in a null
series of this family is a false one; the series are written with the shapes family's
ShapeTruth and scored by the same code (torchpulse.evaluation.scoring).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from torchpulse.evaluation import project
from torchpulse.evaluation.shapes import AFTER, ShapeTruth, groups
from torchpulse.evaluation.synthetic import PARAMS_PER_BENCHMARK

SIGMA = 0.01  # one noise deviation, relative to the level
KINDS = ("quote", "walk", "logistic", "exponential", "polynomial", "ar1-0.3", "ar1-0.6",
         "ar1-0.9", "seasonal", "outliers")
STEP_SIGMAS = (3.0, 5.0)  # planted steps, in noise deviations
QUOTE_RATE = 0.2  # the share of commits at which a quote is updated
WALK_SHARE = 0.3  # a random walk's increment, in deviations
TREND_SIGMAS = 10.0  # a trend's rise over the whole history, in deviations
SEASON_SIGMAS = 1.5  # the amplitude of a seasonal cycle, in deviations
SEASON = 7  # its period, in commits
OUTLIER_SHARE = 0.03


def _trend(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """A smooth rise of TREND_SIGMAS deviations from 0 to 1 over ``n`` commits."""
    t = np.linspace(0.0, 1.0, n)
    if kind == "logistic":
        centre, width = rng.uniform(0.3, 0.7), rng.uniform(0.05, 0.15)
        curve = 1.0 / (1.0 + np.exp(-(t - centre) / width))
    elif kind == "exponential":
        rate = rng.uniform(2.0, 5.0)
        curve = np.expm1(rate * t)
    else:  # a polynomial: a quadratic or a cubic, convex or concave
        curve = t ** rng.choice([2.0, 3.0])
        curve = 1.0 - curve[::-1] if rng.random() < 0.5 else curve
    curve = (curve - curve.min()) / (curve.max() - curve.min())
    return TREND_SIGMAS * SIGMA * curve


def _noise(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """The kind's movement around its level, on the log scale."""
    if kind == "quote":
        updates = np.where(rng.random(n) < QUOTE_RATE, rng.normal(0.0, SIGMA, n), 0.0)
        updates[0] = 0.0
        return np.cumsum(updates)
    if kind == "walk":
        return np.cumsum(rng.normal(0.0, WALK_SHARE * SIGMA, n))
    if kind.startswith("ar1-"):
        phi = float(kind.split("-", 1)[1])
        innovation = SIGMA * np.sqrt(1.0 - phi * phi)
        out = np.empty(n)
        out[0] = rng.normal(0.0, SIGMA)
        for i in range(1, n):
            out[i] = phi * out[i - 1] + rng.normal(0.0, innovation)
        return out
    white = rng.normal(0.0, SIGMA, n)
    if kind in ("logistic", "exponential", "polynomial"):
        return white + _trend(kind, n, rng)
    if kind == "seasonal":
        phase = rng.uniform(0.0, 2.0 * np.pi)
        return white + SEASON_SIGMAS * SIGMA * np.sin(2.0 * np.pi * np.arange(n) / SEASON
                                                      + phase)
    if kind == "outliers":
        far = rng.random(n) < OUTLIER_SHARE
        white[far] += rng.uniform(5.0, 10.0, int(far.sum())) * SIGMA
        for _ in range(int(rng.integers(1, 4))):  # short excursions that come back
            start, width = int(rng.integers(0, n - 3)), int(rng.integers(2, 4))
            white[start:start + width] += 4.0 * SIGMA
        return white
    raise ValueError(f"unknown kind {kind!r}")


def draw(truth: ShapeTruth, commits: int, rng: np.random.Generator) -> list[float]:
    """One series' value at each of ``commits`` commits."""
    log_level = _noise(truth.shape, commits, rng)
    if truth.change == "step":
        log_level[truth.at:] += truth.size
    return [float(v) for v in 0.01 * np.exp(log_level)]


def plan(commits: int, per_cell: int, nulls: int, rng: np.random.Generator
         ) -> list[ShapeTruth]:
    """``nulls`` series without a change and ``per_cell`` with each planted step, per kind;
    a step's size is on the log scale (3 deviations: 0.03, a rise of 3.05 %)."""
    truths: list[ShapeTruth] = []
    for kind in KINDS:
        ident = kind.replace("-", "_").replace(".", "")  # ar1-0.3: ar1_03
        cells = [("none", 0.0)] * nulls + [("step", k * SIGMA) for k in STEP_SIGMAS
                                           for _ in range(per_cell)]
        for i, (change, size) in enumerate(cells):
            group = i // PARAMS_PER_BENCHMARK
            name = f"moving.{ident.capitalize()}.track_{ident}" + (f"_g{group}" if group else "")
            at = int(rng.integers(commits // 5, commits - AFTER + 1)) if change == "step" else -1
            truths.append(ShapeTruth(name, repr(str(i)), kind, change, size, at))
    return truths


def build(path: Path, *, commits: int = 100, per_cell: int = 40, seed: int = 0,
          nulls: int | None = None) -> list[ShapeTruth]:
    """Write the family as an asv project into the empty directory ``path``; return its
    truth (also saved as ``truth.json``, where no detector looks)."""
    rng = np.random.default_rng([seed, 51])
    shas = project.git_repo(path, commits)
    truths = plan(commits, per_cell, per_cell if nulls is None else nulls, rng)
    drawn = {name: [draw(t, commits, rng) for t in ts] for name, ts in groups(truths)}

    def rows(c: int) -> project.Rows:
        for name, series in drawn.items():
            yield name, [values[c] for values in series], [None] * len(series)

    project.write(path, shas, {name: project.declare([t.param for t in ts], "track", "unit")
                               for name, ts in groups(truths)}, rows, truths)
    return truths
