"""The functionalisation contract: a getter builds ``(loss_fn, inputs)``, where ``inputs`` are
the model's parameters as plain tensors and ``loss_fn(*inputs)`` returns a scalar with no side
effects, so torch.autograd.functional can differentiate it with respect to them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.func import functional_call
from torch.nn.attention import SDPBackend, sdpa_kernel

from torchpulse.models.modes import without_dropout

LossFn = Callable[..., Tensor]
Getter = Callable[[torch.device, dict[str, Any]], tuple[LossFn, tuple[Tensor, ...]]]


def without_side_effects(model: nn.Module) -> nn.Module:
    """Batch norm normalises with batch statistics and keeps no running ones (functorch's
    replace_all_batch_norm_modules_), and dropout is off: a call changes nothing and gives
    the same loss every time. torch's RNN modules stay in training mode with dropout 0, so
    cuDNN can run their backward."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return without_dropout(model)


def functionalize(model: nn.Module, loss: Callable[[Callable[..., Any]], Tensor],
                  device: torch.device) -> tuple[LossFn, tuple[Tensor, ...]]:
    """``loss(call)`` computes the loss given ``call(*args)``, the model applied with the
    parameters passed to ``loss_fn`` (the module's own parameters are never touched).

    Attention runs on scaled_dot_product_attention's math backend: the fused ones (flash,
    memory-efficient) have no double backward, which vhp, jvp and hvp need."""
    model = without_side_effects(model).to(device)
    names = [name for name, _ in model.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_(True) for p in model.parameters())

    def loss_fn(*new_params: Tensor) -> Tensor:
        weights = dict(zip(names, new_params, strict=True))

        def call(*args: Any, **kwargs: Any) -> Any:
            with sdpa_kernel(SDPBackend.MATH):
                return functional_call(model, weights, args, kwargs)

        return loss(call)

    return loss_fn, params
