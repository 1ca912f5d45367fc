"""The ten torch.autograd.functional tasks upstream times, the vectors they need, and the
same tasks through functorch's transforms (upstream's ``functorch <task>`` rows)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.autograd import functional

from torchpulse.autograd.choices import ALL_TASKS, VECTORIZED_TASKS
from torchpulse.autograd.functional import LossFn
from torchpulse.errors import TorchpulseError

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


class FunctorchUnsupported(TorchpulseError, RuntimeError):
    """A task functorch has no transform for (jacobian without vectorisation): upstream
    prints why and writes no row."""


def functorch_available() -> bool:
    """Upstream adds its functorch rows when ``import functorch`` works; so does torchpulse
    (the transforms themselves are torch.func's, which functorch re-exports)."""
    try:
        import functorch  # noqa: F401
    except ImportError:
        return False
    return True


def functorch_function(task: str) -> Callable[[LossFn, Inputs, V], object]:
    """The task through torch.func's transforms, as upstream's get_task_functorch builds it
    (under no_grad, all inputs differentiated); results shaped as torch.autograd.functional's
    so that the two can be checked against each other."""
    from torch import func as ft

    def argnums(inputs: Inputs) -> tuple[int, ...]:
        return tuple(range(len(inputs)))

    def vjp(fn: LossFn, inputs: Inputs, v: V) -> object:
        out, pullback = ft.vjp(fn, *inputs)
        return out, pullback(v)

    def jvp(fn: LossFn, inputs: Inputs, v: V) -> object:
        return ft.jvp(fn, inputs, v)

    def vhp(fn: LossFn, inputs: Inputs, v: V) -> object:
        _, pullback, value = ft.vjp(ft.grad_and_value(fn, argnums(inputs)), *inputs,
                                    has_aux=True)
        return value, pullback(v)

    def hvp(fn: LossFn, inputs: Inputs, v: V) -> object:
        _, product, value = ft.jvp(ft.grad_and_value(fn, argnums(inputs)), inputs, v,
                                   has_aux=True)
        return value, product

    def jacfwd(fn: LossFn, inputs: Inputs, v: V) -> object:
        return ft.jacfwd(fn, argnums(inputs))(*inputs)

    def jacrev(fn: LossFn, inputs: Inputs, v: V) -> object:
        return ft.jacrev(fn, argnums(inputs))(*inputs)

    def hessian(fn: LossFn, inputs: Inputs, v: V) -> object:
        return ft.hessian(fn, argnums(inputs))(*inputs)

    def hessian_fwdrev(fn: LossFn, inputs: Inputs, v: V) -> object:
        n = argnums(inputs)
        return ft.jacfwd(ft.jacrev(fn, argnums=n), argnums=n)(*inputs)

    def hessian_revrev(fn: LossFn, inputs: Inputs, v: V) -> object:
        n = argnums(inputs)
        return ft.jacrev(ft.jacrev(fn, argnums=n), argnums=n)(*inputs)

    table = {"vjp": vjp, "jvp": jvp, "vhp": vhp, "hvp": hvp, "jacfwd": jacfwd,
             "jacrev": jacrev, "hessian": hessian, "hessian_fwdrev": hessian_fwdrev,
             "hessian_revrev": hessian_revrev}
    if task == "jacobian":
        raise FunctorchUnsupported("functorch has no equivalent of autograd.functional."
                                   "jacobian with vectorize=False")
    if task not in table:
        raise ValueError(f"unknown task {task!r}")
    return torch.no_grad()(table[task])


def run_once_functorch(fn: LossFn, inputs: Inputs, task: str, v: V) -> object:
    return functorch_function(task)(fn, inputs, v)


def check_functorch(fn: LossFn, inputs: Inputs, task: str, v: V) -> None:
    """Upstream's consistency check of the warm-up call: the functorch result must match
    torch.autograd.functional's (rtol 1e-5, atol 5e-3; 1e-2 for vhp). AssertionError if not."""
    got = run_once_functorch(fn, inputs, task, v)
    expected = run_once(fn, inputs, task, v)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-2 if task == "vhp" else 5e-3,
                               msg=lambda detail: f"functorch {task} disagrees with "
                               f"torch.autograd.functional: {detail}")
