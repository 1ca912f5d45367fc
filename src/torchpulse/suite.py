"""Process-wide state for the asv suites in benchmarks/.

asv runs every benchmark in its own process and, since asv_runner 0.3, re-runs ``setup``
before every sample (asv#966). Building a workload (model, inputs, TorchScript compilation,
warm-up) therefore happens once per process here, and ``setup`` only looks it up.

The sizes come from the suites (API 2): they pass the table of the working tree they were
loaded from (torchpulse/sizes.py there), so every commit is measured at the same sizes,
whatever this commit's own table says.
"""

from __future__ import annotations

import dataclasses
import functools
import json

from torchpulse.fastrnns.runners import RUNNERS, Workload
from torchpulse.gpu import GPU_SUITE_ENV
from torchpulse.presets import Preset, default_device, resolve_preset
from torchpulse.timing import RegionClock

# What benchmarks/ may rely on in this module. Benchmarks come from the working tree but the
# package from each commit, so the suite skips commits whose package offers less; bump this
# (and benchmarks/_common.py's requirement) when the suite starts calling something new.
# 2: workload() and autograd_task() take the sizes table from the suites.
# 3: autograd_task() takes the definition revision the suites measure (sizes.REVISIONS).
# 4: count_instructions() counts the instruction family under callgrind.
# 5: gpu_memory() read the CUDA caching allocator's peak over a training step (API 6's
#    measure_gpu() took it over; the suites no longer call it).
# 6: measure_gpu() measures every CUDA workload in one process (torchpulse.gpu).
# 7: count_instructions() counts in a normalised process, a child per workload, windows of
#    calls: counts of another method, which the suites do not mix with API 4-6's.
# 8: the instruction family's ResNets are built at a counting width (Preset.image_width, the
#    autograd ResNet-18's ``width``): an older package would fail or count them at full width.
# 9: the instruction family counts under torchpulse's own malloc (instructions/allocator.c):
#    every count is lower, so the suites do not mix them with API 7-8's.
# 10: the counted process reads byte-code its stage compiled, and its realpath stops at the
#    stage's links (instructions/stage_paths.py): the same counts from any environment's
#    path, up to 0.6 % from API 9's, so the suites do not mix them.
# 11: the transformer family: transformer() builds it for the wall-time suite, and the
#    counts and the GPU suite take its names (workloads/registry.py).
# 12: model() builds any of registry.MODEL_FAMILIES for the wall-time suites (transformer()
#    is gone: the suites call it on API 11 packages only).
API_VERSION = 12


@functools.cache
def device() -> str:
    return default_device()


@functools.cache
def clock() -> RegionClock:
    """The clock asv reads as its ``timer``: it advances only inside measured regions."""
    return RegionClock(device())


def read_clock() -> float:
    return clock()()


def preset_name() -> str:
    """The preset this process measures at: $TORCHPULSE_PRESET, else the device's."""
    return resolve_preset(device=device()).name


def _row(table: dict, *keys: str) -> dict:
    """table[keys...] for this preset; NotImplementedError (asv's "skipped") when the table
    has no sizes for it."""
    row = table
    for key in (*keys, preset_name()):
        if not isinstance(row, dict) or key not in row:
            raise NotImplementedError(f"no sizes for {'/'.join((*keys, preset_name()))}")
        row = row[key]
    return row


def _frozen(row: dict) -> str:
    return json.dumps(row, sort_keys=True)  # hashable, for the per-process caches


def workload(runner: str, family: str, sizes: dict) -> Workload:
    """The runner built at ``sizes`` (sizes.FASTRNNS: preset -> Preset fields) for this
    device's preset, not yet warmed up; built once per process.

    Raises NotImplementedError (asv's "skipped") when this version of torchpulse lacks the
    runner or a size field the table gives.
    """
    return _workload(runner, family, _frozen(_row(sizes)))


@functools.cache
def _workload(runner: str, family: str, row: str) -> Workload:
    spec = RUNNERS.get(runner)
    if spec is None or spec.family != family:
        raise NotImplementedError(f"runner {runner!r} is not in this version of torchpulse")
    try:
        preset = Preset.from_sizes(preset_name(), json.loads(row))
    except TypeError as exc:  # a size field this version does not have
        raise NotImplementedError(f"sizes this torchpulse cannot take: {exc}") from None
    return Workload(spec, preset, device())


