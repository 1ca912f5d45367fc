"""Workload sizes per preset: the one table of them.

``cuda`` is upstream's (fastrnns' defaults, functional_autograd_benchmark's models); ``cpu`` is
sized so that one timed sample takes roughly 10-100 ms on two cores and one commit of every
default suite fits the budget of docs/measurements.md; ``smoke`` is tiny, for tests.

Standard library only: asv takes the suites from the working tree but imports torchpulse from
the commit it measures, which may be older. The suites therefore load this file by path from
the working tree (benchmarks/_tree.py) and hand the sizes to that commit's package
(torchpulse.suite, API 2), so every commit of a run is measured at the same sizes; a change
here changes the suites' versions (``digest``), which starts new series instead of a step.
"""

import hashlib
import json

# torchpulse.presets.Preset's fields (the name aside) per preset
FASTRNNS = {
    "cuda": {"seq_length": 100, "num_layers": 1, "input_size": 512, "hidden_size": 512,
             "mini_batch": 64, "image_batch": 32, "image_size": 224, "warmup": 10,
             "nloops": 100, "varlen_scale": 1.0, "num_threads": None},
    # seq 25 and 64-pixel images: 7-42 ms forward regions (docs/measurements.md, budget)
    "cpu": {"seq_length": 25, "num_layers": 1, "input_size": 256, "hidden_size": 256,
            "mini_batch": 16, "image_batch": 1, "image_size": 64, "warmup": 5, "nloops": 20,
            "varlen_scale": 0.25, "num_threads": 1},
    "smoke": {"seq_length": 5, "num_layers": 1, "input_size": 8, "hidden_size": 8,
              "mini_batch": 3, "image_batch": 2, "image_size": 32, "warmup": 5, "nloops": 2,
              "varlen_scale": 0.05, "num_threads": 1},
}

_PPL = {"n": 10, "k": 10}  # upstream's; already small

# functional-autograd model -> preset -> the keyword sizes its getter reads. ``backbone_width``
# is the ResNet-50 backbone's first-stage width (torchvision's 64): at 16 the cpu preset keeps
# every layer at a sixteenth of the weights, and FCN's and DETR's tasks take 20-110 ms
# instead of 0.2-1.2 s.
AUTOGRAD = {
    "resnet18": {"cuda": {"batch": 32, "image": 224}, "cpu": {"batch": 2, "image": 32},
                 "smoke": {"batch": 2, "image": 32}},
    "fcn_resnet": {"cuda": {"batch": 8, "image": 480},
                   "cpu": {"batch": 1, "image": 32, "backbone_width": 16},
                   "smoke": {"batch": 1, "image": 32, "backbone_width": 8}},
    "detr": {
        "cuda": {"batch": 2, "height": 800, "width": 1200, "hidden": 256, "heads": 8,
                 "encoder_layers": 6, "decoder_layers": 6, "queries": 100},
        "cpu": {"batch": 1, "height": 64, "width": 96, "hidden": 64, "heads": 4,
                "encoder_layers": 1, "decoder_layers": 1, "queries": 20, "backbone_width": 16},
        "smoke": {"batch": 1, "height": 64, "width": 64, "hidden": 16, "heads": 2,
                  "encoder_layers": 1, "decoder_layers": 1, "queries": 10,
                  "backbone_width": 8}},
    "ppl_simple_reg": {"cuda": _PPL, "cpu": _PPL, "smoke": _PPL},
    "ppl_robust_reg": {"cuda": _PPL, "cpu": _PPL, "smoke": _PPL},
    "wav2letter": {"cuda": {"batch": 10, "frames": 700, "width": 250, "wide": 2000},
                   "cpu": {"batch": 4, "frames": 700, "width": 64, "wide": 256},
                   "smoke": {"batch": 2, "frames": 700, "width": 8, "wide": 16}},
    "deepspeech": {
        "cuda": {"batch": 10, "seq": 500, "hidden": 1024, "layers": 5, "target": 10},
        "cpu": {"batch": 2, "seq": 100, "hidden": 128, "layers": 2, "target": 10},
        "smoke": {"batch": 2, "seq": 40, "hidden": 8, "layers": 2, "target": 3}},
    "transformer": {
        "cuda": {"batch": 64, "seq": 128, "ninp": 720, "nhead": 12, "nhid": 2048, "nlayers": 2},
        "cpu": {"batch": 8, "seq": 32, "ninp": 64, "nhead": 4, "nhid": 128, "nlayers": 2},
        "smoke": {"batch": 4, "seq": 8, "ninp": 16, "nhead": 2, "nhid": 32, "nlayers": 1}},
    "multiheadattn": {"cuda": {"batch": 64}, "cpu": {"batch": 64}, "smoke": {"batch": 4}},
}

