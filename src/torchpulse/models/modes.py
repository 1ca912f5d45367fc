"""Switching dropout off without switching off what cuDNN needs."""

from __future__ import annotations

from torch import nn


def without_dropout(module: nn.Module) -> nn.Module:
    """Eval mode, except for torch's RNN modules, which keep training mode with their dropout
    set to 0: cuDNN runs an RNN's backward only in training mode ("cudnn RNN backward can only
    be called in training mode"), and with dropout 0 training mode computes what eval does."""
    module.eval()
    for sub in module.modules():
        if isinstance(sub, nn.RNNBase):
            sub.dropout = 0.0
            sub.train()
    return module
