"""Every workload by name, and the selections of them each meter takes: the one registry.
Standard library only: the asv suites load this file by path from the working tree
(benchmarks/_tree.py), so every commit of a run is measured under the same names.

A workload is ``<family>/<runner or model>/<region or task>``:
``rnns/<runner>/forward|backward`` (the fastrnns LSTMs, fixed and variable length),
``cnns/<runner>/forward|backward`` (the ResNets), ``autograd/<model>/<task>`` (the
functional-autograd pairs) and ``transformers/<model>/forward|backward`` (a small
transformer encoder). The wall-time suites time these regions, the instruction counts count
them at the counting sizes (sizes.py) and the GPU suite measures them on CUDA.
"""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple


class ModelFamily(NamedTuple):
    """A family of models with a forward and a backward region each, declared by this row
    alone: the suites, the counts, the GPU suite and the stage take it from here."""

    module: str  # workloads/<module>.py, whose ``Model`` builds one (regions.model_class)
    models: tuple[str, ...]  # each has a row in its tables (sizes.MODEL_SIZES)
    suite: str  # its classes' name: bench_<family>.<suite>, bench_gpu.<suite>Workloads, ...
    api: int  # the torchpulse.suite API_VERSION that first builds it: older commits skip it


# The model families, in the order they are counted after the older ones. A new family is
# its module, a row here, its tables in sizes.py (MODEL_SIZES), benchmarks/bench_<family>.py
# naming it, and its tests.
MODEL_FAMILIES = {
    "transformers": ModelFamily("transformer", ("encoder",), "Transformer", 11),
}
# family -> (the sizes table its workloads are built from, whether that table has a row per
# runner or model rather than one row for the whole family). A family's own table: the
# suites digest only the tables of the workloads they measure, so a new family leaves every
# other series' version alone (tests/test_suite_versions.py)
FAMILIES = {"rnns": ("fastrnns", False), "cnns": ("fastrnns", False),
            "autograd": ("autograd", True),
            **{family: (family, True) for family in MODEL_FAMILIES}}
REGIONS = ("forward", "backward")


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
            for kind in REGIONS]


def autograd_workloads(autograd: ModuleType) -> list[str]:
    choices = autograd
    return [f"autograd/{model}/{task}" for model in choices.MODELS
            for task in choices.TASKS if task in choices.MODEL_TASKS[model]]


def model_workloads(family: str) -> list[str]:
    """The workloads of one of MODEL_FAMILIES: each model's forward and backward."""
    return [f"{family}/{model}/{region}" for model in MODEL_FAMILIES[family].models
            for region in REGIONS]


def since_api(name: str) -> int:
    """The torchpulse.suite API_VERSION that first measures workload ``name``: a suite asks
    an older commit's package for none of those it lacks (0: every package)."""
    family = name.split("/", 1)[0]
    return MODEL_FAMILIES[family].api if family in MODEL_FAMILIES else 0


def workloads(fastrnns: ModuleType, autograd: ModuleType) -> list[str]:
    """Every workload, in the order one process counts them; ``fastrnns`` and ``autograd``
    are the ``choices`` modules of those packages (the suites pass the working tree's)."""
    return [*rnn_workloads(fastrnns), *cnn_workloads(fastrnns), *autograd_workloads(autograd),
            *(name for family in MODEL_FAMILIES for name in model_workloads(family))]


def of_families(names: list[str], families: tuple[str, ...]) -> list[str]:
    """The names of ``families``, in ``names``' order: what one suite class measures."""
    return [n for n in names if n.split("/", 1)[0] in families]


