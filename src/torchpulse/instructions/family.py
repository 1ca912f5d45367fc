"""The workloads by name, and which of them the instruction counts take. Standard library
only: the asv suites load this file by path from the working tree (benchmarks/_tree.py).
The GPU suite (bench_gpu) measures every workload on CUDA under the same names.

A workload is ``rnns/<runner>/forward``, ``rnns/<runner>/backward`` (the fastrnns LSTMs,
fixed and variable length), ``cnns/<runner>/forward|backward`` (the ResNets) or
``autograd/<model>/<task>`` (the functional-autograd pairs): the same regions the wall-time
suites time, at the sizes of ``sizes.INSTRUCTIONS``.
"""

from __future__ import annotations

from types import ModuleType


def rnn_workloads(fastrnns: ModuleType) -> list[str]:
    runners = fastrnns.RUNNERS
    out = []
    for name, info in runners.items():
        if info.family != "rnns":
            continue
        out.append(f"rnns/{name}/forward")
        if not info.forward_only:
            out.append(f"rnns/{name}/backward")
    return out


def cnn_workloads(fastrnns: ModuleType) -> list[str]:
    runners = fastrnns.RUNNERS
    return [f"cnns/{name}/{kind}" for name, info in runners.items() if info.family == "cnns"
            for kind in ("forward", "backward")]


def autograd_workloads(autograd: ModuleType) -> list[str]:
    choices = autograd
    return [f"autograd/{model}/{task}" for model in choices.MODELS
            for task in choices.TASKS if task in choices.MODEL_TASKS[model]]


def workloads(fastrnns: ModuleType, autograd: ModuleType) -> list[str]:
    """Every counted workload, in the order one process counts them; ``fastrnns`` and
    ``autograd`` are the ``choices`` modules of those packages (the suites pass the working
    tree's)."""
    return [*rnn_workloads(fastrnns), *cnn_workloads(fastrnns), *autograd_workloads(autograd)]


def split(name: str) -> tuple[str, str, str]:
    """(family, runner or model, region or task) of a workload name; ValueError otherwise."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] not in ("rnns", "cnns", "autograd") or not all(parts):
        raise ValueError(f"not an instruction workload: {name!r}")
    return parts[0], parts[1], parts[2]


# What `make dashboard` counts unless told otherwise: the native LSTM (forward, backward), the
# eager Python one, a variable-length batch and two autograd tasks of a small model, about
# 35 s a commit under callgrind (docs/instructions.md). TorchScript's runners cost 20 s more
# (its compiler runs under valgrind too), and the whole family (``all``) takes over 15
# minutes a commit: the ResNets' and the vision models' arithmetic costs most of it.
CORE = ("rnns/cudnn/forward", "rnns/cudnn/backward", "rnns/py/forward", "rnns/py/backward",
        "rnns/vl_py/forward", "autograd/ppl_simple_reg/vjp", "autograd/ppl_simple_reg/hvp")
SELECTION_ENV = "TORCHPULSE_INSTRUCTIONS"
SELECTIONS = ("core", "all")


def selected(fastrnns: ModuleType, autograd: ModuleType, choice: str | None) -> list[str]:
    """The workloads a run counts: ``core`` (the default, None or empty) or ``all``;
    ValueError for anything else."""
    every = workloads(fastrnns, autograd)
    choice = choice or "core"
    if choice == "all":
        return every
    if choice == "core":
        return [w for w in every if w in CORE]
    raise ValueError(f"${SELECTION_ENV} must be one of {', '.join(SELECTIONS)}, "
                     f"not {choice!r}")


def matching(names: list[str], patterns: str | None) -> list[str]:
    """The names that match one of ``patterns``, comma-separated shell patterns
    (``rnns/*,autograd/resnet18/*``); all of them when ``patterns`` is None or empty."""
    import fnmatch

    wanted = [p.strip() for p in (patterns or "").split(",") if p.strip()]
    if not wanted:
        return list(names)
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in wanted)]
