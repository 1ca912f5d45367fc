"""Every CUDA workload of a commit measured in one process: one CUDA context, cuBLAS's and
cuDNN's handles made once, each model built and warmed up once for all its regions.

Per workload (workloads.py names them) it takes:

* ``wall``: the region's time per call between CUDA events, synchronized (what the wall-time
  suites time, timing.RegionClock), in seconds, one sample a call: the samples of the fastest
  of ``BURSTS`` bursts, one per pass over the process's workloads (``wall_bursts`` holds them
  all). A shared host runs slow for seconds at a time (its speed moved 3-27 % inside one
  process on an H200 VM, docs/gpu.md, run 14): bursts spread over minutes and the fastest kept
  set those spells aside, as the CPU canary sets a busy machine's points aside;
* ``kernel_time``: the summed device time of the kernels, copies and fills the region runs,
  one sample a call, read from CUPTI through torch.profiler (trace.py): launch gaps on the
  host do not count, so it holds still where an eager model's wall time moves;
* ``kernels`` and ``syncs``: the kernels a call launches and its host synchronisations,
  exact counters (the median call's; every profiled call should say the same);
* ``gpu_memory``: the CUDA caching allocator's peak during one call, above what was
  allocated before the workload was built (its model, inputs, gradients and what the region
  adds), in bytes.

A burst's sample count is chosen from the call's time after warm-up: at least
``MIN_SAMPLES``, more while under ``BURST_S``; a call over ``SLOW_CALL_S`` gets one burst of
``SLOW_MIN_SAMPLES`` (each of its samples spans the host's spells itself). Kernel time takes
``PROFILED_CALLS`` profiled calls.
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
from torchpulse.instructions.family import split
from torchpulse.timing import freeze_long_lived_objects, release_long_lived_objects
from torchpulse.workloads import Region, build

# wall-time bursts a workload gets, one per pass over the workloads: on an H200 VM the median
# of the fastest of 5 moved 1.3-4.4 % between processes where one burst moved 7-17 % (all but
# the Python LSTM, run 14)
BURSTS = 5
MIN_SAMPLES = 5  # samples a burst takes at least
MAX_SAMPLES = 10
BURST_S = 0.1  # seconds of calls a burst takes, within the bounds above
# profiled calls a workload (its kernel-time samples): kernel time barely moves from call to
# call (within a process, a spread of 0.1-0.4 %), and the profiling costs ~100 us a kernel
# launched. 3 calls instead of 5-10 cut the profiled calls and their reading from 75 s to
# 45 s a commit (docs/gpu.md, run 12)
PROFILED_CALLS = 3
# a call this long (the largest autograd pairs, the variable-length Python loops): one burst
# of fewer samples
SLOW_CALL_S = 0.25
SLOW_MIN_SAMPLES = 3
EXTRA_WARMUP = 2  # calls past the region's settle count: the first calls load kernels


def sample_count(call_s: float, low: int, high: int) -> int:
    """How many calls of ``call_s`` seconds a burst takes: ``BURST_S`` worth, within
    [low, high], at least SLOW_MIN_SAMPLES for a slow call."""
    if call_s > SLOW_CALL_S:
        low = min(low, SLOW_MIN_SAMPLES)
    wanted = math.ceil(BURST_S / call_s) if call_s > 0 else high
    return max(low, min(high, wanted))


def burst_count(call_s: float) -> int:
    """How many wall-time bursts a call of ``call_s`` seconds gets."""
    return 1 if call_s > SLOW_CALL_S else BURSTS


def fastest(bursts: Sequence[Sequence[float]]) -> list[float]:
    """The samples of the burst with the lowest median: the one the host's slow spells
    touched least."""
    return list(min(bursts, key=statistics.median))


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


def _one(region: Region, device: _Device, baseline: int, phases: Phases) -> tuple[dict, int]:
    """A workload's figures from its first pass (its first wall-time burst) and the size of
    its bursts."""
    with phases.timing("warm-up"):
        call_s = _warm(region, device)
    size = sample_count(call_s, MIN_SAMPLES, MAX_SAMPLES)
    with phases.timing("wall-time samples"):
        wall = _wall(region, device, size)
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
    figures = {"wall": wall, "wall_bursts": [wall],
               "kernel_time": [c.device_ns / 1e9 for c in calls],
               "kernels": int(statistics.median_low(kernels)),
               "syncs": int(statistics.median_low(c.syncs for c in calls)),
               "copies": int(statistics.median_low(c.copies for c in calls)),
               "gpu_memory": memory,
               # what the counters rest on: every call's kernels, and the device activities
               # placed by time for want of their launch (the first call's names)
               "kernels_per_call": kernels, "by_time": sum(c.by_time for c in calls),
               "placed_by_time": list(calls[0].placed_by_time[:5]) if calls else []}
    return figures, (size if burst_count(statistics.median(wall)) > 1 else 0)


class _Ledger:
    """Each workload's seconds and phases, summed over the passes that touched it."""

    def __init__(self, out: dict, phases: Phases) -> None:
        self.out, self.phases = out, phases

    @contextmanager
    def workload(self, name: str):
        began, before = time.perf_counter(), dict(self.phases.seconds)
        try:
            yield
        finally:
            self.out["seconds"][name] = (self.out["seconds"].get(name, 0.0)
                                         + time.perf_counter() - began)
            split = self.out["workload_phases"].setdefault(name, {})
            for phase, total in self.phases.seconds.items():
                if total > before.get(phase, 0.0):
                    split[phase] = split.get(phase, 0.0) + total - before.get(phase, 0.0)


