"""Workload size presets of the fastrnns runners, built from the sizes table (sizes.py).

``cuda`` is the upstream fastrnns default; ``cpu`` is sized so that one timed sample takes
roughly 10-100 ms on two cores (the variable-length runners loop in Python over every
sequence, so their length range shrinks more); ``smoke`` is tiny, for tests. The preset is
chosen by device unless TORCHPULSE_PRESET names one.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from torchpulse import sizes
from torchpulse.errors import TorchpulseError

PRESET_ENV = "TORCHPULSE_PRESET"
DEVICE_ENV = "TORCHPULSE_DEVICE"
DEFAULT_SEED = 1234


@dataclass(frozen=True)
class Preset:
    name: str
    seq_length: int
    num_layers: int
    input_size: int
    hidden_size: int
    mini_batch: int
    image_batch: int
    image_size: int
    warmup: int
    nloops: int
    # scale of the variable-length runners' length range; upstream draws lengths in [30, 100)
    varlen_scale: float = 1.0
    # intra-op threads (None: torch's default, one per core). One thread on the shared 2-core
    # CPU machines: with two, vl_py's backward (at LSTM batch 32) ran at ~135 or ~325 ms
    # depending on the process (CV 49% over 5 asv runs); with one it stayed at 115-130 ms.
    # torch.utils.benchmark.Timer defaults to one thread for the same reason.
    num_threads: int | None = None
    seed: int = DEFAULT_SEED
    # an explicit length range [low, high) of the variable-length runners (bench's
    # --minLength/--maxLength); None: upstream's [30, 100) times varlen_scale
    varlen_range: tuple[int, int] | None = None
    # channels of the ResNets' stem and first stage (torchvision's 64, doubling per stage).
    # The instruction family counts narrower ones: every layer and kernel still runs, at a
    # fraction of the weights (sizes.INSTRUCTIONS)
    image_width: int = 64

    @property
    def varlen_bounds(self) -> tuple[int, int]:
        """Sequence-length range [low, high) of the variable-length runners."""
        if self.varlen_range is not None:
            return self.varlen_range
        scale = self.varlen_scale
        low = max(1, round(30 * scale))
        high = max(low + 1, round(100 * scale))
        return low, high

    def replace(self, **changes: object) -> Preset:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_sizes(cls, name: str, table: dict[str, object]) -> Preset:
        """The preset ``name`` with the sizes of ``table`` (a row of sizes.FASTRNNS); a key
        this class lacks is a TypeError, never silently left out."""
        return cls(name=name, **table)


PRESETS: dict[str, Preset] = {
    name: Preset.from_sizes(name, table) for name, table in sizes.FASTRNNS.items()}


class UnknownPresetError(TorchpulseError, ValueError):
    pass


class DeviceError(TorchpulseError, ValueError):
    """A device torch does not know, or CUDA asked for where there is none."""


def default_device() -> str:
    """$TORCHPULSE_DEVICE when set (e.g. cpu on a GPU machine), else cuda when available."""
    import torch

    return os.environ.get(DEVICE_ENV) or ("cuda" if torch.cuda.is_available() else "cpu")


def resolve_device(name: str | None = None) -> str:
    """``name`` (cpu, cuda, cuda:N), else the default device, checked against this machine."""
    import torch

    device = name or default_device()
    try:
        kind = torch.device(device).type
    except RuntimeError:  # torch rejects unknown device strings with RuntimeError
        kind = None
    if kind not in ("cpu", "cuda"):
        raise DeviceError(f"unsupported device {device!r}; use cpu or cuda")
    if kind == "cuda" and not torch.cuda.is_available():
        raise DeviceError("--device cuda asked for, but CUDA is not available here")
    return device


def resolve_preset(name: str | None = None, device: str | None = None) -> Preset:
    """The preset named, else $TORCHPULSE_PRESET, else the one matching the device."""
    name = name or os.environ.get(PRESET_ENV) or None
    if name is None:
        device = device or default_device()
        name = "cuda" if device.startswith("cuda") else "cpu"
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPresetError(
            f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}"
        ) from None
