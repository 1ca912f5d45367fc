"""The compile suite's per-model settings (zoo.yaml beside this module, or a user's file of the
same shape): skip lists, batch sizes, tolerances, slow models, non-deterministic models."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from torchpulse.errors import TorchpulseError
from torchpulse.files import read_input

DEFAULT_PATH = Path(__file__).with_name("zoo.yaml")
CONFIG_BYTES = 16 * 2**20  # a zoo config is a few kB
_TOP = {"skip", "batch_size", "tolerance", "slow", "very_slow", "non_deterministic"}
_SKIP = {"all", "cpu", "cuda"}
_TOLERANCE = {"default", "training", "higher_value", "higher", "cosine"}


class ConfigError(TorchpulseError, ValueError):
    """A config file that cannot be used (one line, exit 2 at the CLI)."""


@dataclass(frozen=True)
class ZooConfig:
    skip: dict[str, frozenset[str]] = field(default_factory=dict)  # all / cpu / cuda
    batch_size: dict[str, dict[str, int]] = field(default_factory=dict)  # mode -> model -> n
    tolerance: float = 1e-4
    training_tolerance: float = 1e-3
    higher_tolerance: float = 1e-3
    higher: frozenset[str] = frozenset()
    cosine: frozenset[str] = frozenset()
    slow: frozenset[str] = frozenset()
    very_slow: frozenset[str] = frozenset()
    non_deterministic: frozenset[str] = frozenset()
    source: str = "built-in"

    def skip_reason(self, model: str, device: str, skip_slow: bool = False) -> str | None:
        """Why ``model`` is left out of a run on ``device``, or None."""
        if model in self.skip.get("all", ()):
            return "skip: all"
        if model in self.skip.get(device, ()):
            return f"skip: {device}"
        if device == "cpu" and model in self.very_slow:
            return "very_slow (left out on the CPU)"
        if skip_slow and model in self.slow:
            return "slow (--skip-slow)"
        return None

    def batch_size_for(self, model: str, training: bool) -> int | None:
        return self.batch_size.get("training" if training else "inference", {}).get(model)

    def tolerance_for(self, model: str, training: bool) -> tuple[float, bool]:
        """(allclose tolerance, cosine mode) for ``model``."""
        tol = self.training_tolerance if training else self.tolerance
        if model in self.higher:
            tol = max(tol, self.higher_tolerance)
        return tol, model in self.cosine

    def names(self) -> set[str]:
        """Every model name the file mentions."""
        named: set[str] = set(self.higher | self.cosine | self.slow | self.very_slow
                              | self.non_deterministic)
        for models in self.skip.values():
            named |= models
        for sizes in self.batch_size.values():
            named |= set(sizes)
        return named

    def check_names(self, known: Iterable[str]) -> None:
        unknown = sorted(self.names() - set(known))
        if unknown:
            raise ConfigError(f"{self.source}: unknown model(s) {', '.join(unknown)}")


def _names(value: object, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of model names")
    return frozenset(value)


def _mapping(value: object, where: str, allowed: set[str] | None = None) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping")
    if allowed is not None and set(value) - allowed:
        extra = ", ".join(sorted(map(str, set(value) - allowed)))
        raise ConfigError(f"{where}: unknown key(s) {extra}; expected {', '.join(sorted(allowed))}")
    return value


def _tolerance(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ConfigError(f"{where}: expected a number in [0, 1), not {value!r}")
    return float(value)


def parse(text: str, source: str = "built-in") -> ZooConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not YAML ({str(exc).splitlines()[0]})") from None
    top = _mapping(data, source, _TOP)
    skip = _mapping(top.get("skip"), f"{source}: skip", _SKIP)
    batch = _mapping(top.get("batch_size"), f"{source}: batch_size", {"inference", "training"})
    sizes: dict[str, dict[str, int]] = {}
    for mode, models in batch.items():
        models = _mapping(models, f"{source}: batch_size.{mode}")
        for model, n in models.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConfigError(f"{source}: batch_size.{mode}.{model}: expected a positive "
                                  f"integer, not {n!r}")
        sizes[mode] = dict(models)
    tol = _mapping(top.get("tolerance"), f"{source}: tolerance", _TOLERANCE)
    defaults = ZooConfig()

    def number(key: str, default: float) -> float:
        return _tolerance(tol[key], f"{source}: tolerance.{key}") if key in tol else default

    return ZooConfig(
        skip={k: _names(v, f"{source}: skip.{k}") for k, v in skip.items()},
        batch_size=sizes,
        tolerance=number("default", defaults.tolerance),
        training_tolerance=number("training", defaults.training_tolerance),
        higher_tolerance=number("higher_value", defaults.higher_tolerance),
        higher=_names(tol.get("higher"), f"{source}: tolerance.higher"),
        cosine=_names(tol.get("cosine"), f"{source}: tolerance.cosine"),
        slow=_names(top.get("slow"), f"{source}: slow"),
        very_slow=_names(top.get("very_slow"), f"{source}: very_slow"),
        non_deterministic=_names(top.get("non_deterministic"), f"{source}: non_deterministic"),
        source=source,
    )


def load(path: Path | None = None) -> ZooConfig:
    """The file at ``path`` (a regular file or a pipe, bounded), else the built-in zoo.yaml."""
    path = path or DEFAULT_PATH
    try:
        text = read_input(path, CONFIG_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})"
                          ) from None
    return parse(text, str(path) if path != DEFAULT_PATH else "built-in zoo.yaml")
