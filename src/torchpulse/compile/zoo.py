"""The compile suite's model zoo: small, self-contained models built from code with generated
inputs, each covering something compilers care about (fusion around batch norm, convolutions,
recurrent loops, attention, embeddings, data-dependent control flow).

A model is a ``ModelSpec``: ``make(size, batch_size, generator)`` returns the module (float32,
on the CPU, random weights) and its example inputs. Sizes follow the presets: ``smoke`` for
tests, ``cpu`` for two cores (a step takes milliseconds), ``cuda`` for a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from torchpulse.models.lstm import flat_lstm_cell
from torchpulse.models.resnet import own_resnet18

Maker = Callable[[str, int, torch.Generator], tuple[nn.Module, tuple[Any, ...]]]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    make: Maker  # (size, batch size, generator) -> (module, example inputs)
    batch_size: dict[str, int]  # default batch size per size
    source: str = "zoo"
    description: str = ""

    def default_batch_size(self, size: str) -> int:
        return self.batch_size.get(size) or self.batch_size.get("cpu") or 1


def _normal(gen: torch.Generator, *shape: int) -> Tensor:
    return torch.randn(*shape, generator=gen)


# --- cnn_bn: conv / batch norm / relu stacks, the classic fusion target -----------------------

class ConvBNNet(nn.Module):
    def __init__(self, channels: int, classes: int = 10) -> None:
        super().__init__()
        c = channels

        def block(cin: int, cout: int) -> list[nn.Module]:
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                    nn.ReLU()]

        self.features = nn.Sequential(*block(3, c), *block(c, c), nn.MaxPool2d(2),
                                      *block(c, 2 * c), *block(2 * c, 2 * c),
                                      nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(2 * c, classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(torch.flatten(self.features(x), 1))


_CNN = {"smoke": {"channels": 4, "image": 16}, "cpu": {"channels": 16, "image": 32},
        "cuda": {"channels": 64, "image": 64}}


def _cnn_bn(size: str, batch: int, gen: torch.Generator):
    d = _CNN[size]
    return ConvBNNet(d["channels"]), (_normal(gen, batch, 3, d["image"], d["image"]),)


# --- resnet18: torchpulse's own ResNet-18 (the torchvision architecture) ------------------------

_RESNET = {"smoke": {"image": 32, "classes": 10}, "cpu": {"image": 64, "classes": 100},
           "cuda": {"image": 224, "classes": 1000}}


def _resnet18(size: str, batch: int, gen: torch.Generator):
    d = _RESNET[size]
    return own_resnet18(num_classes=d["classes"]), (
        _normal(gen, batch, 3, d["image"], d["image"]),)


# --- lstm: a tagger whose LSTM is a Python loop over time steps (nn.LSTM is opaque to dynamo) --

class LSTMTagger(nn.Module):
    def __init__(self, vocab: int, hidden: int, tags: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        scale = 1 / math.sqrt(hidden)
        self.w_ih = nn.Parameter(torch.empty(4 * hidden, hidden).uniform_(-scale, scale))
        self.w_hh = nn.Parameter(torch.empty(4 * hidden, hidden).uniform_(-scale, scale))
        self.b_ih = nn.Parameter(torch.zeros(4 * hidden))
        self.b_hh = nn.Parameter(torch.zeros(4 * hidden))
        self.out = nn.Linear(hidden, tags)
        self.hidden = hidden

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embed(tokens)  # (batch, seq, hidden)
        hx = x.new_zeros(x.shape[0], self.hidden)
        cx = x.new_zeros(x.shape[0], self.hidden)
        outputs = []
        for t in range(x.shape[1]):
            hx, cx = flat_lstm_cell(x[:, t], hx, cx, self.w_ih, self.w_hh, self.b_ih, self.b_hh)
            outputs.append(hx)
        return self.out(torch.stack(outputs, 1))


_LSTM = {"smoke": {"vocab": 50, "hidden": 8, "seq": 4}, "cpu": {"vocab": 1000, "hidden": 64,
         "seq": 16}, "cuda": {"vocab": 10000, "hidden": 512, "seq": 64}}


def _lstm(size: str, batch: int, gen: torch.Generator):
    d = _LSTM[size]
    tokens = torch.randint(0, d["vocab"], (batch, d["seq"]), generator=gen)
    return LSTMTagger(d["vocab"], d["hidden"], 10), (tokens,)


# --- transformer_encoder: nn.TransformerEncoder over embedded tokens ------------------------

class Encoder(nn.Module):
    def __init__(self, vocab: int, d_model: int, heads: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 2 * d_model, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        return self.head(self.encoder(self.embed(tokens)))


_ENCODER = {"smoke": {"vocab": 50, "d_model": 16, "heads": 2, "layers": 1, "seq": 8},
            "cpu": {"vocab": 1000, "d_model": 64, "heads": 4, "layers": 2, "seq": 32},
            "cuda": {"vocab": 10000, "d_model": 512, "heads": 8, "layers": 6, "seq": 128}}


def _transformer_encoder(size: str, batch: int, gen: torch.Generator):
    d = _ENCODER[size]
    tokens = torch.randint(0, d["vocab"], (batch, d["seq"]), generator=gen)
    return Encoder(d["vocab"], d["d_model"], d["heads"], d["layers"]), (tokens,)


# --- mlp: linear / layer norm / GELU blocks with residuals --------------------------------------

class MLP(nn.Module):
    def __init__(self, width: int, depth: int, inputs: int, classes: int = 10) -> None:
        super().__init__()
        self.inp = nn.Linear(inputs, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.GELU(),
                          nn.Linear(2 * width, width)) for _ in range(depth))
        self.out = nn.Linear(width, classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.inp(x)
        for block in self.blocks:
            x = x + block(x)
        return self.out(x)


_MLP = {"smoke": {"width": 16, "depth": 2, "inputs": 8}, "cpu": {"width": 128, "depth": 4,
        "inputs": 64}, "cuda": {"width": 1024, "depth": 8, "inputs": 512}}


def _mlp(size: str, batch: int, gen: torch.Generator):
    d = _MLP[size]
    return MLP(d["width"], d["depth"], d["inputs"]), (_normal(gen, batch, d["inputs"]),)


# --- attention: a pre-norm causal self-attention block written out (qkv, SDPA, projection) ------

class AttentionBlock(nn.Module):
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                nn.Linear(4 * d_model, d_model))

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.ff(self.norm2(x))


_ATTENTION = {"smoke": {"d_model": 16, "heads": 2, "seq": 8},
              "cpu": {"d_model": 64, "heads": 4, "seq": 64},
              "cuda": {"d_model": 768, "heads": 12, "seq": 512}}


def _attention(size: str, batch: int, gen: torch.Generator):
    d = _ATTENTION[size]
    return AttentionBlock(d["d_model"], d["heads"]), (_normal(gen, batch, d["seq"],
                                                              d["d_model"]),)


# --- embedding_bag: a DLRM-style recommender, embedding-heavy -----------------------------------

class Recommender(nn.Module):
    def __init__(self, tables: int, rows: int, dim: int, dense: int) -> None:
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(dense, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim),
                                    nn.ReLU())
        pairs = (tables + 1) * tables // 2
        self.top = nn.Sequential(nn.Linear(dim + pairs, 2 * dim), nn.ReLU(),
                                 nn.Linear(2 * dim, 1))

    def forward(self, dense: Tensor, indices: Tensor, offsets: Tensor) -> Tensor:
        # indices: (tables, lookups); offsets: (tables, batch), one bag per sample and table
        x = self.bottom(dense)
        features = [x] + [bag(indices[i], offsets[i]) for i, bag in enumerate(self.bags)]
        z = torch.stack(features, 1)  # (batch, tables + 1, dim)
        dots = torch.bmm(z, z.transpose(1, 2))
        rows, cols = torch.triu_indices(z.shape[1], z.shape[1], offset=1, device=z.device)
        return self.top(torch.cat([x, dots[:, rows, cols]], 1))


_RECOMMENDER = {"smoke": {"tables": 3, "rows": 100, "dim": 8, "dense": 8, "per_bag": 2},
                "cpu": {"tables": 8, "rows": 20000, "dim": 32, "dense": 13, "per_bag": 8},
                "cuda": {"tables": 26, "rows": 100000, "dim": 128, "dense": 13, "per_bag": 20}}


def _embedding_bag(size: str, batch: int, gen: torch.Generator):
    d = _RECOMMENDER[size]
    indices = torch.randint(0, d["rows"], (d["tables"], batch * d["per_bag"]), generator=gen)
    offsets = (torch.arange(batch) * d["per_bag"]).expand(d["tables"], batch).contiguous()
    model = Recommender(d["tables"], d["rows"], d["dim"], d["dense"])
    return model, (_normal(gen, batch, d["dense"]), indices, offsets)


# --- control_flow: branches on tensor values, so dynamo breaks the graph ------------------------

class DataDependent(nn.Module):
    """Routes the batch through one of two branches by the sign of a statistic, then refines
    it while its norm is large: Python ``if``/``while`` on tensor values (graph breaks)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.encode = nn.Linear(width, width)
        self.left = nn.Sequential(nn.Linear(width, width), nn.Tanh())
        self.right = nn.Sequential(nn.Linear(width, width), nn.Sigmoid())
        self.refine = nn.Linear(width, width)

    def forward(self, x: Tensor) -> Tensor:
        h = self.encode(x)
        h = self.left(h) if h.mean() > 0 else self.right(h)
        for _ in range(4):  # at most four refinements
            if h.norm() < 1.0:
                break
            h = 0.5 * torch.tanh(self.refine(h))
        return h


