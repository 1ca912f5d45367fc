"""The detector's value objects: a commit's measurement (Point), and what detection
concludes about a series (its noise, change points, drifts and active regression)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from torchpulse.analysis.detector.noise import MAD_TO_SD, spread


@dataclass(frozen=True, slots=True)  # a history holds millions: no __dict__ each
class Point:
    """One commit's measurement of a series: asv's value and, when recorded, its samples."""

    commit: str
    value: float
    samples: tuple[float, ...] = ()
    # when its asv job ran (ms since the epoch) and for how long (s), where stored
    started_ms: float | None = None
    seconds: float | None = None
    # the machine canary says the machine was disturbed while it was measured: shown, but
    # left out of detection (see torchpulse.analysis.disturbance)
    disturbed: bool = False

    def _clean(self, linear: bool) -> np.ndarray:
        kept = [s for s in self.samples
                if s is not None and math.isfinite(s) and (s >= 0 if linear else s > 0)]
        return np.asarray(kept, dtype=float) if linear else np.log(kept)

    def level(self, linear: bool = False) -> float:
        """The run's level (log scale, or linear): the mean of the samples left after
        dropping those more than 3 robust deviations from their median (a GC pause, an
        interrupt), which keeps nearly the efficiency of the mean; asv's value when no
        samples."""
        data = self._clean(linear)
        if len(data) == 0:
            return self.value if linear else math.log(self.value)
        centre = float(np.median(data))
        spread = MAD_TO_SD * float(np.median(np.abs(data - centre)))
        inliers = data[np.abs(data - centre) <= 3.0 * spread] if spread > 0 else data
        return float(np.mean(inliers)) if spread > 0 else centre

    def within_cv(self, linear: bool = False) -> float | None:
        """Robust spread of the samples inside this run (a CV on the log scale)."""
        data = self._clean(linear)
        if len(data) < 3:
            return None
        return spread(data)

    def raw(self) -> np.ndarray:
        """What was measured, in its unit: the samples, else asv's value."""
        data = self._clean(True)
        return data if len(data) else np.array([self.value])


@dataclass(frozen=True)
class Noise:
    """How noisy a series is, in relative terms (log-scale standard deviations ~ CV; on a
    linear series, relative to its typical level)."""

    cv: float  # commit-to-commit spread of the levels (between-run noise included)
    within_cv: float | None  # typical spread of samples inside one run, when recorded
    mde: float  # smallest step found with 80 % power when 3 commits follow it
    unstable: bool  # the noise makes the threshold meaningless: mde > threshold
    toggling: bool = False  # the series moves back and forth between levels
    # unstable and not toggling: the commits from which its mde would be within the
    # threshold at the noise measured so far (None: not within REACH_CAP commits)
    reach: int | None = None


@dataclass(frozen=True)
class ChangePoint:
    """A change of level: ``index`` is the first point at the new level."""

    index: int
    before: float  # level of the segment before (original units, geometric mean)
    after: float  # level of the segment from ``index`` on
    pvalue: float  # adjusted for the places the split could have gone
    stderr: float  # standard error of log(after / before)

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


@dataclass(frozen=True)
class Regression:
    """The active regression of a series: its newest level against its baseline."""

    index: int  # first point at a raised level: the first culprit
    culprits: tuple[int, ...]  # every point where the level rose since the baseline
    before: float  # the baseline: the last stable level before the rise (original units)
    after: float  # the newest level
    pvalue: float  # adjusted for the places the change could have gone
    stderr: float  # standard error of the net change on the analysis scale
    noisy: bool = False  # the series is unstable, but this step clearly exceeds its noise
    # the (first, last) points of each drift up between the baseline and the newest level:
    # the level rose over those commits, not at one of them
    drifts: tuple[tuple[int, int], ...] = ()

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


@dataclass(frozen=True)
class Drift:
    """A smooth change of level over a range of commits (see torchpulse.analysis.detector.drift)."""

    start: int  # its first point
    end: int  # its last point
    before: float  # the fitted level at ``start`` (original units)
    after: float  # the fitted level at ``end``
    pvalue: float  # of its rise or fall, adjusted like a change point's

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


@dataclass(frozen=True)
class SeriesVerdict:
    """What detection concluded about one series."""

    change_points: tuple[ChangePoint, ...]  # significant ones, oldest first
    active: tuple[Regression, ...]  # the regression present at the newest commit, if any
    spikes: tuple[int, ...]  # indices set aside as one-commit spikes
    noise: Noise
    linear: bool = False  # analysed on a linear scale (the series has zeros)
    drifts: tuple[Drift, ...] = ()  # smooth changes over a range, oldest first

    @property
    def pvalue(self) -> float:
        """The series' evidence for an active regression (1.0 when there is none)."""
        return min((c.pvalue for c in self.active), default=1.0)
