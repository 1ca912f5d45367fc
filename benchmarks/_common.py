"""The tiny base shared by the workload suites (underscore: asv does not collect it).

torch and torchpulse are imported here, at module level, because asv's forkserver imports
the suite once per commit and forks every benchmark from it: the ~1.2 s torch import is paid
once instead of once per benchmark. A commit whose package lacks torchpulse.suite still
imports this module; its benchmarks are then skipped in setup instead of failing.
"""

import os

import torch

from ._tree import load


def _cpu_only() -> bool:
    """Whether this run can never touch CUDA (a CPU build of torch, or TORCHPULSE_DEVICE=cpu):
    only then may the forkserver parent run torch code, since CUDA must not be initialised
    before a fork."""
    return torch.version.cuda is None or os.environ.get("TORCHPULSE_DEVICE") == "cpu"


def _prewarm_autograd():
    """One tiny forward and backward in the forkserver parent: every benchmark's process is
    forked from it and no longer pays the autograd engine's first use (~0.5 s each)."""
    x = torch.ones(4, requires_grad=True)
    (x * 2.0).sum().backward()


if _cpu_only():
    _prewarm_autograd()

# before any benchmark is forked from this process: every measured process (and the zoo's
# workers they spawn) keeps the host memory it frees, so no timed call page-faults on memory
# an earlier call had (torchpulse/allocation.py says why)
_allocation = load("allocation.py")
_allocation.keep_freed_memory()

try:
    from torchpulse import suite as _suite
except ImportError as _exc:  # an old commit's package
    _suite = None
    _suite_error = str(_exc)


# torchpulse.suite.API_VERSION these suites need (older packages: benchmarks skipped): 2, the
# suite takes the sizes table of this working tree
_REQUIRED_API = 2
_sizes = load("sizes.py")
_fastrnns = load("fastrnns/choices.py")
_registry = load("workloads/registry.py")
# The families a suite's classes are split by (registry.FAMILIES): the older ones share the
# classes that hold their history, each model family has classes of its own, whose versions
# digest its sizes alone
_OLDER_FAMILIES = tuple(f for f in _registry.FAMILIES if f not in _registry.MODEL_FAMILIES)


def _asked(names: list[str]) -> list[str]:
    """The names this commit's package measures (registry.since_api): a package that
    predates a family is not asked for it."""
    api = getattr(_suite, "API_VERSION", 0)
    return [name for name in names if _registry.since_api(name) <= api]


def _model_classes(base: type, name: str, version, names: list[str]) -> dict[str, type]:
    """A class of ``base`` for each of registry.MODEL_FAMILIES, named ``name`` with the
    family's ``suite`` in it (``{suite}Workloads``), its version ``version(its tables,
    sizes.MODEL_SIZES' row)`` and its parameters the family's of ``names``: put into a
    suite module's namespace, for asv to find."""
    return {name.format(suite=row.suite): type(name.format(suite=row.suite), (base,), {
        "version": version(_sizes.MODEL_SIZES[family]),
        "params": [_registry.of_families(names, (family,))]})
        for family, row in _registry.MODEL_FAMILIES.items()}


def _version(*tables) -> str:
    """A workload suite's version: 2 (sizes from the working tree), the digest of the sizes
    it passes, and the allocation policy; a change in either starts new series."""
    return f"2-{_sizes.digest(*tables)}-{_allocation.POLICY}"


def _check_api():
    """NotImplementedError (asv's "skipped") when this commit's package cannot run the suites
    at this working tree's sizes."""
    if _suite is None:
        raise NotImplementedError(f"torchpulse.suite missing: {_suite_error}")
    if getattr(_suite, "API_VERSION", 0) < _REQUIRED_API:
        raise NotImplementedError("this commit's torchpulse.suite predates these suites")


def _check_cpu_run():
    """NotImplementedError on CUDA runs, before anything touches CUDA: there bench_gpu
    measures every workload in one process (a process a benchmark paid ~12 s of set-up for
    regions of 3-20 ms, docs/gpu.md)."""
    _check_api()
    if _suite.device() != "cpu":
        raise NotImplementedError("on CUDA runs bench_gpu measures this workload")


def _read_region_clock() -> float:
    return _suite.read_clock()


class _WorkloadSuite:
    """fastrnns runners of one family. Subclasses' versions hold the sizes' digest and the
    allocation policy (``_version``): a change in either starts new series."""

    family = ""
    param_names = ["runner"]
    # One process per benchmark and round, warmed up by torchpulse: no asv warm-up, one call
    # per sample. Two rounds of 4-10 samples (more while under 0.15 s of measured time): run
    # with --interleave-rounds, a commit's samples come from two moments of the run, since
    # the run-to-run spread, not the sample count, limits a commit's level.
    rounds = 2
    number = 1
    warmup_time = 0.0
    repeat = (4, 10, 0.15)
    timer = staticmethod(_read_region_clock)

    def setup(self, runner):
        _check_cpu_run()
        self.workload = _suite.workload(runner, self.family, _sizes.FASTRNNS)
        self.clock = _suite.clock()

    # Each process measures one thing and warms up only that, on its first call and outside
    # the timed region (setup cannot tell which benchmark it is preparing).
    def time_forward(self, runner):
        _suite.warm_up(self.workload, "forward")
        self.workload.forward(self.clock)

    def time_backward(self, runner):
        _suite.warm_up(self.workload, "step")
        # the forward pass runs too, outside the timed region
        self.workload.step(backward_clock=self.clock)

    # forward-only runners (upstream times no backward for them): asv_runner skips these
    # parameters before setup: nothing is built for them
    time_backward.skip_params = [(name,) for name in _fastrnns.FORWARD_ONLY]

    def peakmem_step(self, runner):
        # peak RSS of the process: import, build and one step; warm-up would not lower it
        self.workload.step()


class _ModelSuite(_WorkloadSuite):
    """A model family's (registry.MODEL_FAMILIES) forward alone, backward alone and the peak
    memory of a training step, on CPU runs; ``_model_suite`` makes one a family."""

    param_names = ["model"]

    def setup(self, model):
        _check_cpu_run()
        row = _registry.MODEL_FAMILIES[self.family]
        api = getattr(_suite, "API_VERSION", 0)
        if api < row.api:
            raise NotImplementedError(f"this commit's torchpulse has no {self.family} family")
        table = _sizes.MODEL_SIZES[self.family][0]
        if api >= 12:
            self.workload = _suite.model(self.family, model, table)
        else:  # API 11, the transformers' first, built them by a function of their own
            self.workload = _suite.transformer(model, table)
        self.clock = _suite.clock()


def _model_suite(family: str) -> type:
    """The wall-time suite of the model family ``family``: bench_<family>.<its suite name>,
    its version the digest of its own sizes."""
    row = _registry.MODEL_FAMILIES[family]
    return type(row.suite, (_ModelSuite,), {"version": _version(_sizes.MODEL_SIZES[family][0]),
                                            "family": family, "params": [list(row.models)]})
