"""``torchpulse compare --python A --python B``: what one installed environment (a torch build)
does against another on this machine, workload by workload.

Both sides run this torchpulse's workloads (workloads/regions.py, at the counting sizes of
``sizes.counting()``), so the only difference between them is the environment: its torch,
and whatever is installed beside it. Per workload:

* **instructions** per call, counted under callgrind in each environment (instructions/count:
  the counted process is staged from *that* environment's files, and a kept count is reused
  only where those very files were counted before); one count a side decides, as they repeat;
* **wall time** per call, timed in fresh processes of each environment (torchpulse.wall), the
  two environments alternating round by round, decided by compare's sequential test;
* **peak memory**: the process's peak resident memory while the workload is built and run;
* with ``gpu``, on CUDA in a process of each environment (torchpulse.gpu.worker, as
  ``bench_gpu`` measures a commit): **kernel time** (device seconds a call, decided in
  rounds as wall time is, by the device threshold), the **kernels** a call launches and its
  **synchronizations** (exact: one run a side decides), and its **GPU memory**; for a moved
  kernel time, the kernels behind it (their device time a call in each environment).

The decisions are ``culprit.compare``'s: this module is only a ``Measure`` whose "commits"
are the two environments, and what the counts say besides their totals (the functions that
grew or shrank, profiles.differences).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse import allocation
from torchpulse.culprit.runs import Run, RunError
from torchpulse.instructions import count as counting
from torchpulse.instructions import normalised

INSTRUCTIONS, SECONDS, PEAK = "instructions", "wall time", "peak memory"
KERNEL_TIME, KERNELS, SYNCS, GPU_MEMORY = "kernel time", "kernels", "syncs", "gpu memory"
CPU_METRICS = (INSTRUCTIONS, SECONDS, PEAK)
GPU_METRICS = (KERNEL_TIME, KERNELS, SYNCS, GPU_MEMORY)
UNITS = {INSTRUCTIONS: "instructions", SECONDS: "seconds", PEAK: "bytes",
         KERNEL_TIME: "device seconds", KERNELS: "kernels", SYNCS: "synchronizations",
         GPU_MEMORY: "bytes"}
GPU_PRESET = "cuda"  # the sizes bench_gpu measures a CUDA commit at
PRESET = "instructions"  # the sizes' name: the counting sizes, for the wall time too
SAMPLE_SECONDS = 0.2  # seconds of calls a workload is timed for in one process
WORKER_TIMEOUT = 3600.0


def key(workload: str, metric: str) -> str:
    return f"{workload} [{metric}]"


def split_key(name: str) -> tuple[str, str]:
    """(workload, metric) of a key."""
    workload, _, metric = name.rpartition(" [")
    return workload, metric.rstrip("]")


@dataclass
class Side:
    """One environment: its interpreter, the torch it imports and what its count found."""

    label: str
    python: str
    build: dict = field(default_factory=dict)  # torchpulse.wall.build_identity()
    counted: dict[str, counting.Counted] = field(default_factory=dict)
    count_failed: dict[str, str] = field(default_factory=dict)
    # per workload, what its first CUDA measurement was made of (gpu.trace.profile)
    gpu_profiles: dict[str, dict] = field(default_factory=dict)
    gpu_failed: dict[str, str] = field(default_factory=dict)


class EnvironmentRuns:
    """The ``Measure`` of culprit.compare over two environments: ``self(label, keys)``
    measures the environment ``label`` ("A" or "B"). The first call of a side, with every
    key, counts its instructions (once: they repeat) and times every workload; later calls
    time the workloads whose keys are still undecided."""

    def __init__(self, pythons: dict[str, str], workloads: Sequence[str], tables: dict, *,
                 instructions: bool = True, seconds: float = SAMPLE_SECONDS,
                 log: Callable[[str], None] | None = None,
                 reuse_in: Path | None = None, gpu: Sequence[str] = (),
                 gpu_tables: dict | None = None, gpu_preset: str = GPU_PRESET) -> None:
        # absolute (not resolved: a virtualenv's interpreter is a link to its base): the
        # workers run from a folder of their own
        self.sides = {label: Side(label, os.path.abspath(python))
                      for label, python in pythons.items()}
        self.workloads, self.tables = list(workloads), tables
        self.instructions, self.seconds, self.log = instructions, seconds, log
        # the workloads measured on CUDA too, at bench_gpu's sizes tables ({"fastrnns",
        # "autograd", "revisions"})
        self.gpu, self.gpu_tables, self.gpu_preset = list(gpu), gpu_tables, gpu_preset
        self.reuse_in = reuse_in
        self._sources = Path(tempfile.mkdtemp(prefix="torchpulse-environments-"))
        normalised.copy_package(normalised.PACKAGE, self._sources / normalised.PACKAGE.name)

    def close(self) -> None:
        shutil.rmtree(self._sources, ignore_errors=True)

    def __enter__(self) -> EnvironmentRuns:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __call__(self, label: str, keys: Sequence[str] | None = None) -> Run:
        side = self.sides[label]
        run = Run(label, {}, {}, units={})
        names = self.workloads if keys is None else list(dict.fromkeys(
            split_key(k)[0] for k in keys if split_key(k)[1] in (SECONDS, PEAK)))
        if keys is None and self.instructions:
            self._count(side, run)
        peak = None if keys is None else {split_key(k)[0] for k in keys
                                          if split_key(k)[1] == PEAK}
        if names:
            self._time(side, names, run, peak)
        if self.gpu:
            again = self.gpu if keys is None else list(dict.fromkeys(
                split_key(k)[0] for k in keys if split_key(k)[1] in (KERNEL_TIME, GPU_MEMORY)))
            if again:
                self._on_gpu(side, again, run, first=keys is None)
        for k in run.values:
            run.units[k.split("(", 1)[0]] = UNITS[split_key(k)[1]]
        return run

    def _say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)

    def _count(self, side: Side, run: Run) -> None:
        self._say(f"{side.label}: counting the instructions of {len(self.workloads)} "
                  f"workloads in {side.python}")
        counted, failed = counting.count(self.workloads, self.tables, python=side.python,
                                         reuse_in=self.reuse_in,
                                         log=lambda line: self._say(f"{side.label}: {line}"))
        side.counted, side.count_failed = counted, failed
        for name in self.workloads:
            k = key(name, INSTRUCTIONS)
            run.values[k] = float(counted[name].instructions) if name in counted \
                else float("nan")

    def _worker(self, side: Side, module: str, what: str, request: dict,
                environ: dict[str, str | None]) -> tuple[dict, dict[str, dict]]:
        """Run ``python -m module`` of ``side`` on ``request`` (JSON on its stdin), from the
        copy of torchpulse's sources, with this process's environment, the allocation
        policy and ``environ`` (None: unset); the build it says it imported (its first
        line) and each workload's line by name. RunError, saying ``what`` it could not do,
        when it names no torch."""
        env = {**os.environ, **allocation.ENVIRONMENT, "PYTHONPATH": str(self._sources)}
        env.pop("PYTHONHOME", None)
        for name, value in environ.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        try:
            done = subprocess.run([side.python, "-m", module], input=json.dumps(request),
                                  env=env, cwd=self._sources, capture_output=True,
                                  text=True, check=False, timeout=WORKER_TIMEOUT)
        except (OSError, subprocess.SubprocessError) as exc:
            raise RunError(f"cannot {what} in {side.python}: {exc}") from None
        lines = [json.loads(line) for line in done.stdout.splitlines()
                 if line.startswith("{")]
        if not lines or "torch" not in lines[0]:
            why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise RunError(f"cannot {what} in {side.python}: {why}")
        return lines[0], {line["name"]: line for line in lines[1:] if "name" in line}

    def _time(self, side: Side, names: list[str], run: Run,
              peak: set[str] | None = None) -> None:
        """Time ``names`` in one process of ``side``; their peak memory too, of those in
        ``peak`` (all when None): once a workload's peak memory is decided, its later
        processes skip what reading it costs."""
        side.build, measured = self._worker(
            side, "torchpulse.wall", "time the workloads",
            {"names": names, "tables": self.tables, "preset": PRESET, "seconds": self.seconds,
             "peak": None if peak is None else sorted(peak)}, {"TORCHPULSE_DEVICE": "cpu"})
        timed = 0
        for name in names:
            got = measured.get(name, {"error": "its process ended first"})
            wall = got.get("wall") or []
            run.values[key(name, SECONDS)] = statistics.median(wall) if wall else float("nan")
            if wall:
                run.samples[key(name, SECONDS)] = list(wall)
                timed += 1
            if peak is None or name in peak:
                got_peak = got.get("peak_rss")
                run.values[key(name, PEAK)] = float(got_peak) if got_peak else float("nan")
        self._say(f"{side.label}: timed {timed} of {len(names)} workloads")

    def _on_gpu(self, side: Side, names: list[str], run: Run, first: bool) -> None:
        """Measure ``names`` on CUDA in one process of ``side``: kernel time (its samples)
        and GPU memory every time; the kernels and synchronizations, and what the calls are
        made of, the first time (they repeat)."""
        _, measured = self._worker(
            side, "torchpulse.gpu.worker", "measure the workloads on CUDA",
            {"names": names, "tables": self.gpu_tables, "preset": self.gpu_preset},
            {"TORCHPULSE_DEVICE": None})
        nan = float("nan")
        for name in names:
            got = measured.get(name, {"error": "its process ended first"})
            if "error" in got:
                side.gpu_failed[name] = str(got["error"])
            samples = [float(x) for x in got.get("kernel_time") or []]
            run.values[key(name, KERNEL_TIME)] = statistics.median(samples) if samples \
                else nan
            if samples:
                run.samples[key(name, KERNEL_TIME)] = samples
            memory = got.get("gpu_memory")
            run.values[key(name, GPU_MEMORY)] = float(memory) if memory else nan
            if first:
                for metric, figure in ((KERNELS, "kernels"), (SYNCS, "syncs")):
                    value = got.get(figure)
                    run.values[key(name, metric)] = float(value) \
                        if isinstance(value, (int, float)) else nan
                if isinstance(got.get("profile"), dict):
                    side.gpu_profiles[name] = got["profile"]
        self._say(f"{side.label}: measured {len(names) - sum(n in side.gpu_failed for n in names)}"
                  f" of {len(names)} workloads on CUDA")


def changes_behind(a: Side, b: Side, workload: str, metric: str, direction: int):
    """What is behind a moved ``metric`` of ``workload``: profiles.differences of the two
    sides' functions (own instructions a call; INSTRUCTIONS) or kernels (device ns a call;
    KERNEL_TIME), what grew for ``direction`` 1, what shrank for -1; () where a side has
    none."""
    from torchpulse.instructions import profiles

    before, after = _made_of(a, workload, metric), _made_of(b, workload, metric)
    if before is None or after is None:
        return ()
    return profiles.differences(before, after, direction=direction)


def _made_of(side: Side, workload: str, metric: str) -> dict | None:
    if metric == INSTRUCTIONS:
        counted = side.counted.get(workload)
        return counted.functions if counted is not None else None
    table = side.gpu_profiles.get(workload, {}).get("kernel_time")
    return table if isinstance(table, dict) else None
