"""Every CUDA workload of a commit measured in one process: one CUDA context, cuBLAS's and
cuDNN's handles made once, each model built and warmed up once for all its regions.

Per workload (workloads/registry.py names them) it takes:

* ``wall``: the region's time per call between CUDA events, synchronized (what the wall-time
  suites time, timing.RegionClock), in seconds, one sample a call;
* ``kernel_time``: the summed device time of the kernels, copies and fills the region runs,
  one sample a call, read from CUPTI through torch.profiler (trace.py): launch gaps on the
  host do not count, so it holds still where an eager model's wall time moves;
* ``kernels`` and ``syncs``: the kernels a call launches and its host synchronisations,
  exact counters (the median call's; every profiled call should say the same);
* ``gpu_memory``: the CUDA caching allocator's peak during one call, above what was
  allocated before the workload was built (its model, inputs, gradients and what the region
  adds), in bytes.

The wall-time sample count is chosen from the call's time after warm-up: at least
``MIN_SAMPLES`` (``SLOW_MIN_SAMPLES`` for a call over ``SLOW_CALL_S``), more while under
``SAMPLE_S``; kernel time takes ``PROFILED_CALLS`` profiled calls.
``phases`` says where the process spent its time (docs/gpu.md).

The result is plain dicts, lists, ints and floats: asv unpickles it once per benchmark.
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from contextlib import contextmanager

from torchpulse.gpu import trace
from torchpulse.timing import freeze_long_lived_objects, release_long_lived_objects
from torchpulse.workloads.regions import Region, build
from torchpulse.workloads.registry import split

MIN_SAMPLES = 8  # wall-time samples a workload gets at least (the suites took 2 x 4-10)
MAX_SAMPLES = 20
# profiled calls a workload (its kernel-time samples): kernel time barely moves from call to
# call (within a process, a spread of 0.1-0.4 %), and the profiling costs ~100 us a kernel
# launched. 3 calls instead of 5-10 cut the profiled calls and their reading from 75 s to
# 45 s a commit (docs/gpu.md, run 12)
PROFILED_CALLS = 3
SLOW_CALL_S = 0.25  # a call this long (the variable-length Python loops): fewer samples
SLOW_MIN_SAMPLES = 3
SAMPLE_S = 0.5  # seconds of calls each kind of sample gets, within the bounds above
EXTRA_WARMUP = 2  # calls past the region's settle count: the first calls load kernels


def sample_count(call_s: float, low: int, high: int) -> int:
    """How many calls of ``call_s`` seconds to take: ``SAMPLE_S`` worth, within [low, high],
    at least SLOW_MIN_SAMPLES for a slow call."""
    if call_s > SLOW_CALL_S:
        low = min(low, SLOW_MIN_SAMPLES)
    wanted = math.ceil(SAMPLE_S / call_s) if call_s > 0 else high
    return max(low, min(high, wanted))


class Phases:
    """Seconds spent per phase, summed over workloads."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def timing(self, phase: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start


