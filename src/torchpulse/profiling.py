"""``torchpulse profile``: runners under torch.profiler, a Chrome trace and a table each.

Replaces upstream fastrnns' nvprof wrapper with torch.profiler, which works on CPU and CUDA.
The profiled steps are the same training steps the benchmarks time, labelled
"## forward ##" and "## backward ##" as upstream, after the usual warm-up.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from torchpulse.presets import Preset
from torchpulse.runners import Runner, Workload
from torchpulse.timing import is_cuda

TABLE_ROWS = 40


@dataclass(frozen=True)
class ProfileFiles:
    runner: str
    trace: Path
    table: Path
    events: int


def profile_runner(
    runner: Runner, preset: Preset, device: str, nloops: int, warmup: int, output: Path
) -> ProfileFiles:
    """Warm up, profile ``nloops`` training steps, write ``<runner>.trace.json`` (Chrome
    trace) and ``<runner>.txt`` (key averages, sorted by self time on the device)."""
    workload = Workload(runner, preset, device)
    try:
        workload.annotate = True
        workload.warm_up(warmup)
        activities = [ProfilerActivity.CPU]
        if is_cuda(device):
            activities.append(ProfilerActivity.CUDA)
        with profile(activities=activities, record_shapes=True) as prof:
            for _ in range(nloops):
                workload.step()
            if is_cuda(device):
                torch.cuda.synchronize(device)
    finally:
        workload.close()
    output.mkdir(parents=True, exist_ok=True)
    trace = output / f"{runner.name}.trace.json"
    table = output / f"{runner.name}.txt"
    _write_atomically(trace, lambda path: prof.export_chrome_trace(str(path)))
    sort_by = "self_device_time_total" if is_cuda(device) else "self_cpu_time_total"
    text = prof.key_averages().table(sort_by=sort_by, row_limit=TABLE_ROWS)
    header = (f"# {runner.name}: {nloops} training steps (forward + backward) after {warmup} "
              f"warm-up, preset {preset.name}, device {device}, sorted by {sort_by}\n")
    _write_atomically(table, lambda path: path.write_text(header + text + "\n"))
    return ProfileFiles(runner.name, trace, table, count_trace_events(trace))


def count_trace_events(path: Path) -> int:
    with path.open() as f:
        return len(json.load(f).get("traceEvents", []))


def _write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)
