"""Correctness of the custom LSTM runners against their references.

Each checked runner and its reference are built from the same seed (hence the same weights
and inputs); the tensor each one's backward runs on and every parameter gradient, for one
shared output gradient, must agree within a tolerance (upstream fastrnns uses 1e-3).
Dropout is switched off for the comparison (eval mode; torch's RNN modules stay in training
mode with dropout 0, since cuDNN's RNN backward refuses eval mode).

Differences are max|a - b| / max(1, max|reference|): upstream's absolute difference for
values up to 1, relative beyond. float32 rounding is relative, and gradients summed over
many steps reach ~1000 at the cpu preset (the decomposed layer norm then differs by 0.015
absolute, 1.7e-5 relative).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchpulse.errors import TorchpulseError
from torchpulse.fastrnns.runners import RUNNERS, ModelDef, Runner, get_runners
from torchpulse.models.modes import without_dropout
from torchpulse.presets import Preset

DEFAULT_TOLERANCE = 1e-3


@dataclass(frozen=True)
class CheckResult:
    runner: str
    reference: str
    output_diff: float
    grad_diff: float
    tolerance: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and self.output_diff <= self.tolerance
            and self.grad_diff <= self.tolerance
        )

    @property
    def status(self) -> str:
        if self.error is not None:
            return "error"
        return "ok" if self.ok else "MISMATCH"


class UncheckedError(TorchpulseError, ValueError):
    """A runner that is itself a reference, so there is nothing to check it against."""


def checkable_runners() -> list[str]:
    return [name for name, r in RUNNERS.items() if r.reference is not None]


def select(names: Sequence[str] | None = None) -> list[Runner]:
    """The runners named (default: every checkable one), each with a reference."""
    checkable = checkable_runners()
    runners = get_runners(names or checkable)
    unchecked = [r.name for r in runners if r.reference is None]
    if unchecked:
        verb = "is a reference" if len(unchecked) == 1 else "are references"
        raise UncheckedError(f"{', '.join(unchecked)} {verb}, not checked against one; "
                             f"checkable runners: {', '.join(checkable)}")
    return runners


def _backward_tensor(
    md: ModelDef, context: Callable[[], AbstractContextManager[Any]]
) -> Tensor:
    for module in md.modules:
        without_dropout(module)
    with context():
        output = md.forward(*md.inputs)
        if md.backward_setup is None:  # forward only: its output (gradients still checkable)
            return output[0] if isinstance(output, tuple) else output
        tensor, _ = md.backward_setup(output)
    return tensor


def _scaled_diff(a: Tensor, b: Tensor) -> float:
    """max|a - b| / max(1, max|b|), with b the reference."""
    if not a.numel():
        return 0.0
    a, b = a.detach(), b.detach()
    return float((a - b).abs().max().item()) / max(1.0, float(b.abs().max().item()))


def check_runner(
    runner: Runner, preset: Preset, device: str, tolerance: float = DEFAULT_TOLERANCE
) -> CheckResult:
    if runner.reference is None:
        raise ValueError(f"runner {runner.name!r} has no reference to be checked against")

    def failed(message: str) -> CheckResult:
        return CheckResult(runner.name, runner.reference_name, math.nan, math.nan, tolerance,
                           message)

    custom = runner.creator(preset, device)
    reference = runner.reference(preset, device)
    out = _backward_tensor(custom, runner.context)
    ref_out = runner.reference_view(_backward_tensor(reference, nullcontext))
    if out.shape != ref_out.shape:
        return failed(f"output shape {tuple(out.shape)} != reference {tuple(ref_out.shape)}")
    if len(custom.params) != len(reference.params):
        return failed(f"{len(custom.params)} parameters != reference {len(reference.params)}")

    generator = torch.Generator().manual_seed(preset.seed)
    grad = torch.randn(out.shape, generator=generator).to(device)
    with runner.context():
        out.backward(grad)
    ref_out.backward(grad)

    grad_diff = 0.0
    for i, (p, q) in enumerate(zip(custom.params, reference.params, strict=True)):
        if p.grad is None or q.grad is None:
            return failed(f"parameter {i} got no gradient")
        if p.shape != q.shape:
            return failed(f"parameter {i} shape {tuple(p.shape)} != {tuple(q.shape)}")
        grad_diff = max(grad_diff, _scaled_diff(p.grad, q.grad))
    return CheckResult(runner.name, runner.reference_name, _scaled_diff(out, ref_out),
                       grad_diff, tolerance)


def run_checks(
    runners: Iterable[Runner], preset: Preset, device: str,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Iterable[CheckResult]:
    """Check each runner in turn; a runner that raises is reported, not fatal."""
    for runner in runners:
        try:
            yield check_runner(runner, preset, device, tolerance)
        except Exception as exc:  # a broken runner is a failed check, reported in the table
            yield CheckResult(runner.name, runner.reference_name, math.nan, math.nan,
                              tolerance, f"{type(exc).__name__}: {exc}")


TABLE_HEADER = ("runner", "reference", "output diff", "grad diff", "status")


def format_row(result: CheckResult) -> str:
    return (f"{result.runner:<20} {result.reference:<22} {result.output_diff:>13.3g} "
            f"{result.grad_diff:>12.3g}  {result.status}"
            + (f" ({result.error})" if result.error else ""))


def describe(preset: Preset, device: str, tolerance: float) -> str:
    return (f"# preset {preset.name} on {device}, tolerance {tolerance:g} on "
            "max|difference| / max(1, max|reference|)")


def format_header() -> str:
    runner, reference, out, grad, status = TABLE_HEADER
    return f"{runner:<20} {reference:<22} {out:>13} {grad:>12}  {status}"