def measure(names: Sequence[str], tables: dict, device: str, preset: str, *,
            log: Callable[[str], None] | None = None,
            each: Callable[[str, dict], None] | None = None) -> dict:
    """Measure ``names`` in this process on ``device`` at ``tables`` (workloads.build):
    {"workloads": {name: figures}, "failed": {name: error}, "phases": {phase: seconds},
    "seconds": {name: seconds}, "workload_phases": {name: {phase: seconds}}}. A workload
    that fails is its own failure.

    The first pass builds each workload (a runner once for both its regions) and takes all
    its figures with its first wall-time burst; the workloads stay built, and each later pass
    takes one more burst of every workload that gets several. ``log`` gets a line a workload
    and a line a later pass; ``each`` gets (name, {"figures" or "failed", "seconds",
    "phases", "final"}) once the first pass has measured it, so a run cut short keeps what it
    took, and again with ``"final": True`` once its figures are complete."""
    dev = _Device(device)
    phases = Phases()
    started = time.perf_counter()
    prime(dev, phases)
    out: dict = {"workloads": {}, "failed": {}, "seconds": {}, "workload_phases": {}}
    ledger = _Ledger(out, phases)
    built: dict = {}  # the fastrnns models by runner, shared by their regions, kept
    later: dict[str, tuple[Region, int]] = {}  # workloads with more bursts to take
    current, baseline = None, 0
    for name in names:
        with ledger.workload(name):
            try:
                family, what, _ = split(name)
                if (family, what) != current or family == "autograd":
                    current, baseline = (family, what), dev.allocated()
                with phases.timing("build"):
                    region = build(name, tables, dev.name, preset, built=built)
                    # torch, the models and their inputs outlive every call: the collection
                    # before each call (as upstream's) then scans microseconds' worth, not
                    # 200,000 objects
                    freeze_long_lived_objects()
                out["workloads"][name], size = _one(region, dev, baseline, phases)
                if size:
                    later[name] = (region, size)
            except Exception as exc:  # noqa: BLE001 (one workload's failure is its own)
                out["failed"][name] = "".join(traceback.format_exception_only(exc)).strip()
        _hand_over(name, out, log, each, final=name not in later)
    _later_passes(later, dev, out, ledger, log)
    for name in later:
        _hand_over(name, out, None, each, final=True)
    later.clear()
    _release(built)
    phases.seconds["total"] = time.perf_counter() - started
    out["phases"] = phases.seconds
    return out


def _later_passes(later: dict[str, tuple[Region, int]], device: _Device, out: dict,
                  ledger: _Ledger, log: Callable[[str], None] | None) -> None:
    """Passes 2 to BURSTS: a burst of each workload in ``later``, after one untimed call
    (the workloads before it have run since), and its fastest burst made its ``wall``."""
    for number in range(2, BURSTS + 1):
        began = time.perf_counter()
        for name, (region, size) in later.items():
            if name in out["failed"]:
                continue
            with ledger.workload(name), ledger.phases.timing("wall-time samples"):
                try:
                    region.run()
                    device.synchronize()
                    figures = out["workloads"][name]
                    figures["wall_bursts"].append(_wall(region, device, size))
                    figures["wall"] = fastest(figures["wall_bursts"])
                except Exception as exc:  # noqa: BLE001
                    del out["workloads"][name]
                    out["failed"][name] = "".join(
                        traceback.format_exception_only(exc)).strip()
        if log is not None and later:
            log(f"wall-time pass {number} of {BURSTS}: a burst of {len(later)} workloads in "
                f"{time.perf_counter() - began:.1f} s")


def _hand_over(name: str, out: dict, log: Callable[[str], None] | None,
               each: Callable[[str, dict], None] | None, *, final: bool) -> None:
    if log is not None:
        log(describe(name, out, out["seconds"][name]))
    if each is not None:
        done = ({"failed": out["failed"][name]} if name in out["failed"]
                else {"figures": out["workloads"][name]})
        each(name, {**done, "seconds": out["seconds"][name],
                    "phases": dict(out["workload_phases"][name]), "final": final})


def _release(built: dict) -> None:
    for workload in built.values():
        workload.close()
    built.clear()
    release_long_lived_objects()  # the workloads' objects become collectable again


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
