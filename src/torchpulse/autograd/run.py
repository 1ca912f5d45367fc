"""Timing a (model, task) pair as upstream's run_model does: build, one warm-up call, then
``num_iters`` timed calls, each between device synchronisations; and, where functorch
imports, the same pair again through functorch's transforms (upstream's ``functorch <task>``
rows, whose warm-up call is checked against torch.autograd.functional's result)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from torchpulse.autograd.choices import ALL_TASKS
from torchpulse.autograd.models import BY_NAME, MODELS, ModelDef
from torchpulse.autograd.tasks import (
    check_functorch,
    make_v,
    run_once,
    run_once_functorch,
)
from torchpulse.errors import TorchpulseError
from torchpulse.presets import resolve_preset
from torchpulse.text import printable


class SelectionError(TorchpulseError, ValueError):
    """An unknown model or task name, or a GPU this machine does not have."""


FUNCTORCH = "functorch "  # upstream's task-name prefix of a functorch row


@dataclass(frozen=True)
class Timing:
    model: str
    task: str  # "vjp", or "functorch vjp" for the task through functorch's transforms
    times: tuple[float, ...]  # seconds

    @property
    def mean(self) -> float:
        return float(np.mean(self.times)) if self.times else math.nan

    @property
    def var(self) -> float:  # unbiased, as torch.Tensor.var upstream
        return float(np.var(self.times, ddof=1)) if len(self.times) > 1 else math.nan


def select(model_filter: Sequence[str] | None, task_filter: Sequence[str] | None
           ) -> list[tuple[ModelDef, str]]:
    """The pairs to run: every model's own tasks, narrowed by the filters (exact names);
    an unknown name raises SelectionError."""
    for name in model_filter or ():
        if name not in BY_NAME:
            raise SelectionError(f"unknown model {name!r} (models: {', '.join(BY_NAME)})")
    for name in task_filter or ():
        if name not in ALL_TASKS:
            raise SelectionError(f"unknown task {name!r} (tasks: {', '.join(ALL_TASKS)})")
    return [(m, t) for m in MODELS for t in m.tasks
            if (not model_filter or m.name in model_filter)
            and (not task_filter or t in task_filter)]


class Prepared:
    """A model built at a size with the task's vector: ``call()`` runs the task once
    (through functorch's transforms when ``functorch``)."""

    def __init__(self, model: ModelDef, task: str, device: torch.device, preset: str,
                 seed: int, functorch: bool = False) -> None:
        torch.manual_seed(seed)
        self.fn, self.inputs = model.getter(device, model.size(preset))
        self.v = make_v(self.fn, self.inputs, task)
        self.task = task
        self.functorch = functorch

    def call(self) -> object:
        once = run_once_functorch if self.functorch else run_once
        return once(self.fn, self.inputs, self.task, self.v)

    def warm_up(self) -> None:
        """The untimed first call; for functorch, checked against autograd.functional."""
        if self.functorch:
            check_functorch(self.fn, self.inputs, self.task, self.v)
        else:
            self.call()


def run_model(model: ModelDef, task: str, device: torch.device, preset: str, num_iters: int,
              seed: int = 0, functorch: bool = False) -> Timing:
    """Time one pair. Through functorch: RuntimeError for a task it cannot do (jacobian) or
    a model it cannot transform, AssertionError when its result disagrees."""
    sync: Callable[[], None] = (torch.cuda.synchronize if device.type == "cuda"
                                else (lambda: None))
    prepared = Prepared(model, task, device, preset, seed, functorch)
    prepared.warm_up()  # upstream's smoke test with --num-iters 0
    times = []
    for _ in range(num_iters):
        sync()
        start = time.perf_counter()
        prepared.call()
        sync()
        times.append(time.perf_counter() - start)
    return Timing(model.name, FUNCTORCH + task if functorch else task, tuple(times))


def device_for_gpu(gpu: int) -> torch.device:
    """Upstream's --gpu: an index, -1 for the CPU, -2 for a GPU when there is one."""
    if gpu == -2:
        gpu = 0 if torch.cuda.is_available() else -1
    if gpu >= 0 and not (torch.cuda.is_available() and gpu < torch.cuda.device_count()):
        raise SelectionError(f"--gpu {gpu}: no such CUDA device here (use --gpu -1 for CPU)")
    return torch.device("cpu" if gpu < 0 else f"cuda:{gpu}")


@dataclass(frozen=True)
class Failure:
    """A functorch row not written: the pair and why. A RuntimeError (no such transform, as
    for jacobian, or an op the transforms cannot go through, as detr's scipy matcher) is
    upstream's "Failed model using Functorch" and no error; a result that disagrees with
    torch.autograd.functional's is one."""

    model: str
    task: str
    reason: str
    disagrees: bool


def run_all(pairs: Sequence[tuple[ModelDef, str]], device: torch.device,
            preset: str | None = None, num_iters: int = 10, seed: int = 0,
            threads: int | None = None, functorch: bool = False,
            done: Callable[[Timing], None] | None = None,
            failed: Callable[[Failure], None] | None = None) -> list[Timing]:
    """Time every pair in turn at ``preset`` (default: the device's) with ``threads`` torch
    threads (default: the preset's), each followed by its functorch row when ``functorch``;
    ``done`` hears of each timing as it finishes, ``failed`` of each functorch row not
    written."""
    sizes = resolve_preset(preset, device.type)
    threads = threads or sizes.num_threads
    if threads:
        torch.set_num_threads(threads)
    timings = []
    for model, task in pairs:
        variants = (False, True) if functorch else (False,)
        for through_functorch in variants:
            try:
                timing = run_model(model, task, device, sizes.name, num_iters, seed,
                                   through_functorch)
            except (RuntimeError, AssertionError) as exc:
                if not through_functorch:
                    raise
                if failed is not None:
                    failed(Failure(model.name, task, printable(" ".join(str(exc).split())),
                                   isinstance(exc, AssertionError)))
                continue
            timings.append(timing)
            if done is not None:
                done(timing)
    return timings
