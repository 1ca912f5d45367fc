"""Series shapes the synthetic generator never makes: the second family of evaluate-detection.

``synthetic.py`` draws lognormal runs around planted steps. Users' series also look like
this, and a detector tuned to one generator can break on them:

* ``count``: an integer metric (graph breaks, recompiles, kernel launches) that moves by one
  unit around its level, three distinct values; no samples (an asv ``track_*`` series);
* ``constant``: exactly the same value at every commit (a deterministic metric, bytes);
* ``coarse``: a 20 us timing with 2 % noise whose samples a timer rounds to 1 us;
* ``heavy``: Student-t noise with 3 degrees of freedom, one value per commit;
* ``bimodal``: each run lands in one of two modes 4 % apart (30 % of runs high);
* ``missing``: lognormal runs with a quarter of the commits failed (no value);
* ``drift``: a smooth, noiseless or nearly noiseless, linear drift over part of the history;
* ``stepdrift``: a step inside a drift over the whole history.

Each shape comes without a change (any change point is a false one), with planted steps
(+2 %, +5 %, +20 %) at a random commit at least ``AFTER`` commits before the newest, +1 unit
on counts 10 and 25 commits before it, and drifts of a known range. The values are written
as an asv project of their own, which ``torchpulse alert`` reads like any other.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from torchpulse.analysis.detector import best_split as detector_best_split
from torchpulse.evaluation import project
from torchpulse.evaluation.synthetic import PARAMS_PER_BENCHMARK

NULL_SHAPES = ("count", "constant", "coarse", "heavy", "bimodal", "missing")
STEP_SIZES = (0.02, 0.05, 0.20)  # relative steps planted on every noisy shape
DRIFT_SIZES = (0.02, 0.10)  # total rise of a drift over its range
AFTER = 10  # a planted step has at least this many commits after it
UNIT = 1.0  # the step of a count: one unit
COUNT_AFTER = (10, 25)  # commits after a count's planted step (at the new level)


@dataclass(frozen=True)
class ShapeTruth:
    """One series of the family and what was planted in it."""

    benchmark: str
    param: str  # asv repr of the series parameter
    shape: str
    change: str  # "none", "step" or "drift" (a stepdrift is a step; its drift is known)
    size: float = 0.0  # relative step or drift, or units (a count's step)
    at: int = -1  # first commit at the new level; a drift's first commit
    end: int = -1  # a drift's last commit


@dataclass
class Drawn:
    """What asv would have stored per commit: the value (None: no value, the benchmark
    failed there) and the samples (empty when none are recorded)."""

    values: list[float | None]
    samples: list[list[float]]


def _round(x: np.ndarray, step: float) -> np.ndarray:
    return np.round(x / step) * step


def draw(truth: ShapeTruth, commits: int, rng: np.random.Generator) -> Drawn:
    """One series' values at ``commits`` commits, from its shape and its truth."""
    n = commits
    log_shift = np.zeros(n)  # the planted change, on the log scale
    if truth.change == "step" and truth.shape != "count":
        log_shift[truth.at:] += np.log1p(truth.size)
    if truth.change == "drift" or truth.shape == "stepdrift":
        a, b = (truth.at, truth.end) if truth.change == "drift" else (0, n - 1)
        total = np.log1p(truth.size if truth.change == "drift" else 0.05)
        ramp = np.clip((np.arange(n) - a) / max(b - a, 1), 0.0, 1.0)
        log_shift += total * ramp
    samples: list[list[float]] = [[] for _ in range(n)]
    shape = truth.shape
    if shape == "count":
        base = float(rng.integers(20, 400))
        centre = rng.uniform(0.5, 0.85)  # share of commits exactly at the level
        moves = rng.choice([-1.0, 0.0, 1.0], size=n, p=[(1 - centre) / 2, centre,
                                                         (1 - centre) / 2])
        level = base + (UNIT * (np.arange(n) >= truth.at) if truth.change == "step" else 0.0)
        values = list(level + moves)
    elif shape == "constant":
        base = float(rng.integers(1, 10**9)) if rng.random() < 0.5 else rng.uniform(1e-4, 1.0)
        values = list(base * np.exp(log_shift))
    elif shape == "coarse":
        runs = rng.normal(0.0, 0.01, n)
        raw = 20e-6 * np.exp(log_shift[:, None] + runs[:, None] + rng.normal(0, 0.02, (n, 5)))
        rounded = _round(raw, 1e-6)
        samples = rounded.tolist()
        values = [float(np.median(r)) for r in rounded]
    elif shape == "heavy":
        values = list(0.01 * np.exp(log_shift + 0.01 * rng.standard_t(3, n)))
    elif shape == "bimodal":
        mode = np.where(rng.random(n) < 0.3, np.log1p(0.04), 0.0)
        raw = 0.01 * np.exp(log_shift[:, None] + mode[:, None] + rng.normal(0, 0.005, (n, 5)))
        samples = raw.tolist()
        values = [float(np.median(r)) for r in raw]
    elif shape == "missing":
        runs = rng.normal(0.0, 0.01, n)
        raw = 0.01 * np.exp(log_shift[:, None] + runs[:, None] + rng.normal(0, 0.02, (n, 5)))
        samples = raw.tolist()
        values = [float(np.median(r)) for r in raw]
        gone = rng.random(n) < 0.25
        if truth.change == "step":
            gone[truth.at] = False  # the step's own commit is measured
        gone[-1] = False  # a newest point, so that every series is judged at the same commit
        for i in np.nonzero(gone)[0]:
            values[i], samples[i] = None, []
    elif shape in ("drift", "stepdrift"):
        noisy = rng.random() < 0.5  # half noiseless, half with 0.3 % noise
        values = list(0.01 * np.exp(log_shift + (rng.normal(0, 0.003, n) if noisy else 0.0)))
    else:
        raise ValueError(f"unknown shape {shape!r}")
    return Drawn([None if v is None else float(v) for v in values], samples)