_CONTROL = {"smoke": {"width": 8}, "cpu": {"width": 128}, "cuda": {"width": 1024}}


def _control_flow(size: str, batch: int, gen: torch.Generator):
    d = _CONTROL[size]
    return DataDependent(d["width"]), (_normal(gen, batch, d["width"]),)


ZOO: tuple[ModelSpec, ...] = (
    ModelSpec("cnn_bn", _cnn_bn, {"smoke": 2, "cpu": 8, "cuda": 64},
              description="conv / batch norm / relu stack"),
    ModelSpec("resnet18", _resnet18, {"smoke": 2, "cpu": 2, "cuda": 32},
              description="ResNet-18 (torchvision's architecture, torchpulse's code)"),
    ModelSpec("lstm", _lstm, {"smoke": 2, "cpu": 8, "cuda": 64},
              description="LSTM tagger, a Python loop over time steps"),
    ModelSpec("transformer_encoder", _transformer_encoder, {"smoke": 2, "cpu": 4, "cuda": 32},
              description="nn.TransformerEncoder"),
    ModelSpec("mlp", _mlp, {"smoke": 4, "cpu": 64, "cuda": 256},
              description="residual MLP with layer norm and GELU"),
    ModelSpec("attention", _attention, {"smoke": 2, "cpu": 4, "cuda": 16},
              description="causal self-attention block (SDPA)"),
    ModelSpec("embedding_bag", _embedding_bag, {"smoke": 4, "cpu": 128, "cuda": 2048},
              description="DLRM-style recommender: EmbeddingBag tables, dot interaction"),
    ModelSpec("control_flow", _control_flow, {"smoke": 4, "cpu": 64, "cuda": 512},
              description="data-dependent if/while: graph breaks"),
)
