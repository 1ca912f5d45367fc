"""Timing a (model, task) pair as upstream's run_model does: build, one warm-up call, then
``num_iters`` timed calls, each between device synchronisations."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from torchpulse.autograd.choices import ALL_TASKS
from torchpulse.autograd.models import BY_NAME, MODELS, ModelDef
from torchpulse.autograd.tasks import make_v, run_once
from torchpulse.errors import TorchpulseError
from torchpulse.presets import resolve_preset


class SelectionError(TorchpulseError, ValueError):
    """An unknown model or task name, or a GPU this machine does not have."""


@dataclass(frozen=True)
class Timing:
    model: str
    task: str
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
    """A model built at a size with the task's vector: ``call()`` runs the task once."""

    def __init__(self, model: ModelDef, task: str, device: torch.device, preset: str,
                 seed: int) -> None:
        torch.manual_seed(seed)
        self.fn, self.inputs = model.getter(device, model.size(preset))
        self.v = make_v(self.fn, self.inputs, task)
        self.task = task

    def call(self) -> object:
        return run_once(self.fn, self.inputs, self.task, self.v)


def run_model(model: ModelDef, task: str, device: torch.device, preset: str, num_iters: int,
              seed: int = 0) -> Timing:
    sync: Callable[[], None] = (torch.cuda.synchronize if device.type == "cuda"
                                else (lambda: None))
    prepared = Prepared(model, task, device, preset, seed)
    prepared.call()  # warm-up (upstream's smoke test with --num-iters 0)
    times = []
    for _ in range(num_iters):
        sync()
        start = time.perf_counter()
        prepared.call()
        sync()
        times.append(time.perf_counter() - start)
    return Timing(model.name, task, tuple(times))


def device_for_gpu(gpu: int) -> torch.device:
    """Upstream's --gpu: an index, -1 for the CPU, -2 for a GPU when there is one."""
    if gpu == -2:
        gpu = 0 if torch.cuda.is_available() else -1
    if gpu >= 0 and not (torch.cuda.is_available() and gpu < torch.cuda.device_count()):
        raise SelectionError(f"--gpu {gpu}: no such CUDA device here (use --gpu -1 for CPU)")
    return torch.device("cpu" if gpu < 0 else f"cuda:{gpu}")


def run_all(pairs: Sequence[tuple[ModelDef, str]], device: torch.device,
            preset: str | None = None, num_iters: int = 10, seed: int = 0,
            threads: int | None = None,
            done: Callable[[Timing], None] | None = None) -> list[Timing]:
    """Time every pair in turn at ``preset`` (default: the device's) with ``threads`` torch
    threads (default: the preset's); ``done`` hears of each as it finishes."""
    sizes = resolve_preset(preset, device.type)
    threads = threads or sizes.num_threads
    if threads:
        torch.set_num_threads(threads)
    timings = []
    for model, task in pairs:
        timing = run_model(model, task, device, sizes.name, num_iters, seed)
        timings.append(timing)
        if done is not None:
            done(timing)
    return timings
