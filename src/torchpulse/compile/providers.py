"""Where compile-suite models come from: the built-in zoo, plus optional providers that add
torchvision's models and an installed TorchBench (``torchbenchmark``) package when those
import, plus a user's own file or module defining ``MODELS`` (a list of ``ModelSpec``).

Provider models are named ``<provider>.<model>`` so they never shadow a zoo model.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path

import torch

from torchpulse.compile.zoo import ZOO, ModelSpec
from torchpulse.errors import TorchpulseError

TORCHVISION_MODELS = ("resnet50", "mobilenet_v2", "vit_b_16", "convnext_tiny")
_TORCHVISION_IMAGE = {"smoke": 32, "cpu": 64, "cuda": 224}


class ProviderError(TorchpulseError, ValueError):
    """A models file or module that cannot be used (one line, exit 2 at the CLI)."""


def _torchvision():  # -> module | None
    try:  # CPU torch builds can make torchvision's import raise RuntimeError, not ImportError
        import torchvision.models as tvm
    except Exception:
        return None
    return tvm


def torchvision_models() -> list[ModelSpec]:
    """torchvision's classifiers, randomly initialised (no weights are downloaded)."""
    tvm = _torchvision()
    if tvm is None:
        return []

    def maker(name: str):
        def make(size: str, batch: int, gen: torch.Generator):
            image = 224 if name == "vit_b_16" else _TORCHVISION_IMAGE[size]
            model = getattr(tvm, name)(weights=None)
            return model, (torch.randn(batch, 3, image, image, generator=gen),)
        return make

    return [ModelSpec(f"torchvision.{name}", maker(name), {"smoke": 1, "cpu": 2, "cuda": 32},
                      source="torchvision") for name in TORCHVISION_MODELS
            if hasattr(tvm, name)]


def torchbench_models() -> list[ModelSpec]:
    """The models of an installed TorchBench package (pytorch/benchmark), through its
    ``load_model_by_name`` API; each model builds itself with its own inputs."""
    try:
        import torchbenchmark
    except Exception:
        return []
    names = sorted(Path(p).name for p in torchbenchmark._list_model_paths())

    def maker(name: str):
        def make(size: str, batch: int, gen: torch.Generator):
            model_class = torchbenchmark.load_model_by_name(name)
            if model_class is None:
                raise RuntimeError(f"torchbenchmark has no model {name!r}")
            bench = model_class(test="eval", device="cpu", batch_size=batch)
            module, inputs = bench.get_module()
            return module, tuple(inputs)
        return make

    return [ModelSpec(f"torchbench.{name}", maker(name), {"smoke": 1, "cpu": 1, "cuda": 0},
                      source="torchbench") for name in names]


def models_from(source: str) -> list[ModelSpec]:
    """``MODELS`` from a Python file (a path ending in .py) or an importable module."""
    try:
        if source.endswith(".py"):
            path = Path(source)
            if not path.is_file():
                raise ProviderError(f"{source}: no such models file")
            name = f"_torchpulse_models_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            # registered: dynamo looks the models' module up by name while tracing
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(source)
    except ProviderError:
        raise
    except Exception as exc:
        raise ProviderError(f"{source}: cannot load models ({type(exc).__name__}: {exc})") \
            from None
    models = getattr(module, "MODELS", None)
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, ModelSpec)
                                                        for m in models):
        raise ProviderError(f"{source}: MODELS must be a list of "
                            "torchpulse.compile.zoo.ModelSpec")
    label = Path(source).name if source.endswith(".py") else source
    return [dataclasses.replace(m, source=label) if m.source == "zoo" else m for m in models]


def available_models(extra: Iterable[str] = ()) -> dict[str, ModelSpec]:
    """Every model by name: the zoo, then the optional providers, then ``extra`` sources."""
    found: dict[str, ModelSpec] = {}
    groups = [ZOO, torchvision_models(), torchbench_models()]
    groups += [models_from(source) for source in extra]
    for group in groups:
        for spec in group:
            if spec.name in found:
                raise ProviderError(f"model {spec.name!r} is defined twice")
            found[spec.name] = spec
    return found