def model(family: str, name: str, sizes: dict):  # -> the family's Model
    """Model ``name`` of the model family ``family`` (workloads/registry.py MODEL_FAMILIES)
    built at ``sizes`` (its table in sizes.py: model -> preset -> sizes) for this device's
    preset, not yet warmed up; built once per process. NotImplementedError (asv's
    "skipped") for a family, model or preset this torchpulse has no sizes or model for."""
    return _model(family, name, _frozen(_row(sizes, name)))


@functools.cache
def _model(family: str, name: str, row: str):
    import torch

    from torchpulse.workloads.regions import model_class
    from torchpulse.workloads.registry import MODEL_FAMILIES

    if family not in MODEL_FAMILIES:
        raise NotImplementedError(f"this commit's torchpulse has no {family} family")
    preset = resolve_preset(device=device())
    if preset.num_threads:
        torch.set_num_threads(preset.num_threads)
    return model_class(family)(name, json.loads(row), device(), preset.seed)


_warm: set[tuple[int, str]] = set()


def warm_up(built, kind: str) -> None:
    """Warm ``built`` (a fastrnns Workload or a model family's model) up once per process for
    what is measured: "forward" passes or training "step"s, until times are steady (a
    runner's ``settle_iterations``, at most its preset's warm-up; a model's ``settle``)."""
    if kind not in ("forward", "step"):
        raise ValueError(f"kind must be 'forward' or 'step', not {kind!r}")
    if (id(built), kind) in _warm:
        return
    run = built.forward if kind == "forward" else built.step
    calls = getattr(built, "settle", None)
    if calls is None:
        calls = min(built.runner.settle_iterations, built.preset.warmup)
    for _ in range(calls):
        run()
    _warm.add((id(built), kind))


def autograd_task(model: str, task: str, sizes: dict,
                  revision: int = 1):  # -> autograd.run.Prepared
    """A functional-autograd (model, task) pair built at ``sizes`` (sizes.AUTOGRAD: model ->
    preset -> the getter's sizes) for this device's preset, warmed up once per process.
    NotImplementedError (asv's "skipped") for a pair the model does not run (deepspeech has
    no double backward; most models run vjp, vhp and jvp only), or whose definition here is
    not the ``revision`` the suites measure."""
    from torchpulse.sizes import REVISIONS

    here = REVISIONS.get(model, 1)
    if here != revision:
        raise NotImplementedError(f"this commit's {model} is revision {here}; the suites "
                                  f"measure revision {revision}")
    return _autograd_task(model, task, _frozen(_row(sizes, model)))


@functools.cache
def _autograd_task(model: str, task: str, row: str):
    import torch

    from torchpulse.autograd.models import BY_NAME, is_supported
    from torchpulse.autograd.run import Prepared

    if not is_supported(model, task):
        raise NotImplementedError(f"{model} does not run {task}")
    preset = resolve_preset(device=device())
    if preset.num_threads:
        torch.set_num_threads(preset.num_threads)
    sized = dataclasses.replace(BY_NAME[model], sizes={preset.name: json.loads(row)})
    prepared = Prepared(sized, task, torch.device(device()), preset.name, preset.seed)
    prepared.call()  # warm-up, outside any timed region
    return prepared


def synchronize() -> None:
    """Wait for the device, so a timed region ends when its work does."""
    if device() == "cuda":
        import torch

        torch.cuda.synchronize()


def compile_zoo(models: list[str], backends: list[str]) -> dict:
    """The compile suite's measurements of every (model, backend) at the device's preset, in
    this process (asv's setup_cache): see torchpulse.compile.tracking.

    Plain dicts, floats and strings only: asv unpickles this once per parameter combination,
    and unpickling torchpulse classes would import the compile package each time."""
    import dataclasses

    from torchpulse.compile.tracking import measure_zoo

    preset = resolve_preset(device=device())
    zoo = measure_zoo(models, backends, preset.name, device(), threads=preset.num_threads)
    return {"models": {key: dataclasses.asdict(t) for key, t in zoo["models"].items()},
            "failure_rate": dict(zoo["failure_rate"])}


