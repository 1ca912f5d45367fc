"""Timing of model regions: CUDA events plus synchronize on GPU, perf_counter on CPU.

Everything here is in seconds. ``RegionClock`` is a clock that only advances inside measured
regions; asv uses it as a benchmark's ``timer`` so that e.g. the backward pass is timed alone
although every call also runs the (untimed) forward pass.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch


def is_cuda(device: str | torch.device) -> bool:
    return torch.device(device).type == "cuda"


class RegionClock:
    """Accumulated seconds spent inside ``region()`` blocks.

    Calling the clock returns the total so far, which makes it a drop-in ``timer`` for
    timeit/asv: the difference between two readings is the time spent in regions between them.
    On CUDA the region boundaries are device events; reading the clock synchronizes.
    """

    def __init__(self, device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        self._cuda = is_cuda(self.device)
        self._total = 0.0
        self._pending: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    @contextmanager
    def region(self) -> Iterator[None]:
        if self._cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
            self._pending.append((start, end))
        else:
            start_s = time.perf_counter()
            yield
            self._total += time.perf_counter() - start_s

    def __call__(self) -> float:
        if self._pending:
            torch.cuda.synchronize(self.device)
            # elapsed_time is in milliseconds
            self._total += sum(s.elapsed_time(e) for s, e in self._pending) / 1000.0
            self._pending.clear()
        return self._total


@dataclass(frozen=True)
class Measurement:
    """Per-iteration samples of one timed region, in seconds."""

    samples: tuple[float, ...]

    @classmethod
    def of(cls, samples: Sequence[float]) -> Measurement:
        if not samples:
            raise ValueError("a measurement needs at least one sample")
        return cls(tuple(float(s) for s in samples))

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def std(self) -> float:
        # sample standard deviation, like torch.Tensor.std() upstream
        return statistics.stdev(self.samples) if len(self.samples) > 1 else 0.0


def collect_garbage() -> None:
    """Upstream fastrnns runs gc.collect() before each timed region; so do we."""
    gc.collect()


def freeze_long_lived_objects() -> None:
    """Move every object alive now into the collector's permanent generation.

    Called once a workload is built: torch, the model and its inputs live for the whole run.
    Without this each collect_garbage() scans ~200,000 objects (58 ms on 2 cores), which
    dwarfs small timed regions and the per-commit budget; with it a collection takes µs.
    """
    gc.freeze()


def release_long_lived_objects() -> None:
    """Undo freeze_long_lived_objects() and collect: a finished workload's objects (cycles
    included) become collectable again before the next workload is built."""
    gc.unfreeze()
    gc.collect()
