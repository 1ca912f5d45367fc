"""The asv glue: benchmarks/ classes over torchpulse.suite."""

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

from torchpulse import suite
from torchpulse.fastrnns.choices import CNN_RUNNERS, LSTM_RUNNERS, VL_RUNNERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT))
    try:
        yield {name: importlib.import_module(f"benchmarks.{name}")
               for name in ("bench_rnns", "bench_cnns")}
    finally:
        sys.path.remove(str(ROOT))


@pytest.fixture
def smoke(monkeypatch):
    monkeypatch.setenv("TORCHPULSE_PRESET", "smoke")
    suite.workload.cache_clear()
    yield
    suite.workload.cache_clear()


def test_suites_cover_every_runner_with_explicit_versions(bench):
    classes = [bench["bench_rnns"].LSTM, bench["bench_rnns"].VariableLengthLSTM,
               bench["bench_cnns"].ResNet]
    assert classes[0].params == [list(LSTM_RUNNERS)]
    assert classes[1].params == [list(VL_RUNNERS)]
    assert classes[2].params == [list(CNN_RUNNERS)]
    for cls in classes:
        assert "version" in vars(cls), f"{cls.__name__} needs its own explicit version"
        assert {"time_forward", "time_backward", "peakmem_step"} <= set(dir(cls))


def test_unknown_or_foreign_runner_is_skipped_not_failed(smoke):
    with pytest.raises(NotImplementedError):
        suite.workload("gru", "rnns")
    with pytest.raises(NotImplementedError):
        suite.workload("resnet18", "rnns")


def test_package_with_an_older_suite_api_is_skipped(bench, smoke, monkeypatch):
    monkeypatch.delattr(suite, "API_VERSION")
    with pytest.raises(NotImplementedError, match="predates"):
        bench["bench_cnns"].ResNet().setup("resnet18")


def test_benchmark_flow_as_asv_runs_it(bench, smoke):
    """setup before every sample (asv#966) is a cache hit; the timer sees only the region."""
    lstm = bench["bench_rnns"].LSTM()
    lstm.setup("jit")
    built = lstm.workload
    lstm.setup("jit")
    assert lstm.workload is built
    timer = bench["bench_rnns"].LSTM.timer
    t0 = timer()
    lstm.time_backward("jit")
    t1 = timer()
    lstm.time_forward("jit")
    t2 = timer()
    assert t1 > t0 and t2 > t1
    assert (id(built), "step") in suite._warm and (id(built), "forward") in suite._warm


def test_warm_up_runs_settle_iterations_once(smoke, monkeypatch):
    built = suite.workload("py", "rnns")
    calls = []
    monkeypatch.setattr(built, "forward", lambda *a: calls.append("f"))
    suite.warm_up(built, "forward")
    suite.warm_up(built, "forward")
    assert calls == ["f"] * built.runner.settle_iterations
    with pytest.raises(ValueError):
        suite.warm_up(built, "sideways")


def test_asv_conf_is_what_the_design_requires():
    from asv import util

    conf = util.load_json(str(ROOT / "asv.conf.json"), js_comments=True)
    assert conf["repo"] == "." and conf["branches"] == ["main"]
    assert conf["environment_type"] == "virtualenv"
    assert conf["matrix"]["req"]["torch"] == "2.13.0"
    assert all(re.fullmatch(r"\d+(\.\d+)*", v) for v in conf["matrix"]["req"].values())
    assert "--no-deps" in conf["build_command"][0] and "--no-build-isolation" in \
        conf["build_command"][0]
    assert "--no-deps" in conf["install_command"][0]
    assert (conf["results_dir"], conf["html_dir"], conf["benchmark_dir"]) == (
        "results", "html", "benchmarks")
    assert conf["launch_method"] == "forkserver"
    json.dumps(conf)


def test_stub_suites_match_the_importers_catalog(capsys):
    """asv's discovery of benchmarks/external gives what the importer writes into
    benchmarks.json: same names, types, units, versions and parameter names."""
    from asv_runner.discovery import disc_benchmarks

    from torchpulse.results.external import STUBS
    from torchpulse.results.store import benchmark_entry

    sys.path.insert(0, str(ROOT))
    try:
        found = {b.name: b for b in disc_benchmarks(str(ROOT / "benchmarks"))
                 if b.name.startswith("external.")}
    finally:
        sys.path.remove(str(ROOT))
    expected = {}
    for stub in STUBS.values():
        for metric in stub.metrics:
            entry = benchmark_entry(stub, metric, [])
            expected[entry["name"]] = entry
    assert set(found) == set(expected)
    for name, bench in found.items():
        entry = expected[name]
        assert (bench.type, bench.unit, bench.version, list(bench.param_names)) == (
            entry["type"], entry["unit"], entry["version"], entry["param_names"]), name
        bench.set_param_idx(0)
        assert bench.do_setup() is True  # skipped: asv records a skip if anyone runs a stub
    assert capsys.readouterr().out.count("imported results only") == len(found)


def test_bench_compile_covers_the_zoo_and_measures_it_once():
    """Every zoo model is tracked, and asv sees one setup_cache for both classes (the zoo is
    measured once per commit, not once per class)."""
    from asv_runner.discovery import disc_benchmarks

    from torchpulse.compile.performance import BACKENDS
    from torchpulse.compile.zoo import ZOO

    sys.path.insert(0, str(ROOT))
    try:
        bench_compile = importlib.import_module("benchmarks.bench_compile")
        found = [b for b in disc_benchmarks(str(ROOT / "benchmarks"))
                 if b.name.startswith("bench_compile.")]
    finally:
        sys.path.remove(str(ROOT))
    assert bench_compile.MODELS == [m.name for m in ZOO]
    assert set(bench_compile.BACKENDS) <= set(BACKENDS)
    assert {b.name for b in found} == {
        "bench_compile.CompiledModel.track_step_time",
        "bench_compile.CompiledModel.track_latency_ratio",
        "bench_compile.CompiledModel.track_compile_time",
        "bench_compile.CompiledModel.track_memory_ratio",
        "bench_compile.CompileZoo.track_failure_rate"}
    assert len({b.setup_cache_key for b in found}) == 1


def test_compile_zoo_hands_asv_plain_data(monkeypatch):
    """setup_cache's value is unpickled once per parameter combination: no torchpulse
    classes in it (each would import the compile package again)."""
    import pickle
    import pickletools

    monkeypatch.setenv("TORCHPULSE_PRESET", "smoke")
    zoo = suite.compile_zoo(["mlp"], ["eager"])
    assert zoo["models"][("mlp", "eager")]["status"] == "pass"
    assert zoo["models"][("mlp", "eager")]["latency_ratio"] > 0
    assert zoo["failure_rate"] == {"eager": 0.0}
    opcodes = {op.name for op, _, _ in pickletools.genops(pickle.dumps(zoo))}
    assert not opcodes & {"GLOBAL", "STACK_GLOBAL", "REDUCE"}
