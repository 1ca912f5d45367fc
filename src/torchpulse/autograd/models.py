"""The nine models, the tasks each runs (as upstream), and their sizes per preset: upstream's
for ``cuda``, reduced for ``cpu`` (tens of milliseconds a task on 2 cores), tiny for
``smoke``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchpulse.autograd import audio_text, ppl, vision
from torchpulse.autograd.functional import Getter
from torchpulse.autograd.tasks import (
    ALL_TASKS,
    DOUBLE_BACKWARD_TASKS,
    FAST_TASKS,
    FAST_TASKS_NO_DOUBLE_BACK,
)


@dataclass(frozen=True)
class ModelDef:
    name: str
    getter: Getter
    tasks: tuple[str, ...]  # what upstream runs by default
    unsupported: tuple[str, ...]  # what it cannot run at all
    sizes: dict[str, dict[str, Any]]  # per preset name

    def size(self, preset: str) -> dict[str, Any]:
        return self.sizes[preset]


_PPL = {"n": 10, "k": 10}  # upstream's; already small
MODELS = (
    ModelDef("resnet18", vision.resnet18, FAST_TASKS, (), {
        "cuda": {"batch": 32, "image": 224}, "cpu": {"batch": 2, "image": 64},
        "smoke": {"batch": 2, "image": 32}}),
    ModelDef("fcn_resnet", vision.fcn_resnet, FAST_TASKS, (), {
        "cuda": {"batch": 8, "image": 480}, "cpu": {"batch": 1, "image": 64},
        "smoke": {"batch": 1, "image": 32}}),
    ModelDef("detr", vision.detr, FAST_TASKS, (), {
        "cuda": {"batch": 2, "height": 800, "width": 1200, "hidden": 256, "heads": 8,
                 "encoder_layers": 6, "decoder_layers": 6, "queries": 100},
        "cpu": {"batch": 1, "height": 96, "width": 128, "hidden": 64, "heads": 4,
                "encoder_layers": 2, "decoder_layers": 2, "queries": 20},
        "smoke": {"batch": 1, "height": 64, "width": 64, "hidden": 16, "heads": 2,
                  "encoder_layers": 1, "decoder_layers": 1, "queries": 10}}),
    ModelDef("ppl_simple_reg", ppl.simple_regression, ALL_TASKS, (),
             {"cuda": _PPL, "cpu": _PPL, "smoke": _PPL}),
    ModelDef("ppl_robust_reg", ppl.robust_regression, ALL_TASKS, (),
             {"cuda": _PPL, "cpu": _PPL, "smoke": _PPL}),
    ModelDef("wav2letter", audio_text.wav2letter, FAST_TASKS, (), {
        "cuda": {"batch": 10, "frames": 700, "width": 250, "wide": 2000},
        "cpu": {"batch": 4, "frames": 700, "width": 64, "wide": 256},
        "smoke": {"batch": 2, "frames": 700, "width": 8, "wide": 16}}),
    # no double backward through cuDNN's LSTM: vjp only
    ModelDef("deepspeech", audio_text.deepspeech, FAST_TASKS_NO_DOUBLE_BACK,
             DOUBLE_BACKWARD_TASKS, {
                 "cuda": {"batch": 10, "seq": 500, "hidden": 1024, "layers": 5, "target": 10},
                 "cpu": {"batch": 2, "seq": 100, "hidden": 128, "layers": 2, "target": 10},
                 "smoke": {"batch": 2, "seq": 40, "hidden": 8, "layers": 2, "target": 3}}),
    ModelDef("transformer", audio_text.transformer, FAST_TASKS, (), {
        "cuda": {"batch": 64, "seq": 128, "ninp": 720, "nhead": 12, "nhid": 2048,
                 "nlayers": 2},
        "cpu": {"batch": 8, "seq": 32, "ninp": 64, "nhead": 4, "nhid": 128, "nlayers": 2},
        "smoke": {"batch": 4, "seq": 8, "ninp": 16, "nhead": 2, "nhid": 32, "nlayers": 1}}),
    ModelDef("multiheadattn", audio_text.multiheadattn, FAST_TASKS, (), {
        "cuda": {"batch": 64}, "cpu": {"batch": 64}, "smoke": {"batch": 4}}),
)
BY_NAME = {m.name: m for m in MODELS}


def supported_pairs() -> list[tuple[ModelDef, str]]:
    """Every (model, task) the suite runs: each model's upstream task list."""
    return [(m, t) for m in MODELS for t in m.tasks]


def is_supported(model: str, task: str) -> bool:
    return model in BY_NAME and task in BY_NAME[model].tasks and task in ALL_TASKS
