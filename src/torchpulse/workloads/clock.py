"""The one protocol every meter implements: a workload's call runs its measured part inside
``clock.region()``. The wall clock (timing.RegionClock) times it, the counted region
(instructions.client.CountedRegion) counts its instructions, the profiled clock
(gpu.trace.ProfiledClock) records its kernels and the memory clock (gpu.measure) takes its
peak; the workload does not know which."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def region(self) -> AbstractContextManager[object]:
        """A block whose work is what is measured; the rest of the call is not."""
        ...
