"""The workloads by name, built as regions to run: what callgrind counts on the CPU and what
the GPU suite measures on CUDA, the same regions the wall-time suites time.

A name is ``<family>/<runner or model>/<region or task>`` (registry.py lists them). A
``Region`` runs one call; the measured part of it runs inside ``clock.region()`` of the
clock it is given (clock.Clock: the wall clock, the counted region, the profiled clock or
the memory clock).
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchpulse.workloads.clock import Clock
from torchpulse.workloads.registry import MODEL_FAMILIES, row, split

Run = Callable[..., None]  # run(clock: Clock | None = None): one call


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

    def run(clock: Clock | None = None) -> None:
        gc.collect()
        if clock is None:
            prepared.call()
            return
        with clock.region():
            prepared.call()

    return run


def _model_region(model: Any, region: str) -> Run:
    if region == "forward":
        return lambda clock=None: model.forward(clock)
    if region == "backward":  # the forward pass runs too, outside the region
        return lambda clock=None: model.step(backward_clock=clock)
    raise ValueError(f"unknown region {region!r}")


def model_class(family: str) -> type:
    """The ``Model`` of one of registry.MODEL_FAMILIES: built as ``Model(name, row, device,
    seed)``, with ``settle`` (warm-up calls), ``forward(clock)``, ``step(forward_clock,
    backward_clock)`` (a training step, each pass measured on its own clock) and ``close()``
    (its memory given back before the GPU suite builds the next)."""
    import importlib

    return importlib.import_module(f"torchpulse.workloads.{MODEL_FAMILIES[family].module}").Model


def _model(name: str, family: str, what: str, tables: dict, device: str,
           built: dict | None) -> Any:
    """The model of ``name``, shared by its regions through ``built`` as a runner is."""
    from torchpulse.presets import DEFAULT_SEED

    key = f"{family}/{what}"
    model = None if built is None else built.get(key)
    if model is None:
        sizes = row(name, tables)
        if sizes is None:
            raise ValueError(f"no sizes for {key}")
        model = model_class(family)(what, sizes, device, DEFAULT_SEED)
        if built is not None:
            built[key] = model
    return model


def build(name: str, tables: dict, device: str, preset: str, *,
          built: dict | None = None) -> Region:
    """The workload ``name`` at ``tables`` ({"fastrnns": a Preset's fields, "autograd":
    model -> its getter's sizes, each model family: model -> its sizes}) on ``device``, named
    ``preset`` (the name its sizes are filed under). ``built`` keeps the models already
    built, by runner: the forward and backward regions of a runner then share one model
    (the GPU suite: one build a runner); without it every region is built afresh (the
    instruction counts). Seeded with presets.DEFAULT_SEED, as the suites are. ValueError
    for a name this torchpulse does not have."""
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
    if family in MODEL_FAMILIES:
        model = _model(name, family, what, tables, device, built)
        return Region(_model_region(model, region), model.settle)
    raise AssertionError(family)  # split() admits no other