def count_instructions(workloads: list[str], tables: dict) -> dict:
    """The instructions of every workload of the family (``workloads``, names of
    torchpulse.workloads.registry) at ``tables`` (sizes.counting() of the working tree),
    counted in one callgrind process (asv's setup_cache), or taken from an earlier count of
    the same inputs (instructions.reuse; not with $TORCHPULSE_COUNT_REUSE=no):
    {"counts": {name: instructions},
    "failed": {name: error}, "unavailable": why none could be counted, or ""}.

    Plain dicts, ints and strings only (asv unpickles this once per parameter). CUDA runs
    count nothing: the family counts CPU work, and a GPU's work is invisible to callgrind."""
    import os
    import sys
    import time

    from torchpulse.instructions import profiles, summary
    from torchpulse.instructions.count import CountingError, count, reuse_folder

    if device() != "cpu":
        return {"counts": {}, "failed": {},
                "unavailable": "instruction counts are taken on CPU runs only"}
    commit, started = os.environ.get("ASV_COMMIT", ""), time.monotonic()
    try:
        counted, failed = count(workloads, tables, reuse_in=reuse_folder(),
                                log=lambda line: print(f"instructions: {line}",
                                                       file=sys.stderr, flush=True))
    except CountingError as exc:
        summary.write(summary.Summary(commit, 0, 0, 0, time.monotonic() - started, True))
        return {"counts": {}, "failed": {}, "unavailable": str(exc)}
    reused = sum(c.reused for c in counted.values())
    # for the dashboard to say (asv keeps this function's output to itself)
    summary.write(summary.Summary(commit, len(counted) - reused, reused, len(failed),
                                  time.monotonic() - started))
    stored = profiles.write_from_asv({name: c.functions for name, c in counted.items()},
                                     {name: c.instructions for name, c in counted.items()})
    if stored is not None:
        print(f"instructions: function profiles stored in {stored}", file=sys.stderr)
    return {"counts": {name: c.instructions for name, c in counted.items()},
            "failed": failed, "unavailable": ""}




def measure_gpu(workloads: list[str], tables: dict) -> dict:
    """Every workload of ``workloads`` (names of torchpulse.workloads.registry) measured in
    this process on CUDA at this device's preset of ``tables`` (sizes.by_preset() of the
    working tree): torchpulse.gpu.measure's figures, plus {"skipped": {name: why},
    "unavailable": why nothing was measured, or ""}.

    Plain dicts, lists and numbers only (asv unpickles this once per benchmark)."""
    import os
    import sys

    if device() == "cpu" and os.environ.get(GPU_SUITE_ENV) != "cpu":
        return {"unavailable": "the GPU suite measures CUDA runs only", "skipped": {},
                "workloads": {}, "failed": {}}
    from torchpulse.gpu.measure import measure, sizes_at
    from torchpulse.sizes import REVISIONS
    from torchpulse.workloads.registry import row, split

    preset = preset_name()
    rows = sizes_at(tables, preset)
    skipped, run = {}, []
    for name in workloads:
        family, what, _ = split(name)
        if row(name, rows) is None:
            skipped[name] = f"no sizes for {name} at the {preset} preset"
        elif family == "autograd" and REVISIONS.get(what, 1) != tables["revisions"].get(what, 1):
            skipped[name] = (f"this commit's {what} is revision {REVISIONS.get(what, 1)}; the "
                             f"suite measures revision {tables['revisions'].get(what, 1)}")
        else:
            run.append(name)
    measured = measure(run, rows, device(), preset,
                       log=lambda line: print(f"bench_gpu: {line}", file=sys.stderr,
                                              flush=True))
    _store_kernel_profiles(measured["workloads"])
    return {**measured, "skipped": skipped, "unavailable": ""}


def _store_kernel_profiles(workloads: dict) -> None:
    """File each workload's kernels (device ns and launches a call) and synchronisation
    sites beside asv's results, as the instruction counts' functions are, and take them
    out of what asv unpickles once per benchmark."""
    import statistics
    import sys

    from torchpulse.instructions import profiles

    found = {name: figures.pop("profile") for name, figures in workloads.items()
             if isinstance(figures.get("profile"), dict)}
    totals = {profiles.KERNEL_TIME: "kernel_time", profiles.KERNEL_LAUNCHES: "kernels",
              profiles.SYNCS: "syncs"}
    for kind, figure in totals.items():
        def total(name: str, figure: str = figure) -> int:
            value = workloads[name].get(figure)
            if isinstance(value, list):  # kernel time: seconds, a sample a profiled call
                value = statistics.median(value) * 1e9 if value else 0
            return int(value or 0)

        stored = profiles.write_from_asv({n: p[kind] for n, p in found.items()},
                                         {n: total(n) for n in found}, kind)
        if stored is not None:
            print(f"bench_gpu: {kind.replace('_', ' ')} profiles stored in {stored}",
                  file=sys.stderr)