def plan(commits: int, per_cell: int, rng: np.random.Generator,
         nulls: int | None = None) -> list[ShapeTruth]:
    """``per_cell`` series per (shape, change): steps of every size, drifts; ``nulls``
    (default ``per_cell``) series without a change per shape, enough to tell a false-alarm
    rate under 1 % from one over it."""
    truths: list[ShapeTruth] = []

    def add(shape: str, change: str, size: float = 0.0, at: int = -1, end: int = -1) -> None:
        i = sum(t.shape == shape for t in truths)
        group = i // PARAMS_PER_BENCHMARK
        name = f"shapes.{shape.capitalize()}.track_{shape}" + (f"_g{group}" if group else "")
        truths.append(ShapeTruth(name, repr(str(i)), shape, change, size, at, end))

    def where() -> int:
        return int(rng.integers(commits // 5, commits - AFTER + 1))

    for shape in NULL_SHAPES:
        for _ in range(per_cell if nulls is None else nulls):
            add(shape, "none")
        if shape == "count":  # a one-unit step is 1.2-2 noise deviations: by distance
            for after in COUNT_AFTER:
                for _ in range(per_cell):
                    add(shape, "step", UNIT, commits - after)
            continue
        for size in STEP_SIZES:
            for _ in range(per_cell):
                add(shape, "step", size, where())
    for size in DRIFT_SIZES:
        for _ in range(per_cell):
            a = int(rng.integers(0, commits // 3))
            b = int(rng.integers(a + commits // 3, commits))
            add("drift", "drift", size, a, b)
    for size in (0.05, 0.20):
        for _ in range(per_cell):
            add("stepdrift", "step", size, where())
    return truths


def best_split(values: Sequence[float | None]) -> int:
    """Where the one split that best separates two mean levels lies (the least-squares
    estimate of a single change; missing values left out, positions in ``values``): the
    location an oracle that knows there is exactly one change would give. No detector
    locates a step more often than this does, on average, on data like these."""
    where = [i for i, v in enumerate(values) if v is not None]
    return where[detector_best_split(np.array([values[i] for i in where], dtype=float))]


def groups(truths: list[ShapeTruth]) -> Iterator[tuple[str, list[ShapeTruth]]]:
    """The truths by benchmark, in plan order."""
    by: dict[str, list[ShapeTruth]] = {}
    for t in truths:
        by.setdefault(t.benchmark, []).append(t)
    yield from by.items()


def build(path: Path, *, commits: int = 100, per_cell: int = 40, seed: int = 0,
          nulls: int | None = None) -> list[ShapeTruth]:
    """Write the family as an asv project into the empty directory ``path``; return its
    truth (also saved as ``truth.json``, where no detector looks)."""
    rng = np.random.default_rng([seed, 34])
    shas = project.git_repo(path, commits)
    truths = plan(commits, per_cell, rng, nulls)
    drawn = {name: [draw(t, commits, rng) for t in ts] for name, ts in groups(truths)}

    def rows(c: int) -> project.Rows:
        for name, series in drawn.items():
            yield name, [d.values[c] for d in series], [d.samples[c] or None for d in series]

    project.write(path, shas, {name: project.declare([t.param for t in ts], "track", "unit")
                               for name, ts in groups(truths)}, rows, truths)
    return truths
