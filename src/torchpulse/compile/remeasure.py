"""The compile zoo measured model by model with the machine canary read around each one, and
measured again where the canary read slow.

The zoo's setup (asv's setup_cache) compiles and times every model under every backend in one
process for a minute or more; the canaries between asv's benchmarks read nothing in that
time. So the suite reads the canary just before and just after each (model, backend) here
and, once all are measured, takes again every one with a reading more than SLOW_RATIO times
the median of the process's readings (a machine that was busy for a moment: its compile time
and step time would be off), keeping whichever of the two measurements had the quieter
canary. Standard library only: the asv suite loads this file from the working tree.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

SLOW_RATIO = 1.25  # as the canary rule between benchmarks (analysis/disturbance.py)
MIN_READINGS = 4  # fewer give no usual level: nothing is repeated

Key = tuple[str, str]  # (model, backend)


def slow_around(readings: dict[Key, tuple[float, float]],
                ratio: float = SLOW_RATIO) -> list[Key]:
    """The keys whose reading before or after is more than ``ratio`` times the median of
    all the readings."""
    values = [v for pair in readings.values() for v in pair]
    if len(values) < MIN_READINGS:
        return []
    level = statistics.median(values)
    return [key for key, pair in readings.items() if max(pair) > ratio * level]


def measure_all(models: Sequence[str], backends: Sequence[str],
                measure_one: Callable[[str, str], Any], read_canary: Callable[[], float],
                log: Callable[[str], None] = lambda line: None,
                ) -> tuple[dict[Key, Any], dict[Key, tuple[float, float]]]:
    """``measure_one(model, backend)`` for every pair, backend by backend as the zoo runs
    them, with a canary reading before and after each; the pairs the canary read slow around
    are measured once more. Returns the measurements and the readings kept with them."""
    parts: dict[Key, Any] = {}
    around: dict[Key, tuple[float, float]] = {}
    for backend in backends:
        for model in models:
            before = read_canary()
            parts[(model, backend)] = measure_one(model, backend)
            around[(model, backend)] = (before, read_canary())
    for key in slow_around(around):
        before = read_canary()
        again = measure_one(*key)
        after = read_canary()
        quieter = max(before, after) < max(around[key])
        log(f"canary read {max(around[key]) * 1e3:.1f} ms around {key[0]}/{key[1]}: measured "
            f"again ({max(before, after) * 1e3:.1f} ms), kept the "
            f"{'second' if quieter else 'first'} measurement")
        if quieter:
            parts[key], around[key] = again, (before, after)
    return parts, around


def merge_zoo(parts: dict[Key, dict]) -> dict:
    """The per-pair ``torchpulse.suite.compile_zoo`` results as one: every model, and per
    backend the fraction of models whose status is not a pass (models the package does not
    have are left out)."""
    models: dict[Key, dict] = {}
    for part in parts.values():
        if part is not None:
            models.update(part["models"])
    backends = sorted({b for _, b in parts})
    failure_rate = {}
    for backend in backends:
        statuses = [m["status"] for (_, b), m in models.items() if b == backend]
        if statuses:
            failure_rate[backend] = sum(not s.startswith("pass") for s in statuses) / len(
                statuses)
    return {"models": models, "failure_rate": failure_rate}
