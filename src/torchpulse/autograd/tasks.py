"""The ten torch.autograd.functional tasks upstream times, and the vectors they need."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.autograd import functional

from torchpulse.autograd.choices import ALL_TASKS, VECTORIZED_TASKS
from torchpulse.autograd.functional import LossFn

Inputs = tuple[Tensor, ...]
V = Tensor | tuple[Tensor, ...] | None


def _vectorized(task: str) -> Callable[..., object]:
    def run(fn: LossFn, inputs: Inputs, strict: bool = False) -> object:
        if task == "jacfwd":
            return functional.jacobian(fn, inputs, vectorize=True, strategy="forward-mode")
        if task == "jacrev":
            return functional.jacobian(fn, inputs, vectorize=True)
        if task == "hessian_fwdrev":
            return functional.hessian(fn, inputs, vectorize=True,
                                      outer_jacobian_strategy="forward-mode")
        return functional.hessian(fn, inputs, vectorize=True)  # hessian_revrev

    return run


def task_function(task: str) -> Callable[..., object]:
    """torch.autograd.functional's function for ``task`` (vectorised variants as upstream:
    strict mode off, which vectorize=True requires)."""
    if task in VECTORIZED_TASKS:
        return _vectorized(task)
    if task not in ALL_TASKS:
        raise ValueError(f"unknown task {task!r}")
    return getattr(functional, task)


def make_v(fn: LossFn, inputs: Inputs, task: str) -> V:
    """The vector a task multiplies with: like the output for vjp, like the inputs for jvp,
    hvp and vhp, none for the full Jacobians and Hessians (uniform in [0, 1), as upstream)."""
    def like(t: Tensor) -> Tensor:
        return torch.rand(t.shape, dtype=t.dtype).to(t.device)

    if task == "vjp":
        with torch.no_grad():
            return like(fn(*inputs))
    if task in ("jvp", "hvp", "vhp"):
        return tuple(like(i) for i in inputs)
    return None


def run_once(fn: LossFn, inputs: Inputs, task: str, v: V) -> object:
    func = task_function(task)
    if v is not None:
        return func(fn, inputs, v=v, strict=True)
    return func(fn, inputs, strict=task not in VECTORIZED_TASKS)
