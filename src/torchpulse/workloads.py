"""The workloads by name, built as regions to run: what callgrind counts on the CPU and what
the GPU suite measures on CUDA, the same regions the wall-time suites time.

A name is ``rnns/<runner>/forward|backward`` (the fastrnns LSTMs, fixed and variable length),
``cnns/<runner>/forward|backward`` (the ResNets) or ``autograd/<model>/<task>`` (the
functional-autograd pairs); ``instructions/family.py`` lists them. A ``Region`` runs one call;
the measured part of it runs inside ``clock.region()`` of the clock it is given (anything with
a ``region()`` context manager: timing.RegionClock, a profiler's or a memory meter's).
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchpulse.instructions.family import split

Run = Callable[..., None]  # run(clock=None): one call, its measured part in clock.region()


@dataclass
class Region:
    run: Run
    # calls after which its times are steady (TorchScript's profiling executor needs 4)
    settle: int


def _fastrnns_region(workload: Any, region: str) -> Run:
    if region == "forward":
        return lambda clock=None: workload.forward(clock)
    if region == "backward":
        if workload.runner.forward_only:
            raise ValueError(f"{workload.runner.name} has no backward")
        # the forward pass runs too, outside the region
        return lambda clock=None: workload.step(backward_clock=clock)
    raise ValueError(f"unknown region {region!r}")


def _autograd_region(model: str, task: str, row: dict, device: str, preset: str) -> Run:
    import torch

    from torchpulse.autograd.models import BY_NAME, is_supported
    from torchpulse.autograd.run import Prepared
    from torchpulse.presets import DEFAULT_SEED

    if not is_supported(model, task):
        raise ValueError(f"{model} does not run {task}")
    sized = dataclasses.replace(BY_NAME[model], sizes={preset: row})
    prepared = Prepared(sized, task, torch.device(device), preset, DEFAULT_SEED)

    def run(clock=None):
        gc.collect()
        if clock is None:
            prepared.call()
            return
        with clock.region():
            prepared.call()

    return run


def build(name: str, tables: dict, device: str, preset: str, *,
          built: dict | None = None) -> Region:
    """The workload ``name`` at ``tables`` ({"fastrnns": a Preset's fields, "autograd":
    model -> its getter's sizes}) on ``device``, named ``preset`` (the name its sizes are
    filed under). ``built`` keeps the fastrnns models already built, by runner: the forward
    and backward regions of a runner then share one model (the GPU suite: one build a
    runner); without it every region is built afresh (the instruction counts). Seeded with
    presets.DEFAULT_SEED, as the suites are. ValueError for a name this torchpulse does not
    have."""
    family, what, region = split(name)
    if family in ("rnns", "cnns"):
        from torchpulse.fastrnns.runners import RUNNERS, Workload
        from torchpulse.presets import Preset

        if what not in RUNNERS or RUNNERS[what].family != family:
            raise ValueError(f"runner {what!r} is not in this version of torchpulse")
        workload = None if built is None else built.get(what)
        if workload is None:
            workload = Workload(RUNNERS[what], Preset.from_sizes(preset, tables["fastrnns"]),
                                device)
            if built is not None:
                built[what] = workload
        return Region(_fastrnns_region(workload, region), RUNNERS[what].settle_iterations)
    if family == "autograd":
        if what not in tables["autograd"]:
            raise ValueError(f"no sizes for the autograd model {what!r}")
        return Region(_autograd_region(what, region, tables["autograd"][what], device,
                                       preset), 1)
    raise AssertionError(family)  # split() admits no other
