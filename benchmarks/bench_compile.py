"""Eager vs torch.compile over the zoo (what `torchpulse dynamo` measures), inference at the
device's preset. One process measures every model under every backend (asv's setup_cache,
shared by both classes); the track_* benchmarks read its numbers. Each compile starts from an
empty inductor cache, so a rerun never times a warm cache. The machine canary is read around
each model, and a model it read slow around is measured again (compile/remeasure.py)."""

import math
import os
import sys

from . import _canary
from ._common import _allocation, _suite
from ._tree import load

_choices = load("compile/choices.py")
_remeasure = load("compile/remeasure.py")
MODELS = list(_choices.MODELS)
BACKENDS = list(_choices.TRACKED_BACKENDS)


def _read_canary():
    """The canary's median of 5 timings, on every core as between the suites (the zoo runs
    single-threaded: its thread count is put back)."""
    return _canary.reading(os.cpu_count() or 1)


def _measure_zoo(self):
    if _suite is None or not hasattr(_suite, "compile_zoo"):
        return None  # an older package: the benchmarks skip in setup
    parts, _ = _remeasure.measure_all(
        MODELS, BACKENDS, lambda model, backend: _suite.compile_zoo([model], [backend]),
        _read_canary, log=lambda line: print(f"bench_compile: {line}", file=sys.stderr))
    return _remeasure.merge_zoo(parts)


_measure_zoo.timeout = 1800


class CompiledModel:
    version = "1-" + _allocation.POLICY  # the zoo's processes keep freed memory (_common)
    params = [MODELS, BACKENDS]
    param_names = ["model", "backend"]
    setup_cache = _measure_zoo

    def setup(self, zoo, model, backend):
        if zoo is None:
            raise NotImplementedError("this commit's torchpulse has no compile suite")
        if (model, backend) not in zoo["models"]:
            raise NotImplementedError(f"{model} is not in this commit's zoo")
        self.tracked = zoo["models"][(model, backend)]

    def track_step_time(self, zoo, model, backend):
        return self.tracked["step_seconds"]  # nan: it failed to compile or run

    track_step_time.unit = "seconds"

    def track_latency_ratio(self, zoo, model, backend):
        return self.tracked["latency_ratio"]

    track_latency_ratio.unit = "compiled/eager"

    def track_compile_time(self, zoo, model, backend):
        return self.tracked["compile_seconds"]

    track_compile_time.unit = "seconds"

    def track_memory_ratio(self, zoo, model, backend):
        return self.tracked["memory_ratio"]

    track_memory_ratio.unit = "compiled/eager"

    # dynamo's counters: exact, so any increase is a regression (torchpulse alert)
    def track_graph_breaks(self, zoo, model, backend):
        return self.tracked.get("graph_breaks", math.nan)  # absent: an older package

    track_graph_breaks.unit = "graph breaks"

    def track_unique_graphs(self, zoo, model, backend):
        return self.tracked.get("unique_graphs", math.nan)

    track_unique_graphs.unit = "graphs"

    def track_calls_captured(self, zoo, model, backend):
        """Inverted, as asv's series are lower-is-better: fewer calls captured is worse."""
        calls = self.tracked.get("calls_captured", math.nan)
        return 1.0 / calls if calls > 0 else math.nan

    track_calls_captured.unit = "1/calls captured"

    def track_eager_frames(self, zoo, model, backend):
        return self.tracked.get("eager_frames", math.nan)

    track_eager_frames.unit = "eager frames"


class CompileZoo:
    version = "1"
    params = [BACKENDS]
    param_names = ["backend"]
    setup_cache = _measure_zoo

    def setup(self, zoo, backend):
        if zoo is None:
            raise NotImplementedError("this commit's torchpulse has no compile suite")

    def track_failure_rate(self, zoo, backend):
        return zoo["failure_rate"][backend]

    track_failure_rate.unit = "failed/models"


class MachineCanary(_canary.MachineCanary):
    # in the zoo's setup_cache group, so it runs after the compiles and the track_* reads;
    # one round, like the zoo's track_* (a second would compile the zoo again)
    setup_cache = _measure_zoo
    rounds = 1