# The transformer family (workloads/transformer.py): model -> preset -> sizes. An encoder of
# ``layers`` post-norm layers (``heads`` attention heads of width d_model / heads, a ReLU
# feed-forward of ``ffn``) over ``batch`` sequences of ``seq`` tokens under a causal mask.
# ``cpu``: 9-18 ms regions on one thread; ``cuda``: a BERT-base-like layer at 256 tokens.
# Its own table: the other suites' digests do not see it.
TRANSFORMERS = {
    "encoder": {
        "cuda": {"batch": 32, "seq": 256, "d_model": 768, "heads": 12, "ffn": 3072,
                 "layers": 4},
        "cpu": {"batch": 8, "seq": 64, "d_model": 128, "heads": 4, "ffn": 512, "layers": 2},
        "smoke": {"batch": 2, "seq": 8, "d_model": 16, "heads": 2, "ffn": 32, "layers": 1}},
}


# The instruction-count family (torchpulse.instructions): sized for counting, the code path a
# regression would change rather than the arithmetic volume, since callgrind runs at a few
# tens of million instructions a second. The smallest sizes that still run every layer:
# ResNets at 16 px (their last stages at 1x1, batch 2 so that batch norm has two values per
# channel), DeepSpeech over 41 frequency bins. Its own table: the wall-time suites' digests
# do not see it. docs/instructions.md gives each workload's count and cost.
_INSTRUCTION_AUTOGRAD = {model: rows["smoke"] for model, rows in AUTOGRAD.items()}
_INSTRUCTION_AUTOGRAD.update({
    "resnet18": {"batch": 2, "image": 16, "width": 16},
    "fcn_resnet": {"batch": 1, "image": 16, "backbone_width": 8},
    "deepspeech": {"batch": 1, "seq": 16, "hidden": 8, "layers": 2, "target": 3,
                   "spectrogram": 41},
})
INSTRUCTIONS = {
    "fastrnns": {"seq_length": 16, "num_layers": 1, "input_size": 16, "hidden_size": 16,
                 "mini_batch": 2, "image_batch": 2, "image_size": 16, "image_width": 16,
                 "warmup": 5, "nloops": 1, "varlen_scale": 0.1, "num_threads": 1},
    "autograd": _INSTRUCTION_AUTOGRAD,
}
# the transformer family's counting sizes, a table of its own (INSTRUCTIONS' digest is the
# version of the older families' counts): two layers, so the stacking runs too
INSTRUCTION_TRANSFORMERS = {
    "encoder": {"batch": 2, "seq": 8, "d_model": 16, "heads": 2, "ffn": 32, "layers": 2},
}

# A workload whose definition changes what it measures gets a new revision here. The suites
# measure a model only with a package of the same revision (torchpulse.suite, API 3) and put
# the revision into their versions: the change starts new series, never a step. Unlisted: 1.
REVISIONS = {
    "ppl_robust_reg": 2,  # upstream's three Student-t likelihoods, unclamped prior draws
}


# The model families' tables (workloads/registry.py MODEL_FAMILIES): family -> (its table,
# model -> preset -> row; its counting table, model -> row). A new family's sizes are its two
# tables and a row here.
MODEL_SIZES = {"transformers": (TRANSFORMERS, INSTRUCTION_TRANSFORMERS)}


def counting() -> dict:
    """The tables the instruction counts build every family at (one row each, the preset
    named ``instructions``)."""
    return {**INSTRUCTIONS, **{family: rows for family, (_, rows) in MODEL_SIZES.items()}}


def by_preset() -> dict:
    """The tables the GPU suite and its workers take (preset -> row; gpu.measure.sizes_at
    picks one preset's), with the autograd models' revisions."""
    return {"fastrnns": FASTRNNS, "autograd": AUTOGRAD,
            **{family: rows for family, (rows, _) in MODEL_SIZES.items()},
            "revisions": REVISIONS}


def digest(*tables: object) -> str:
    """A short fingerprint of ``tables`` (JSON with sorted keys): part of the suites'
    versions, so that a size change starts new series."""
    text = json.dumps(tables, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]
