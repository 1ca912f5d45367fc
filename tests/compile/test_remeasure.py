"""The zoo measured model by model with the canary read around each, and measured again where
the canary read slow (compile/remeasure.py and bench_compile's setup_cache)."""

import importlib
import sys

import pytest
from paths import ROOT

from torchpulse.compile import remeasure

MS = 1e-3


def test_slow_around_is_against_the_median_of_the_process():
    readings = {("a", "x"): (10 * MS, 10.2 * MS), ("b", "x"): (10.1 * MS, 13.0 * MS),
                ("c", "x"): (9.9 * MS, 10 * MS)}
    assert remeasure.slow_around(readings) == [("b", "x")]  # 13 > 1.25 x 10.05
    assert remeasure.slow_around({("a", "x"): (10 * MS, 50 * MS)}) == []  # too few readings


def _script(values):
    it = iter(values)
    return lambda: next(it) * MS


def test_a_pair_the_canary_read_slow_around_is_measured_again_and_the_quieter_kept():
    calls, lines = [], []

    def measure(model, backend):
        calls.append((model, backend))
        return f"{model}/{backend}#{calls.count((model, backend))}"

    # readings: a (10, 10), b (10, 17), c (17, 10), d (10, 10); then again: b (10, 10),
    # c (18, 18) -- b's second measurement is quieter, c's is not
    read = _script([10, 10, 10, 17, 17, 10, 10, 10, 10, 10, 18, 18])
    parts, around = remeasure.measure_all(["a", "b", "c", "d"], ["x"], measure, read,
                                          log=lines.append)
    assert calls == [("a", "x"), ("b", "x"), ("c", "x"), ("d", "x"), ("b", "x"), ("c", "x")]
    assert parts == {("a", "x"): "a/x#1", ("b", "x"): "b/x#2", ("c", "x"): "c/x#1",
                     ("d", "x"): "d/x#1"}
    assert around[("b", "x")] == (10 * MS, 10 * MS) and around[("c", "x")] == (17 * MS, 10 * MS)
    assert len(lines) == 2 and "kept the second" in lines[0] and "kept the first" in lines[1]


def test_merge_gives_every_model_and_the_failure_rate_per_backend():
    def part(model, backend, status):
        return {"models": {(model, backend): {"status": status}}, "failure_rate": {}}

    parts = {("m1", "x"): part("m1", "x", "pass"), ("m2", "x"): part("m2", "x", "fail_to_run"),
             ("m1", "y"): part("m1", "y", "pass_due_to_skip"),
             ("gone", "y"): {"models": {}, "failure_rate": {}}}  # not in that package
    zoo = remeasure.merge_zoo(parts)
    assert set(zoo["models"]) == {("m1", "x"), ("m2", "x"), ("m1", "y")}
    assert zoo["failure_rate"] == {"x": 0.5, "y": 0.0}


@pytest.fixture
def bench_compile():
    sys.path.insert(0, str(ROOT))
    try:
        yield importlib.import_module("benchmarks.bench_compile")
    finally:
        sys.path.remove(str(ROOT))


def test_the_suites_setup_cache_reads_the_canary_around_each_model(bench_compile, monkeypatch):
    measured = []

    class Suite:
        @staticmethod
        def compile_zoo(models, backends):
            measured.append((models, backends))
            (model,), (backend,) = models, backends
            return {"models": {(model, backend): {"status": "pass", "step_seconds": 1.0}},
                    "failure_rate": {backend: 0.0}}

    n = len(bench_compile.MODELS) * len(bench_compile.BACKENDS)
    slow_once = [10.0] * (2 * n)
    slow_once[3] = 30.0  # after the second model of the first backend
    monkeypatch.setattr(bench_compile, "_suite", Suite)
    monkeypatch.setattr(bench_compile, "_read_canary", _script(slow_once + [10.0, 10.0]))
    zoo = bench_compile._measure_zoo(None)
    assert len(measured) == n + 1
    assert measured[-1] == ([bench_compile.MODELS[1]], [bench_compile.BACKENDS[0]])
    assert len(zoo["models"]) == n
    assert zoo["failure_rate"] == dict.fromkeys(bench_compile.BACKENDS, 0.0)


def test_a_canary_reading_runs_on_every_core_and_puts_the_threads_back(bench_compile):
    import torch

    torch.set_num_threads(1)
    assert bench_compile._read_canary() > 0
    assert torch.get_num_threads() == 1


def test_dynamos_counters_are_exact_series_stored_lower_is_better(bench_compile):
    import math

    from torchpulse.kinds import EXACT, kind_of

    counted = {"status": "pass", "graph_breaks": 2.0, "unique_graphs": 3.0,
               "calls_captured": 120.0, "eager_frames": 1.0}
    zoo = {"models": {("m", "inductor"): counted,
                      ("old", "inductor"): {"status": "pass"},  # an older package's
                      ("failed", "inductor"): {"status": "fail_to_run",
                                               "calls_captured": math.nan}}}
    bench = bench_compile.CompiledModel()
    names = ("track_graph_breaks", "track_unique_graphs", "track_calls_captured",
             "track_eager_frames")
    bench.setup(zoo, "m", "inductor")
    assert [getattr(bench, n)(zoo, "m", "inductor") for n in names] == [2.0, 3.0, 1 / 120, 1.0]
    # fewer calls captured reads as a rise, as every asv series is lower-is-better
    assert {kind_of(getattr(bench_compile.CompiledModel, n).unit).name for n in names} == \
        {EXACT}
    for model in ("old", "failed"):
        bench.setup(zoo, model, "inductor")
        assert all(math.isnan(getattr(bench, n)(zoo, model, "inductor")) for n in names)
