"""The nine models and their sizes per preset: upstream's
for ``cuda``, reduced for ``cpu`` (tens of milliseconds a task on 2 cores), tiny for
``smoke``. Their names and the tasks each runs are in choices.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


_PPL = {"n": 10, "k": 10}  # upstream's; already small
MODELS = (
    ModelDef("resnet18", vision.resnet18, {
        "cuda": {"batch": 32, "image": 224}, "cpu": {"batch": 2, "image": 32},
        "smoke": {"batch": 2, "image": 32}}),
    ModelDef("fcn_resnet", vision.fcn_resnet, {
        "cuda": {"batch": 8, "image": 480}, "cpu": {"batch": 1, "image": 40},
        "smoke": {"batch": 1, "image": 32}}),
    ModelDef("detr", vision.detr, {
        "cuda": {"batch": 2, "height": 800, "width": 1200, "hidden": 256, "heads": 8,
                 "encoder_layers": 6, "decoder_layers": 6, "queries": 100},
        "cpu": {"batch": 1, "height": 64, "width": 96, "hidden": 64, "heads": 4,
                "encoder_layers": 1, "decoder_layers": 1, "queries": 20},
        "smoke": {"batch": 1, "height": 64, "width": 64, "hidden": 16, "heads": 2,
                  "encoder_layers": 1, "decoder_layers": 1, "queries": 10}}),
    ModelDef("ppl_simple_reg", ppl.simple_regression,
             {"cuda": _PPL, "cpu": _PPL, "smoke": _PPL}),
    ModelDef("ppl_robust_reg", ppl.robust_regression,
             {"cuda": _PPL, "cpu": _PPL, "smoke": _PPL}),
    ModelDef("wav2letter", audio_text.wav2letter, {
        "cuda": {"batch": 10, "frames": 700, "width": 250, "wide": 2000},
        "cpu": {"batch": 4, "frames": 700, "width": 64, "wide": 256},
        "smoke": {"batch": 2, "frames": 700, "width": 8, "wide": 16}}),
    ModelDef("deepspeech", audio_text.deepspeech, {
        "cuda": {"batch": 10, "seq": 500, "hidden": 1024, "layers": 5, "target": 10},
        "cpu": {"batch": 2, "seq": 100, "hidden": 128, "layers": 2, "target": 10},
        "smoke": {"batch": 2, "seq": 40, "hidden": 8, "layers": 2, "target": 3}}),
    ModelDef("transformer", audio_text.transformer, {
        "cuda": {"batch": 64, "seq": 128, "ninp": 720, "nhead": 12, "nhid": 2048,
                 "nlayers": 2},
        "cpu": {"batch": 8, "seq": 32, "ninp": 64, "nhead": 4, "nhid": 128, "nlayers": 2},
        "smoke": {"batch": 4, "seq": 8, "ninp": 16, "nhead": 2, "nhid": 32, "nlayers": 1}}),
    ModelDef("multiheadattn", audio_text.multiheadattn, {
        "cuda": {"batch": 64}, "cpu": {"batch": 64}, "smoke": {"batch": 4}}),
)
BY_NAME = {m.name: m for m in MODELS}


def supported_pairs() -> list[tuple[ModelDef, str]]:
    """Every (model, task) the suite runs: each model's upstream task list."""
    return [(m, t) for m in MODELS for t in m.tasks]


def is_supported(model: str, task: str) -> bool:
    return model in BY_NAME and task in BY_NAME[model].tasks and task in ALL_TASKS
