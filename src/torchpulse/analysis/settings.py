"""The detector's four settings as one value, passed from the command line to every part that
judges a series (the alert, the site's summary, the dashboard's re-measure planning), so
that each judges with the thresholds the user gave."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from torchpulse.analysis.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_DEVICE_THRESHOLD,
    DEFAULT_NOISE_FLOOR,
    DEFAULT_THRESHOLD,
)
from torchpulse.kinds import KINDS


@dataclass(frozen=True)
class Settings:
    alpha: float = DEFAULT_ALPHA  # significance within a series, false-discovery rate across
    threshold: float = DEFAULT_THRESHOLD  # smallest change worth an alert (times, memory)
    count_threshold: float = DEFAULT_COUNT_THRESHOLD  # the same on counted work
    noise_floor: float = DEFAULT_NOISE_FLOOR  # the least relative noise of any series
    device_threshold: float = DEFAULT_DEVICE_THRESHOLD  # the same on a GPU's kernel time

    def threshold_for(self, rule: str) -> float | None:
        """The smallest change worth an alert on a series judged by ``rule`` (a kind of
        torchpulse.kinds: its field here); None for an exact counter, on which any increase
        is one."""
        field = KINDS[rule].setting
        return None if field is None else getattr(self, field)

    def with_threshold(self, threshold: float | None) -> Settings:
        """These settings with ``threshold`` for every rule that has one (a benchmark rule
        of the triage file); themselves when None."""
        if threshold is None:
            return self
        return dataclasses.replace(self, **{k.setting: threshold for k in KINDS.values()
                                            if k.setting is not None})

    @property
    def key(self) -> tuple[float, ...]:
        """What the verdict cache keys verdicts by: every setting that changes one."""
        return dataclasses.astuple(self)


DEFAULTS = Settings()
