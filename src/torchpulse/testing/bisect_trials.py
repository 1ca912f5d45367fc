"""Bisection trials on simulated histories whose noise is this machine's measured noise.

A real bisection costs minutes; its success rate needs hundreds of trials. A simulated
history has one level per commit (a step by ``factor`` at a planted commit) and each run
draws its value as level x exp(residual), the residual resampled from the log residuals of
real runs of one commit on this machine (``Noise.from_values``): their spread, skew and
outliers (a busy moment) carry over as measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from torchpulse.analysis.settings import Settings
from torchpulse.culprit.bisect import bisect
from torchpulse.culprit.runs import Measure, Run

KEY = "simulated"


@dataclass(frozen=True)
class Noise:
    residuals: np.ndarray  # log values around their median

    @classmethod
    def from_values(cls, values: Sequence[float]) -> Noise:
        logs = np.log(np.asarray([v for v in values if v > 0 and math.isfinite(v)], float))
        if logs.size < 5:
            raise ValueError(f"a noise model needs at least 5 positive values, got {logs.size}")
        return cls(logs - np.median(logs))

    @classmethod
    def lognormal(cls, cv: float, size: int = 4096, seed: int = 0) -> Noise:
        return cls(np.random.default_rng(seed).normal(0.0, cv, size))

    @property
    def cv(self) -> float:
        """A robust coefficient of variation (1.4826 MAD of the log residuals)."""
        return float(1.4826 * np.median(np.abs(self.residuals - np.median(self.residuals))))


class SimulatedHistory:
    """Commits "c0" (GOOD) to "c{n}" (BAD); every commit from ``step_at`` on is ``factor``
    times slower. Calling it is one run, as ``AsvRuns`` is."""

    def __init__(self, n: int, step_at: int, factor: float, noise: Noise,
                 rng: np.random.Generator, level: float = 0.01):
        if not 1 <= step_at <= n:
            raise ValueError(f"the step must be at a commit after GOOD (1..{n})")
        self.commits = [f"c{i}" for i in range(n + 1)]
        self.step_at, self.factor, self.noise, self.rng = step_at, factor, noise, rng
        self.level = level
        self.runs = 0

    def __call__(self, commit: str, keys: Sequence[str] | None = None) -> Run:
        self.runs += 1
        index = int(commit[1:])
        level = self.level * (self.factor if index >= self.step_at else 1.0)
        residual = float(self.rng.choice(self.noise.residuals))
        return Run(commit, {KEY: level * math.exp(residual)})


@dataclass(frozen=True)
class TrialSummary:
    trials: int
    found: int  # the planted commit named as the first bad one
    wrong: int  # another commit named
    undecided: int  # the search stopped with a range (or no step established)
    rounds_per_probe: float  # mean probe rounds (runs of the probe commit) per probe
    runs_per_trial: float  # mean processes per trial, baseline included

    @property
    def found_share(self) -> float:
        return self.found / self.trials


def trials(noise: Noise, factor: float, n: int = 32, count: int = 200, alpha: float = 0.05,
           max_rounds: int = 20, fixed_rounds: int | None = None, seed: int = 0,
           threshold: float = 0.05) -> TrialSummary:
    """``count`` bisections of ``n``-commit histories with a step of ``factor`` planted at
    a random commit."""
    rng = np.random.default_rng(seed)
    found = wrong = undecided = probes = rounds = runs = 0
    for _ in range(count):
        step_at = int(rng.integers(1, n + 1))
        history = SimulatedHistory(n, step_at, factor, noise, rng)
        result = bisect(history, history.commits[0], history.commits[1:], KEY,
                        Settings(threshold=threshold, alpha=alpha), max_rounds=max_rounds,
                        fixed_rounds=fixed_rounds)
        culprit = result.found
        if culprit is None:
            undecided += 1
        elif culprit == history.commits[step_at]:
            found += 1
        else:
            wrong += 1
        probes += len(result.probes)
        rounds += result.rounds
        runs += history.runs
    return TrialSummary(count, found, wrong, undecided, rounds / max(probes, 1), runs / count)


def measured_values(measure: Measure, commits: Sequence[str], key: str, count: int,
                    progress: Callable[[str], None] | None = None) -> list[float]:
    """``count`` runs of commits with the same code, taken in turn as a bisection takes
    its runs (each run installs its commit afresh): the noise a model is drawn from."""
    values = []
    for i in range(count):
        values.append(measure(commits[i % len(commits)], [key]).values[key])
        if progress and (i + 1) % 10 == 0:
            progress(f"noise: {i + 1} of {count} runs")
    return values
