"""What one measured iteration of a model is, as in the upstream harness: a forward pass under
no_grad for inference; zero_grad, forward, a scalar loss and backward for training. A
``Prepared`` model holds the module and inputs on the device, ready to run, copy or compile."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from torchpulse.compile.zoo import ModelSpec

IterFn = Callable[[nn.Module, tuple[Any, ...]], Any]
RNG_SEED = 1337  # the upstream harness's reset_rng_state seed


def reset_rng_state(seed: int = RNG_SEED) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def leaves(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in leaves(v)]
    return []


def reduce_to_scalar_loss(out: Any) -> torch.Tensor:
    """The mean of every floating output, summed: a loss that touches all of them."""
    floats = [t for t in leaves(out) if t.is_floating_point()]
    if not floats:
        raise TypeError("the model returned no floating-point tensor to take a loss of")
    return sum(t.mean() for t in floats)


def forward_pass(model: nn.Module, inputs: tuple[Any, ...]) -> Any:
    return model(*inputs)


def forward_and_backward_pass(model: nn.Module, inputs: tuple[Any, ...]) -> Any:
    model.zero_grad(set_to_none=True)
    loss = reduce_to_scalar_loss(model(*inputs))
    loss.backward()
    return loss, [p.grad for p in model.parameters() if p.grad is not None]


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def clone_inputs(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v) for v in inputs)


@dataclass
class Prepared:
    """A model built and placed on its device with its example inputs."""

    spec: ModelSpec
    model: nn.Module
    inputs: tuple[Any, ...]
    training: bool
    device: str
    batch_size: int

    @property
    def iter_fn(self) -> IterFn:
        return forward_and_backward_pass if self.training else forward_pass

    def grad_mode(self):
        return torch.enable_grad() if self.training else torch.no_grad()

    def copy(self) -> nn.Module:
        return copy.deepcopy(self.model)

    def run(self, fn: IterFn, model: nn.Module | None = None,
            inputs: tuple[Any, ...] | None = None) -> Any:
        with self.grad_mode():
            return fn(self.model if model is None else model,
                      self.inputs if inputs is None else inputs)

    def as_float64(self) -> tuple[nn.Module, tuple[Any, ...]]:
        return self.copy().to(torch.float64), _cast(clone_inputs(self.inputs), torch.float64)


def prepare(spec: ModelSpec, size: str, batch_size: int, training: bool, device: str,
            seed: int = RNG_SEED) -> Prepared:
    """Build ``spec`` at ``size`` (weights from ``seed``), on ``device``, in train or eval
    mode. Exceptions propagate: the caller reports model_fail_to_load."""
    reset_rng_state(seed)
    generator = torch.Generator().manual_seed(seed)
    model, inputs = spec.make(size, batch_size, generator)
    model = model.to(device).train(training)
    inputs = tuple(v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs)
    return Prepared(spec, model, inputs, training, device, batch_size)


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
