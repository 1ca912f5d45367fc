"""The nine models: their getters, with their sizes per preset from sizes.AUTOGRAD (upstream's
for ``cuda``, reduced for ``cpu``: tens of milliseconds a task on 2 cores, tiny for
``smoke``). Their names and the tasks each runs are in choices.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchpulse import sizes
from torchpulse.autograd import audio_text, ppl, vision
from torchpulse.autograd.choices import ALL_TASKS, MODEL_TASKS
from torchpulse.autograd.functional import Getter


@dataclass(frozen=True)
class ModelDef:
    name: str
    getter: Getter
    sizes: dict[str, dict[str, Any]]  # per preset name

    @property
    def tasks(self) -> tuple[str, ...]:
        """What upstream runs by default (choices.MODEL_TASKS)."""
        return MODEL_TASKS[self.name]

    def size(self, preset: str) -> dict[str, Any]:
        return self.sizes[preset]


_GETTERS = {
    "resnet18": vision.resnet18, "fcn_resnet": vision.fcn_resnet, "detr": vision.detr,
    "ppl_simple_reg": ppl.simple_regression, "ppl_robust_reg": ppl.robust_regression,
    "wav2letter": audio_text.wav2letter, "deepspeech": audio_text.deepspeech,
    "transformer": audio_text.transformer, "multiheadattn": audio_text.multiheadattn,
}
MODELS = tuple(ModelDef(name, _GETTERS[name], sizes.AUTOGRAD[name]) for name in MODEL_TASKS)
BY_NAME = {m.name: m for m in MODELS}


def supported_pairs() -> list[tuple[ModelDef, str]]:
    """Every (model, task) the suite runs: each model's upstream task list."""
    return [(m, t) for m in MODELS for t in m.tasks]


def is_supported(model: str, task: str) -> bool:
    return model in BY_NAME and task in BY_NAME[model].tasks and task in ALL_TASKS
