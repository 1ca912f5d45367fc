"""The transformer family: a small encoder stack trained as a language model's would be.

``torch.nn.TransformerEncoder`` of post-norm layers (multi-head self-attention under a causal
mask, a ReLU feed-forward, no dropout, so that every call does the same work) over a batch
of generated token embeddings, at the sizes of sizes.TRANSFORMERS. ``forward`` is one pass
with autograd recording, as in training; ``step`` is a training step whose backward pass is
its own region, as the fastrnns workloads' are. Built from code and seeded: no weights or
data from a hub.
"""

from __future__ import annotations

import gc
from typing import Any

from torchpulse.errors import TorchpulseError
from torchpulse.workloads.clock import Clock
from torchpulse.workloads.registry import MODEL_FAMILIES

FIELDS = ("batch", "seq", "d_model", "heads", "ffn", "layers")
# calls after which an eager model's times are steady (as the eager fastrnns runners)
SETTLE = 2


class SizesError(TorchpulseError, ValueError):
    pass


def _checked(row: dict) -> dict[str, int]:
    """``row`` with every field of FIELDS a positive int and no other; SizesError else."""
    if set(row) != set(FIELDS) or not all(
            isinstance(row[f], int) and not isinstance(row[f], bool) and row[f] > 0
            for f in FIELDS):
        raise SizesError(f"transformer sizes need positive integers {', '.join(FIELDS)} "
                         f"and nothing else, not {row!r}")
    if row["d_model"] % row["heads"]:
        raise SizesError(f"d_model {row['d_model']} is not a multiple of heads {row['heads']}")
    return dict(row)


class Encoder:
    """The encoder built at ``row`` on ``device``, its inputs drawn on the CPU from ``seed``
    (the same on every device)."""

    settle = SETTLE

    def __init__(self, model: str, row: dict, device: str, seed: int) -> None:
        import torch
        from torch import nn

        if model not in MODEL_FAMILIES["transformers"].models:
            raise ValueError(f"transformer model {model!r} is not in this version of "
                             "torchpulse")
        sizes = _checked(row)
        torch.manual_seed(seed)
        layer = nn.TransformerEncoderLayer(sizes["d_model"], sizes["heads"], sizes["ffn"],
                                           dropout=0.0, batch_first=True)
        # no nested tensors: there is no padding mask, and the path must not depend on it
        self.model = nn.TransformerEncoder(layer, sizes["layers"],
                                           enable_nested_tensor=False).to(device)
        shape = (sizes["batch"], sizes["seq"], sizes["d_model"])
        self.x = torch.randn(shape).to(device)
        self.grad = torch.randn(shape).to(device)
        self.mask = nn.Transformer.generate_square_subsequent_mask(sizes["seq"]).to(device)
        self.params = list(self.model.parameters())

    def _forward(self) -> Any:
        return self.model(self.x, mask=self.mask, is_causal=True)

    def forward(self, clock: Clock | None = None) -> None:
        """One forward pass (autograd recording on, as in training), measured on ``clock``."""
        gc.collect()
        if clock is None:
            self._forward()
            return
        with clock.region():
            self._forward()

    def step(self, forward_clock: Clock | None = None,
             backward_clock: Clock | None = None) -> None:
        """One training step: forward, backward, then gradients zeroed in place; each pass
        measured on its own clock."""
        import torch

        gc.collect()
        if forward_clock is None:
            output = self._forward()
        else:
            with forward_clock.region():
                output = self._forward()
        gc.collect()
        if backward_clock is None:
            output.backward(self.grad)
        else:
            with backward_clock.region():
                output.backward(self.grad)
        with torch.no_grad():
            for param in self.params:
                if param.grad is not None:
                    param.grad.zero_()

    def close(self) -> None:
        """Drop the model and its inputs: the GPU suite builds the next workload in the
        memory they held (gpu.measure)."""
        del self.model, self.params, self.x, self.grad, self.mask


# what regions.build and the suite build for the family (registry.MODEL_FAMILIES)
Model = Encoder
