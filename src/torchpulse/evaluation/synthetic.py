"""Synthetic asv projects with planted changes: the ground truth for judging detectors.

A project is a git repository of N commits, an asv.conf.json and a results tree in which
every series has a known story: pure noise, a step up (a regression) of a given size a given
number of commits before the newest, a step down (an improvement), a one-commit spike, or one
of the patterns real histories show and no regression is: a short dip that recovers, two
levels the series toggles between, and orders-of-magnitude jumps that come back. The
noise imitates real benchmark runs: several samples per commit with a within-run spread, a
level of its own for every run (between-run jitter, now and then a slow run), and single
samples hit by an interrupt. Ten series make one asv benchmark (its parameters), and
``remeasure`` runs benchmarks again at a commit as asv run does, to replay make dashboard's
second measurement of a step seen in one run.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from torchpulse.evaluation import project
from torchpulse.evaluation.project import ENV, JOB_SECONDS, MACHINE, history
from torchpulse.results import asv_results

STEP_SIZES = (0.02, 0.03, 0.05, 0.10, 0.20)
DISTANCES = (1, 2, 3, 5, 10, 20)  # commits at the new level, the step's own commit included
NOISE_CVS = (0.01, 0.02, 0.03)
# series per asv benchmark (its parameters), as in the real suites (1 to 39): asv measures a
# whole benchmark again, every parameter of it, when one series' step is to be confirmed
PARAMS_PER_BENCHMARK = 10


@dataclass(frozen=True)
class NoiseModel:
    samples: int = 5  # samples per commit (asv run --record-samples)
    jitter: float = 0.5  # between-run level spread, as a fraction of the within-run cv
    slow_run_rate: float = 0.03  # runs that land on a busy machine ...
    slow_run_scale: float = 2.0  # ... slower by |N(0, scale * cv)|
    outlier_rate: float = 0.02  # samples hit by an interrupt, 10-50 % slower


@dataclass(frozen=True)
class Truth:
    benchmark: str
    param: str  # asv repr of the series parameter
    kind: str  # one of KINDS
    cv: float
    size: float = 0.0  # relative change of the step, spike, dip or toggle
    at: int = -1  # index of the first commit at the new level (or of the spike, the dip)
    distance: int = 0  # commits at the new level, the step's own commit included (dip: its width)
    seed: int = 0  # a toggle's runs


def _levels(truth: Truth, n: int) -> np.ndarray:
    levels = np.zeros(n)
    if truth.kind in ("step", "improvement"):
        levels[truth.at:] += np.log1p(truth.size)
    elif truth.kind == "spike":
        levels[truth.at] += np.log1p(truth.size)
    elif truth.kind == "dip":  # down for ``distance`` commits, then back
        levels[truth.at:truth.at + truth.distance] += np.log1p(truth.size)
    elif truth.kind == "magnitude":  # 1000x down for a while and back, then 100x up and back
        levels[truth.at:truth.at + truth.distance] += math.log(1e-3)
        later = truth.at + truth.distance + 5
        levels[later:later + truth.distance] += math.log(100.0)
    elif truth.kind == "toggle":  # runs of 2-8 commits at one of two levels, from a seed
        rng = np.random.default_rng(truth.seed)
        i, high = 0, False
        while i < n:
            run = int(rng.integers(2, 9))
            if high:
                levels[i:i + run] += np.log1p(truth.size)
            i, high = i + run, not high
    return levels


def _samples(levels: np.ndarray, cv: float, noise: NoiseModel,
             rng: np.random.Generator) -> np.ndarray:
    """Samples, shape (commits, samples), around a base of 10 ms."""
    n = len(levels)
    run = rng.normal(0.0, noise.jitter * cv, n)
    slow = rng.random(n) < noise.slow_run_rate
    run[slow] += np.abs(rng.normal(0.0, noise.slow_run_scale * cv, slow.sum()))
    logs = levels[:, None] + run[:, None] + rng.normal(0.0, cv, (n, noise.samples))
    values = 0.01 * np.exp(logs)
    hit = rng.random(values.shape) < noise.outlier_rate
    values[hit] *= rng.uniform(1.1, 1.5, hit.sum())
    return values


def _name(base: str, i: int) -> str:
    """The benchmark of series ``i`` of a group: ``base``, then ``base_g1`` ..."""
    group = i // PARAMS_PER_BENCHMARK
    return f"{base}_g{group}" if group else base


KINDS = ("step", "noise", "improvement", "spike", "dip", "toggle", "magnitude")
# series without a regression: any alert on one is a false alarm
QUIET_KINDS = ("noise", "improvement", "spike", "dip", "toggle", "magnitude")


def plan(per_cell: int, noise_series: int, commits: int, rng: np.random.Generator,
         kinds: tuple[str, ...] = KINDS, sizes: tuple[float, ...] = STEP_SIZES,
         distances: tuple[int, ...] = DISTANCES,
         extra: np.random.Generator | None = None) -> list[Truth]:
    """The series of a project: ``per_cell`` per (step size, distance, cv) and per cv for
    improvements, spikes, dips, toggles and magnitude jumps, ``noise_series`` pure-noise
    series per cv. ``extra`` draws the dips, toggles and jumps (default: from ``rng``)."""
    extra = extra or rng
    truths: list[Truth] = []
    for cv in NOISE_CVS:
        tag = f"cv{round(cv * 100)}"
        for size, distance in itertools.product(sizes, distances):
            if "step" not in kinds or distance >= commits:
                continue
            name = f"synthetic.Step.time_{tag}_up{round(size * 100)}_d{distance}"
            truths += [Truth(_name(name, i), repr(str(i)), "step", cv, size,
                             commits - distance, distance) for i in range(per_cell)]
        if "noise" in kinds:
            truths += [Truth(_name(f"synthetic.Noise.time_{tag}", i), repr(str(i)), "noise",
                             cv) for i in range(noise_series)]
        for i in range(per_cell):
            d = int(rng.integers(3, max(commits // 2, 4)))
            if "improvement" in kinds:
                truths.append(Truth(_name(f"synthetic.Improvement.time_{tag}", i), repr(str(i)),
                                    "improvement", cv, -float(rng.uniform(0.05, 0.2)),
                                    commits - d, d))
            at = int(rng.integers(5, max(commits - 3, 6)))
            if "spike" in kinds:
                truths.append(Truth(_name(f"synthetic.Spike.time_{tag}", i), repr(str(i)), "spike",
                                    cv, float(rng.uniform(0.1, 0.3)), at))
    # the patterns of real histories that are no regression, drawn from their own generator
    # so that adding them leaves every other series of a seed as it was
    for cv in NOISE_CVS:
        tag = f"cv{round(cv * 100)}"
        for i in range(per_cell):
            if "dip" in kinds:  # down 10 % to 99.9 % for 1-4 commits, then back
                width = int(extra.integers(1, 5))
                start = int(extra.integers(5, max(commits - width, 6)))
                truths.append(Truth(_name(f"synthetic.Dip.time_{tag}", i), repr(str(i)), "dip", cv,
                                    -float(extra.choice([0.1, 0.5, 0.9, 0.999])), start,
                                    width))
            if "toggle" in kinds:  # two levels 5-30 % apart, runs of 2-8 commits
                truths.append(Truth(_name(f"synthetic.Toggle.time_{tag}", i), repr(str(i)),
                                    "toggle", cv, float(extra.uniform(0.05, 0.3)),
                                    seed=int(extra.integers(0, 2**31))))
            if "magnitude" in kinds and commits >= 22:  # both jumps end 3 commits early
                truths.append(Truth(_name(f"synthetic.Magnitude.time_{tag}", i), repr(str(i)),
                                    "magnitude", cv, 0.0, int(extra.integers(5, commits - 16)),
                                    int(extra.integers(2, 5))))
    return truths


def build(path: Path, *, commits: int = 60, per_cell: int = 40, noise_series: int = 400,
          seed: int = 0, noise: NoiseModel | None = None, kinds: tuple[str, ...] = KINDS,
          sizes: tuple[float, ...] = STEP_SIZES,
          distances: tuple[int, ...] = DISTANCES) -> list[Truth]:
    """Write a synthetic project into the empty directory ``path``; return its truth (also
    saved as ``truth.json`` beside the results, where no detector looks). ``sizes`` and
    ``distances`` choose the planted steps (every combination, per noise level)."""
    noise = noise or NoiseModel()
    rng = np.random.default_rng(seed)
    shas = project.git_repo(path, commits)
    truths = plan(per_cell, noise_series, commits, rng, kinds, sizes, distances,
                  extra=np.random.default_rng([seed, 1]))
    by_bench: dict[str, list[Truth]] = {}
    for t in truths:
        by_bench.setdefault(t.benchmark, []).append(t)
    samples = {name: np.stack([_samples(_levels(t, commits), t.cv, noise, rng) for t in ts])
               for name, ts in by_bench.items()}  # (series, commits, samples)

    def rows(c: int) -> project.Rows:
        for name, values in samples.items():
            drawn = values[:, c, :].tolist()
            yield name, [float(np.median(r)) for r in drawn], drawn

    project.write(path, shas, {name: project.declare([t.param for t in ts], "time", "seconds")
                               for name, ts in by_bench.items()}, rows, truths)
    return truths


def remeasure(path: Path, truths: list[Truth], commits: list[str], benchmarks: set[str],
              seed: int) -> int:
    """Measure ``benchmarks`` again at ``commits`` of the project at ``path``, as asv run
    does: every series of each benchmark gets a new draw from its truth and the noise model
    (a new run, which may itself be slow), replacing what was stored. Returns the series
    re-drawn."""
    noise = NoiseModel()
    rng = np.random.default_rng([seed, 2])
    shas = history(path)
    by_bench: dict[str, list[Truth]] = {}
    for t in truths:
        if t.benchmark in benchmarks:
            by_bench.setdefault(t.benchmark, []).append(t)
    redrawn = 0
    for sha in commits:
        c = shas.index(sha)
        relative = asv_results.filename(MACHINE, sha, ENV)
        results = asv_results.load(path / "results" / relative, MACHINE)
        for name, ts in by_bench.items():
            rows = [_samples(_levels(t, len(shas))[c:c + 1], t.cv, noise, rng)[0].tolist()
                    for t in ts]
            asv_results.add(results, name, "1", [[t.param for t in ts]],
                            [float(np.median(r)) for r in rows], rows, duration=JOB_SECONDS)
            redrawn += len(ts)
        asv_results.save(results, path / "results", relative)
    return redrawn