def split(name: str) -> tuple[str, str, str]:
    """(family, runner or model, region or task) of a workload name; ValueError otherwise."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] not in FAMILIES or not all(parts):
        raise ValueError(f"not a workload: {name!r}")
    return parts[0], parts[1], parts[2]


def row(name: str, rows: dict) -> dict | None:
    """The sizes ``name`` is built at, of ``rows`` (the tables at one preset: {"fastrnns":
    one row or None, "autograd": {model: row}, ...}); None where there are none."""
    family, what, _ = split(name)
    table, per_model = FAMILIES[family]
    found = rows.get(table)
    if per_model:
        found = (found or {}).get(what)
    return found if isinstance(found, dict) else None


# Left out of the default count (docs/instructions.md, "Cost"): the TorchScript ResNets run
# the plain ResNets' kernels, which are counted, and their traced build takes 7-10 s a
# workload under valgrind; DETR's jvp and vhp are the costliest of all (30-37 s a workload).
# ``all`` counts them too.
LEFT_OUT = ("cnns/resnet18_jit/*", "cnns/resnet50_jit/*", "autograd/detr/jvp",
            "autograd/detr/vhp")
# A quick subset (about half a minute a commit): the native LSTM, the eager Python one, a
# variable-length batch and two autograd tasks of a small model.
CORE = ("rnns/cudnn/forward", "rnns/cudnn/backward", "rnns/py/forward", "rnns/py/backward",
        "rnns/vl_py/forward", "autograd/ppl_simple_reg/vjp", "autograd/ppl_simple_reg/hvp")
SELECTION_ENV = "TORCHPULSE_INSTRUCTIONS"
SELECTIONS = ("default", "all", "core")
# the models whose calls cost most (0.2-4 s each under valgrind, one call a window): counted
# first, so that two cores end together, and warmed up by fewer calls (windows.warm_up_calls)
HEAVY = ("cnns/", "autograd/resnet18/", "autograd/fcn_resnet/", "autograd/detr/",
         "autograd/deepspeech/")


def selected(fastrnns: ModuleType, autograd: ModuleType, choice: str | None) -> list[str]:
    """The workloads a run counts, the heaviest first: ``default`` (None or empty: every
    workload but LEFT_OUT), ``all``, ``core``, or comma-separated shell patterns of
    workload names (``autograd/ppl_robust_reg/*``); ValueError for anything else."""
    every = workloads(fastrnns, autograd)
    choice = choice or "default"
    if choice == "all":
        chosen = every
    elif choice == "default":
        left_out = set(matching(every, ",".join(LEFT_OUT)))
        chosen = [w for w in every if w not in left_out]
    elif choice == "core":
        chosen = [w for w in every if w in CORE]
    elif "/" in choice:  # shell patterns of workload names: what compare or bisect narrow to
        chosen = matching(every, choice)
        if not chosen:
            raise ValueError(f"${SELECTION_ENV}={choice!r} matches no workload")
    else:
        raise ValueError(f"${SELECTION_ENV} must be one of {', '.join(SELECTIONS)} or "
                         f"patterns of workload names, not {choice!r}")
    return sorted(chosen, key=lambda w: not w.startswith(HEAVY))  # stable: heaviest first


# Workloads of one runner or model counted in one child, in the family's order, this many at
# most: they share the child's switch to instrumentation and valgrind's instrumented
# translations of their common code (docs/instructions.md, "Cost"), and a narrowed count
# (compare, bisect) counts at most this many to give one workload the figure a full count
# gives it. A left-out workload is counted alone, so that ``all`` and ``default`` agree.
GROUP = 4


def group_key(name: str) -> str:
    """What a workload is grouped by: its family and runner or model, or its own name for
    the workloads left out of the default."""
    if matching([name], ",".join(LEFT_OUT)):
        return name
    parts = name.split("/")
    return "/".join(parts[:2]) if len(parts) == 3 else name


def groups(every: list[str], names: list[str]) -> list[list[str]]:
    """The children a count of ``names`` forks, each a list of workloads counted in it in
    that order: the chunk of at most GROUP workloads of ``every`` (``workloads()``: the
    same chunks whatever is asked) that holds each of ``names``, in the order the first of
    ``names`` in each appears; a name not in ``every`` alone (it fails alone)."""
    by_key: dict[str, list[str]] = {}
    for name in every:
        by_key.setdefault(group_key(name), []).append(name)
    chunk_of: dict[str, tuple[str, ...]] = {}
    for members in by_key.values():
        for start in range(0, len(members), GROUP):
            chunk = tuple(members[start:start + GROUP])
            chunk_of.update(dict.fromkeys(chunk, chunk))
    out: dict[tuple[str, ...], None] = {}
    for name in names:
        out.setdefault(chunk_of.get(name, (name,)), None)
    return [list(chunk) for chunk in out]


# Left out of the GPU suite's default: the variable-length Python and TorchScript loops, as
# upstream's fastrnns leaves them to --variable-lstms. Their calls launch 13,000-60,000
# kernels, and profiling them took about 120 s of a commit on an H200 (docs/gpu.md, "Where
# the time goes"); vl_cudnn stays.
GPU_LEFT_OUT = ("rnns/vl_jit/*", "rnns/vl_py/*")
GPU_SELECTION_ENV = "TORCHPULSE_GPU_WORKLOADS"


def gpu_selected(every: list[str], choice: str | None) -> list[str]:
    """The workloads the GPU suite measures, in ``every``'s order: every one but
    GPU_LEFT_OUT for None, empty or ``default``; ``all``; else those matching ``choice``'s
    comma-separated shell patterns (none for a list of empty patterns such as ``,``: it
    names no workload, and measuring all 80 is not what it asked)."""
    choice = (choice or "").strip()
    if choice in ("", "default"):
        left_out = set(matching(every, ",".join(GPU_LEFT_OUT)))
        return [w for w in every if w not in left_out]
    if choice == "all":
        return list(every)
    if not any(p.strip() for p in choice.split(",")):
        return []
    return matching(every, choice)


def matching(names: list[str], patterns: str | None) -> list[str]:
    """The names that match one of ``patterns``, comma-separated shell patterns
    (``rnns/*,autograd/resnet18/*``); all of them when ``patterns`` is None or empty."""
    import fnmatch

    wanted = [p.strip() for p in (patterns or "").split(",") if p.strip()]
    if not wanted:
        return list(names)
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in wanted)]
