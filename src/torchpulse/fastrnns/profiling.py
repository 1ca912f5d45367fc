"""``torchpulse profile``: runners under torch.profiler, a Chrome trace and a table each.

Replaces upstream fastrnns' nvprof wrapper with torch.profiler, which works on CPU and CUDA.
The profiled steps are the same training steps the benchmarks time, labelled
"## forward ##" and "## backward ##" as upstream, after the usual warm-up.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from torchpulse.errors import TorchpulseError
from torchpulse.fastrnns.bench import describe_error
from torchpulse.fastrnns.runners import Runner, Workload
from torchpulse.files import write_atomically
from torchpulse.presets import Preset
from torchpulse.timing import is_cuda

TABLE_ROWS = 40


class OutputError(TorchpulseError, ValueError):
    """An output path that is not a directory."""


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
    write_atomically(trace, lambda path: prof.export_chrome_trace(str(path)))
    sort_by = "self_device_time_total" if is_cuda(device) else "self_cpu_time_total"
    text = prof.key_averages().table(sort_by=sort_by, row_limit=TABLE_ROWS)
    header = (f"# {runner.name}: {nloops} training steps (forward + backward) after {warmup} "
              f"warm-up, preset {preset.name}, device {device}, sorted by {sort_by}\n")
    write_atomically(table, lambda path: path.write_text(header + text + "\n"))
    return ProfileFiles(runner.name, trace, table, count_trace_events(trace))


def count_trace_events(path: Path) -> int:
    with path.open() as f:
        return len(json.load(f).get("traceEvents", []))



def profile_all(runners: Sequence[Runner], preset: Preset, device: str, nloops: int,
                warmup: int, output: Path, say: Callable[[str], None],
                progress: Callable[[str], None], failed: Callable[[str], None]) -> list[str]:
    """Profile each runner in turn into ``output``: what is about to run goes to
    ``progress``, the files written to ``say``; a runner that fails is named on ``failed``
    and the others still run. Returns the names of the runners that failed."""
    if output.exists() and not output.is_dir():
        raise OutputError(f"--output {output} exists and is not a directory")
    failures = []
    for runner in runners:
        progress(f"profiling {runner.name}: {warmup} warm-up + {nloops} profiled steps "
            f"(preset {preset.name}, {device})")
        try:
            files = profile_runner(runner, preset, device, nloops, warmup, output)
        except Exception as exc:  # name the runner, go on with the others
            failures.append(runner.name)
            failed(f"runner {runner.name} failed: {describe_error(exc)}")
            continue
        say(f"{runner.name}: {files.trace} ({files.events} events), {files.table}")
    return failures