class _Device:
    """What differs between a CUDA and a CPU (dry) run."""

    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        self.name = device
        self.cuda = torch.device(device).type == "cuda"

    def synchronize(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def allocated(self) -> int:
        return int(self.torch.cuda.memory_allocated()) if self.cuda else 0

    @contextmanager
    def memory_peak(self, into: list[int]):
        """The allocator's peak inside the block, appended to ``into``."""
        self.synchronize()
        self.torch.cuda.reset_peak_memory_stats()
        yield
        self.synchronize()
        into.append(int(self.torch.cuda.max_memory_allocated()))


class _MemoryClock:
    def __init__(self, device: _Device) -> None:
        self.device = device
        self.peaks: list[int] = []

    def region(self):
        return self.device.memory_peak(self.peaks)


def prime(device: _Device, phases: Phases) -> None:
    """The process's one-off costs, each timed, before any workload: the CUDA context, the
    cuBLAS and cuDNN handles (on this thread and on autograd's device thread, which a
    backward pass uses) and the profiler's CUPTI session."""
    torch = device.torch
    if device.cuda:
        with phases.timing("cuda context"):
            torch.cuda.init()
            torch.zeros(1, device=device.name)
            device.synchronize()
    with phases.timing("cublas and cudnn"):
        x = torch.randn(8, 8, device=device.name, requires_grad=True)
        image = torch.randn(1, 2, 8, 8, device=device.name, requires_grad=True)
        conv = torch.nn.Conv2d(2, 2, 3).to(device.name)
        ((x @ x).sum() + conv(image).sum()).backward()
        device.synchronize()
    with phases.timing("profiler start"):
        _profiled(lambda clock=None: None, 1, device)


def _warm(region: Region, device: _Device) -> float:
    """Warm-up calls; the seconds of the last one, synchronized."""
    elapsed = 0.0
    for _ in range(region.settle + EXTRA_WARMUP):
        start = time.perf_counter()
        region.run()
        device.synchronize()
        elapsed = time.perf_counter() - start
    return elapsed


def _wall(region: Region, device: _Device, count: int) -> list[float]:
    from torchpulse.timing import RegionClock

    clock = RegionClock(device.name)
    samples = []
    for _ in range(count):
        before = clock()
        region.run(clock)
        samples.append(clock() - before)
    return samples


def _profiled(run: Callable, count: int, device: _Device,
              phases: Phases | None = None) -> list[trace.Call]:
    """``count`` calls of ``run`` in one profiler session, read into calls. ``phases``
    splits the time between the session (the calls, CUPTI's overhead on each launch and
    kineto's collection at its end) and the reading of its events in Python."""
    from torch.profiler import ProfilerActivity, profile

    phases = phases or Phases()
    activities = [ProfilerActivity.CPU]
    if device.cuda:
        activities.append(ProfilerActivity.CUDA)
    clock = trace.ProfiledClock(device.name)
    with phases.timing("profiled calls"), warnings.catch_warnings():
        # "Profiler clears events at the end of each cycle": one cycle here, read once
        warnings.filterwarnings("ignore", message=".*clears events", category=UserWarning)
        with profile(activities=activities) as prof:
            for _ in range(count):
                run(clock)
    with phases.timing("trace reading"):
        return trace.calls(trace.read(prof.profiler.kineto_results.events()))


def _one(region: Region, device: _Device, baseline: int, phases: Phases) -> dict:
    with phases.timing("warm-up"):
        call_s = _warm(region, device)
    with phases.timing("wall-time samples"):
        wall = _wall(region, device, sample_count(call_s, MIN_SAMPLES, MAX_SAMPLES))
    calls = _profiled(region.run, PROFILED_CALLS, device, phases)
    if len(calls) != PROFILED_CALLS:
        raise RuntimeError(f"the profile holds {len(calls)} calls of the region, "
                           f"not {PROFILED_CALLS}")
    memory = None
    if device.cuda:
        with phases.timing("memory"):
            meter = _MemoryClock(device)
            region.run(meter)
            memory = max(meter.peaks) - baseline
    kernels = [c.kernels for c in calls]
    return {"wall": wall, "kernel_time": [c.device_ns / 1e9 for c in calls],
            "kernels": int(statistics.median_low(kernels)),
            "syncs": int(statistics.median_low(c.syncs for c in calls)),
            "copies": int(statistics.median_low(c.copies for c in calls)),
            "gpu_memory": memory,
            # what the counters rest on: every call's kernels, and the device activities
            # placed by time for want of their launch (the first call's names)
            "kernels_per_call": kernels, "by_time": sum(c.by_time for c in calls),
            "placed_by_time": list(calls[0].placed_by_time[:5]) if calls else [],
            # what its calls are made of, for an alert to name what changed: stored as
            # profiles beside asv's results (suite.measure_gpu), not handed to asv
            "profile": trace.profile(calls)}


def sizes_at(tables: dict, preset: str) -> dict:
    """The sizes ``measure`` takes, at ``preset`` of sizes.py's tables (sizes.by_preset() of
    the working tree): per table of registry.FAMILIES, its row (None: none at that preset)
    or, for a table with a row per model, the models that have one."""
    from torchpulse.workloads.registry import FAMILIES

    out: dict = {}
    for table, per_model in set(FAMILIES.values()):
        rows = tables.get(table) or {}
        out[table] = ({m: r[preset] for m, r in rows.items() if preset in r} if per_model
                      else rows.get(preset))
    return out


def measure(names: Sequence[str], tables: dict, device: str, preset: str, *,
            log: Callable[[str], None] | None = None,
            each: Callable[[str, dict], None] | None = None) -> dict:
    """Measure ``names`` in this process on ``device`` at ``tables`` (workloads.build):
    {"workloads": {name: figures}, "failed": {name: error}, "phases": {phase: seconds},
    "seconds": {name: seconds}, "workload_phases": {name: {phase: seconds}}}. A workload
    that fails is its own failure. ``log`` gets a progress line a workload; ``each`` gets
    (name, {"figures" or "failed", "seconds", "phases"}) as soon as it is measured, so a run
    cut short keeps what it took."""
    dev = _Device(device)
    phases = Phases()
    started = time.perf_counter()
    prime(dev, phases)
    out: dict = {"workloads": {}, "failed": {}, "seconds": {}, "workload_phases": {}}
    built: dict = {}  # the fastrnns model of the current runner, shared by its regions
    current, baseline = None, 0
    for name in names:
        began = time.perf_counter()
        before = dict(phases.seconds)
        try:
            family, what, _ = split(name)
            if (family, what) != current or family == "autograd":
                _release(built)  # the last runner's model, or the last pair's (gone by now)
                current, baseline = (family, what), dev.allocated()
            out["workloads"][name] = _built_and_measured(name, tables, dev, preset, built,
                                                         baseline, phases)
        except Exception as exc:  # noqa: BLE001 (one workload's failure is its own)
            out["failed"][name] = "".join(traceback.format_exception_only(exc)).strip()
        seconds = time.perf_counter() - began
        out["seconds"][name] = seconds
        out["workload_phases"][name] = {
            phase: total - before.get(phase, 0.0) for phase, total in phases.seconds.items()
            if total > before.get(phase, 0.0)}
        if log is not None:
            log(describe(name, out, seconds))
        if each is not None:
            done = ({"failed": out["failed"][name]} if name in out["failed"]
                    else {"figures": out["workloads"][name]})
            each(name, {**done, "seconds": seconds,
                        "phases": out["workload_phases"][name]})
    _release(built)
    phases.seconds["total"] = time.perf_counter() - started
    out["phases"] = phases.seconds
    return out


def _built_and_measured(name: str, tables: dict, device: _Device, preset: str, built: dict,
                        baseline: int, phases: Phases) -> dict:
    # a function of its own: an autograd pair's model dies with its frame, before the next
    # pair's baseline is read
    with phases.timing("build"):
        region = build(name, tables, device.name, preset, built=built)
        # torch, the model and its inputs outlive every call: the collection before each
        # call (as upstream's) then scans microseconds' worth, not 200,000 objects
        freeze_long_lived_objects()
    return _one(region, device, baseline, phases)


def _release(built: dict) -> None:
    for workload in built.values():
        workload.close()
    built.clear()
    release_long_lived_objects()  # the last workload's objects become collectable again


def describe(name: str, measured: dict, seconds: float) -> str:
    """One progress line about ``name``."""
    if name in measured["failed"]:
        return f"{name}: failed: {measured['failed'][name].splitlines()[-1]}"
    row = measured["workloads"][name]
    wall = statistics.median(row["wall"]) * 1e3
    device = statistics.median(row["kernel_time"]) * 1e3
    return (f"{name}: {wall:.3f} ms wall, {device:.3f} ms on the device, {row['kernels']} "
            f"kernels, {row['syncs']} syncs ({len(row['wall'])}+{len(row['kernel_time'])} "
            f"calls, {seconds:.1f} s)")
