"""Every CPU workload of a selection timed in one process, with its peak resident memory: the
wall-time side of ``torchpulse compare --python A --python B``.

    python -m torchpulse.wall < REQUEST.json > one JSON line a workload

The request names the workloads (workloads/registry.py), the sizes table and the seconds of calls a
workload gets. The first line out says which torch this process imported (its version, git
commit, CUDA and debug flags) and the memory resident once it had (``resident``: torch's own
libraries, what a CUDA build costs every process); then, per workload as it is done,
``{"name", "wall": [seconds a call, one sample a call], "peak_rss": bytes}`` (``peak_rss``
only for the request's ``peak`` names, when it gives them) or ``{"name", "error"}``.
``peak_rss`` is the workload's peak memory: the process's peak resident memory while the
workload was built and run (Linux's VmHWM, reset through /proc/self/clear_refs),
once the memory earlier workloads freed was given back (allocation.release_freed_memory), so
that it is torch's libraries and this workload, not what an earlier one kept; None where the
kernel cannot say.

It runs in the environment being measured, from a copy of this torchpulse's sources, so
both environments time the same workload code at the same sizes.
"""

from __future__ import annotations

import gc
import json
import math
import sys
import time
import traceback
from collections.abc import Callable, Iterable

MIN_SAMPLES = 5  # calls a workload is timed at least in one process
MAX_SAMPLES = 50
EXTRA_WARMUP = 2  # calls past the region's settle count


def build_identity() -> dict:
    """The torch this process imported: what a user calls "the build"."""
    import torch

    return {"torch": torch.__version__, "git_version": getattr(torch.version, "git_version",
                                                               None),
            "cuda": torch.version.cuda, "debug": bool(getattr(torch.version, "debug", False)),
            "python": sys.version.split()[0], "resident": resident()}


def _status(field: str) -> int | None:
    """A size from /proc/self/status, in bytes (None where there is none)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss() -> int | None:
    """The process's peak resident memory since the last ``reset_peak`` (bytes)."""
    return _status("VmHWM")


def resident() -> int | None:
    """The process's resident memory now (bytes)."""
    return _status("VmRSS")


def reset_peak() -> bool:
    """Start the peak resident memory again from what is resident now (Linux 4.0 on)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def samples_for(call_s: float, seconds: float) -> int:
    """Calls to time: ``seconds`` worth, between MIN_SAMPLES and MAX_SAMPLES."""
    wanted = math.ceil(seconds / call_s) if call_s > 0 else MAX_SAMPLES
    return max(MIN_SAMPLES, min(MAX_SAMPLES, wanted))


def measure_one(name: str, tables: dict, preset: str, seconds: float,
                peak: bool = True) -> dict:
    """One workload built, warmed up and timed on the CPU; with ``peak``, its peak memory
    too, for which what earlier workloads freed is given back first (the faults that costs
    are spared a process that times only)."""
    import torch

    from torchpulse.allocation import release_freed_memory
    from torchpulse.timing import (
        RegionClock,
        freeze_long_lived_objects,
        release_long_lived_objects,
    )
    from torchpulse.workloads.regions import build

    gc.collect()
    if peak:
        release_freed_memory()
    known = peak and reset_peak()
    try:
        torch.manual_seed(0)
        region = build(name, tables, "cpu", preset)
        freeze_long_lived_objects()
        call_s = 0.0
        for _ in range(region.settle + EXTRA_WARMUP):
            start = time.perf_counter()
            region.run()
            call_s = time.perf_counter() - start
        clock = RegionClock("cpu")
        wall = []
        for _ in range(samples_for(call_s, seconds)):
            before = clock()
            region.run(clock)
            wall.append(clock() - before)
        return {"name": name, "wall": wall, "peak_rss": peak_rss() if known else None}
    finally:
        release_long_lived_objects()


def measure(names: Iterable[str], tables: dict, preset: str, seconds: float,
            emit: Callable[[dict], None], peak: Iterable[str] | None = None) -> None:
    """Each of ``names`` in turn; ``emit`` gets its line as soon as it is measured (a
    failure is the workload's own). ``peak``: the names whose peak memory is wanted (all
    when None)."""
    emit(build_identity())
    wanted = None if peak is None else set(peak)
    for name in names:
        try:
            emit(measure_one(name, tables, preset, seconds,
                             peak=wanted is None or name in wanted))
        except Exception as exc:  # noqa: BLE001 (one workload's failure is its own)
            emit({"name": name, "error": "".join(
                traceback.format_exception_only(exc)).strip().splitlines()[-1]})
        gc.collect()


def main() -> int:
    request = json.load(sys.stdin)

    def emit(line: dict) -> None:
        print(json.dumps(line), flush=True)

    measure(request["names"], request["tables"], request["preset"], request["seconds"], emit,
            peak=request.get("peak"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
