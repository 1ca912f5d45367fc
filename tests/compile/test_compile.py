"""The compile suite: the zoo under aot_eager and inductor, the accuracy rules, every status
(models built to fail), the CSV, the summary arithmetic, the config and the CLI."""

import csv
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from asvproject import make_project

from torchpulse.cli import main
from torchpulse.compile import accuracy, choices, config, performance, providers, report
from torchpulse.compile.memory import state_bytes, transient_peak
from torchpulse.compile.report import ModelResult
from torchpulse.compile.run import Job, SelectionError, make_job, run_job, select
from torchpulse.compile.worker import Worker
from torchpulse.compile.zoo import ZOO
from torchpulse.results.importers import dynamo as dynamo_importer

FAULTY = str(Path(__file__).with_name("faulty_models.py"))
ZOO_BY_NAME = {m.name: m for m in ZOO}
FAULTY_BY_NAME = {m.name: m for m in providers.models_from(FAULTY)}
DEFAULTS = config.load()


def _job(name, mode="accuracy", backend="aot_eager", training=False, models=ZOO_BY_NAME,
         cfg=DEFAULTS, **changes):
    job = make_job(models[name], cfg, mode, training, backend, "cpu", "smoke", repeat=3)
    return Job(**{**job.__dict__, **changes})


# --- the zoo -------------------------------------------------------------------------------------

def test_zoo_follows_the_torch_free_name_list():
    assert tuple(m.name for m in ZOO) == choices.MODELS
    assert set(choices.TRACKED_BACKENDS) <= set(choices.BACKENDS)


def test_zoo_has_the_models_compilers_care_about():
    assert len(ZOO) >= 8
    assert {"cnn_bn", "resnet18", "lstm", "transformer_encoder", "mlp", "attention",
            "embedding_bag", "control_flow"} <= set(ZOO_BY_NAME)
    for spec in ZOO:
        assert set(spec.batch_size) == {"smoke", "cpu", "cuda"}, spec.name


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name", sorted(ZOO_BY_NAME))
def test_every_zoo_model_passes_accuracy_at_smoke_size(name, backend):
    result = run_job(_job(name, backend=backend), ZOO_BY_NAME)
    assert result.status == "pass", result.detail
    assert result.dynamo_stats["unique_graphs"] >= 1


@pytest.mark.parametrize("name", sorted(ZOO_BY_NAME))
def test_every_zoo_model_passes_training_accuracy_under_aot_eager(name):
    result = run_job(_job(name, training=True), ZOO_BY_NAME)
    assert result.status == "pass", result.detail


def test_control_flow_model_breaks_the_graph_and_the_others_do_not():
    broken = run_job(_job("control_flow"), ZOO_BY_NAME).dynamo_stats
    whole = run_job(_job("mlp"), ZOO_BY_NAME).dynamo_stats
    assert broken["graph_breaks"] >= 1 and whole["graph_breaks"] == 0


def test_zoo_inputs_are_reproducible_and_batch_sized():
    for spec in ZOO:
        a = spec.make("smoke", 3, torch.Generator().manual_seed(0))[1]
        b = spec.make("smoke", 3, torch.Generator().manual_seed(0))[1]
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True)), spec.name
        assert a[0].shape[0] == 3 or spec.name == "embedding_bag", spec.name


# --- same(): upstream's accuracy rules -----------------------------------------------------------

def test_same_accepts_allclose_and_rejects_beyond_tolerance():
    ref = torch.ones(2000)
    assert accuracy.same(ref, ref + 5e-5, tol=1e-4)
    assert not accuracy.same(ref, ref + 1e-2, tol=1e-4)


def test_same_falls_back_to_rmse_against_float64():
    torch.manual_seed(0)
    fp64 = torch.randn(2000, dtype=torch.float64)
    eager = (fp64 + 1e-2 * torch.randn(2000, dtype=torch.float64)).float()  # eager is noisy
    near = (fp64 + 1.5e-2 * torch.randn(2000, dtype=torch.float64)).float()  # within 2x
    far = (fp64 + 5e-2 * torch.randn(2000, dtype=torch.float64)).float()  # beyond 2x
    assert accuracy.same(eager, near, fp64, tol=1e-4)
    assert not accuracy.same(eager, far, fp64, tol=1e-4)
    assert not accuracy.same(eager, near, None, tol=1e-4)  # no float64 run: no fallback


def test_same_cosine_mode_compares_direction():
    ref = torch.arange(1.0, 101.0)
    assert accuracy.same(ref, ref * 1.05, cosine=True)  # same direction, 5% longer
    assert not accuracy.same(ref, ref.flip(0), cosine=True)
    assert accuracy.same(torch.zeros(10), torch.zeros(10), cosine=True)


def test_same_walks_nested_outputs_and_checks_dtypes_and_shapes():
    a = (torch.ones(3), [torch.zeros(2), {"k": torch.ones(1)}], 7)
    assert accuracy.same(a, (torch.ones(3), [torch.zeros(2), {"k": torch.ones(1)}], 7))
    assert not accuracy.same(a, (torch.ones(3), [torch.zeros(2), {"k": torch.ones(1)}], 8))
    assert not accuracy.same(torch.ones(3), torch.ones(3, dtype=torch.float64))
    assert not accuracy.same(torch.ones(3), torch.ones(4))
    assert not accuracy.same([torch.ones(1)], [torch.ones(1), torch.ones(1)])
    assert accuracy.same(torch.tensor([1, 2]), torch.tensor([1, 2]))
    assert not accuracy.same(torch.tensor([1, 2]), torch.tensor([1, 3]))


# --- statuses, with models built to fail ---------------------------------------------------------

@pytest.mark.parametrize("name, status, detail", [
    ("faulty_load", "model_fail_to_load", "FileNotFoundError: weights.bin"),
    ("faulty_eager", "eager_fail_to_run", "this model cannot run"),
    ("faulty_flaky", "eager_two_runs_differ", "two eager runs differ"),
    ("faulty_accuracy", "fail_accuracy", "compiled differs from eager"),
    ("faulty_compile", "fail_to_run", "fails under torch.compile only"),
    ("fine_linear", "pass", ""),
])
def test_accuracy_statuses(name, status, detail):
    result = run_job(_job(name, models=FAULTY_BY_NAME), FAULTY_BY_NAME)
    assert result.status == status
    assert detail in result.detail and (result.detail == "") == (status == "pass")


def test_a_compiler_that_cannot_start_fails_each_model_with_the_reason(monkeypatch):
    def no_compiler(backend, device):
        raise RuntimeError("no C++ compiler found")

    monkeypatch.setattr(performance, "warm_up_compiler", no_compiler)
    for mode in ("accuracy", "performance"):
        result = run_job(_job("mlp", mode=mode), ZOO_BY_NAME)
        assert result.status == "fail_to_run" and "no C++ compiler" in result.detail


def test_non_deterministic_models_pass_due_to_skip():
    cfg = config.parse("non_deterministic: [faulty_flaky]")
    result = run_job(_job("faulty_flaky", models=FAULTY_BY_NAME, cfg=cfg), FAULTY_BY_NAME)
    assert result.status == "pass_due_to_skip"


def test_accuracy_checks_the_compiled_code_it_is_given_without_compiling_again():
    from torchpulse.compile.steps import prepare

    prepared = prepare(ZOO_BY_NAME["mlp"], "smoke", 4, False, "cpu")
    torch._dynamo.reset()
    compiled = torch.compile(prepared.iter_fn, backend="aot_eager")
    prepared.run(compiled)  # compiled for prepared.model, as a measurement leaves it
    torch._dynamo.utils.counters.clear()
    checked = accuracy.check(prepared, performance.compiler("aot_eager"), compiled=compiled)
    assert checked.status == "pass"
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 0  # nothing recompiled

    def off_by_one_percent(model, inputs):
        return compiled(model, inputs) * 1.01

    checked = accuracy.check(prepared, performance.compiler("aot_eager"),
                             compiled=off_by_one_percent)
    assert checked.status == "fail_accuracy"


@pytest.mark.parametrize("name, status, detail", [
    ("faulty_load", "model_fail_to_load", "weights.bin"),
    ("faulty_eager", "eager_fail_to_run", "this model cannot run"),
    ("faulty_compile", "fail_to_run", "fails under torch.compile only"),
])
def test_performance_failures_are_reported_not_raised(name, status, detail):
    result = run_job(_job(name, mode="performance", models=FAULTY_BY_NAME), FAULTY_BY_NAME)
    assert result.status == status and detail in result.detail and result.speedup == 0.0


def test_worker_times_out_a_hung_model_and_survives_a_dead_one():
    # Only the hung model has a short timeout: the others get a fresh worker, which must
    # start, import torch and compile, however loaded the machine is (generous bounds).
    with Worker([FAULTY]) as worker:
        hung = worker.run(_job("faulty_sleeper", models=FAULTY_BY_NAME), timeout=10)
        died = worker.run(_job("faulty_exit", models=FAULTY_BY_NAME), timeout=1800)
        fine = worker.run(_job("fine_linear", models=FAULTY_BY_NAME), timeout=1800)
    assert hung.status == "timeout" and "killed" in hung.detail
    assert died.status == "fail_to_run" and "exit code 3" in died.detail
    assert fine.status == "pass"  # a fresh worker took over


# --- performance and memory ----------------------------------------------------------------------

def test_performance_measures_speedup_latency_compile_time_and_memory():
    result = run_job(_job("mlp", mode="performance"), ZOO_BY_NAME)
    assert result.status == "pass", result.detail
    assert result.speedup > 0 and result.abs_latency_ms > 0
    assert result.compilation_latency >= 0
    assert result.eager_peak_mem > 0 and result.dynamo_peak_mem > 0
    assert result.compression_ratio == pytest.approx(
        result.eager_peak_mem / result.dynamo_peak_mem)


def test_inductors_cpu_probe_is_kept_between_processes_and_compiles_stay_cold(tmp_path):
    """The CPU instruction-set probe of the inductor warm-up is built once into inductor's
    own cache, and the next process (the next commit) loads it instead of building it again;
    the warm-up's compile itself still runs in an empty cache."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    python = [sys.executable, "-c", "from torchpulse.compile import performance; performance."]

    def built():
        return {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.so")}

    python[-1] += "warm_up_compiler('inductor', 'cpu')"
    subprocess.run(python, env=env, check=True, capture_output=True, timeout=600)
    first = built()
    assert first  # the probes' libraries, one an instruction set the CPU has
    # and nothing else: the warm-up's own compile ran in an empty cache, removed after it
    assert {p.suffix for p in (tmp_path / "cache").rglob("*") if p.is_file()} == {
        ".cpp", ".so", ".lock"}
    python[-1] = python[-1].replace("warm_up_compiler('inductor', 'cpu')", "_probe_cpu_isa()")
    subprocess.run(python, env=env, check=True, capture_output=True, timeout=600)
    assert built() == first  # the next process loads them, it does not build them again


def test_performance_speedup_is_median_eager_over_median_compiled():
    perf = performance.Performance((3.0, 1.0, 2.0), (1.0, 4.0, 0.5), 1.0, 2.0, 1.0)
    assert perf.speedup == pytest.approx(2.0 / 1.0)
    assert perf.abs_latency_ms == pytest.approx(1000.0)
    assert perf.latency_ratio == pytest.approx(0.5)
    assert perf.compression_ratio == pytest.approx(2.0)
    assert performance.Performance((1.0,), (1.0,), 0.0, None, 1.0).compression_ratio == 0.0


def test_transient_peak_counts_the_allocator_exactly():
    def step():
        a = torch.ones(2**20)  # 4 MiB, freed before b
        del a
        b = torch.ones(2**19)  # 2 MiB
        c = b * 2  # + 2 MiB while b is alive
        return float(c[0])

    peak = transient_peak(step, "cpu")
    assert peak == pytest.approx(4 * 2**20, abs=64)  # (plus the scalar 2 as a tensor)
    assert transient_peak(step, "cpu") == peak  # repeatable


def test_transient_peak_sees_fusion_save_memory():
    model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU())
    x = torch.randn(32, 1024 // 16)
    with torch.no_grad():
        eager = transient_peak(lambda: model(x), "cpu")
        compiled = torch.compile(model, backend="inductor")
        compiled(x)
        fused = transient_peak(lambda: compiled(x), "cpu")
    assert eager == 2 * 32 * 1024 * 4  # linear output + relu output
    assert fused == 32 * 1024 * 4  # relu fused into the linear's epilogue


def test_state_bytes_counts_parameters_buffers_and_inputs_once():
    model = torch.nn.BatchNorm1d(10)  # 2x10 parameters, 2x10 buffers + a counter
    x = torch.ones(4, 10)
    assert state_bytes(model, (x, x)) == 40 * 4 + 8 + 40 * 4


# --- CSV and summary -----------------------------------------------------------------------------

def _ran(name, speedup, compile_s, ratio, status="pass"):
    return ModelResult(name, status, 4, speedup=speedup, abs_latency_ms=2.0,
                       compilation_latency=compile_s, compression_ratio=ratio,
                       eager_peak_mem=0.2, dynamo_peak_mem=0.1,
                       dynamo_stats={"calls_captured": 5, "unique_graphs": 1,
                                     "graph_breaks": 0, "unique_graph_breaks": 0})


def test_performance_csv_has_upstream_columns_and_failure_rows():
    results = [_ran("a", 1.5, 2.0, 2.0), ModelResult("b", "fail_to_run", 4, "boom")]
    rows = list(csv.reader(io.StringIO(report.to_csv("performance", "cpu", results))))
    assert rows[0][:9] == ["dev", "name", "batch_size", "speedup", "abs_latency",
                           "compilation_latency", "compression_ratio", "eager_peak_mem",
                           "dynamo_peak_mem"]
    assert rows[1][:5] == ["cpu", "a", "4", "1.500000", "2.000000"]
    assert rows[2] == ["cpu", "b", "0", "0.000000", "0.000000"] + ["0"] * (len(rows[0]) - 5)
    records = dynamo_importer.parse(Path("x.csv"), report.to_csv("performance", "cpu", results),
                                    None, [])
    ratio = [r for r in records if r.method == "track_latency_ratio"]
    assert [(r.params, r.value) for r in ratio] == [(("cpu", "a"), pytest.approx(1 / 1.5))]


def test_accuracy_csv_has_upstream_columns_and_imports():
    results = [ModelResult("a", "pass", 2), ModelResult("b", "fail_accuracy", 2)]
    text = report.to_csv("accuracy", "cpu", results)
    assert text.splitlines()[0].startswith("dev,name,batch_size,accuracy")
    records = dynamo_importer.parse(Path("x.csv"), text, None)
    assert {r.params[1]: r.value for r in records} == {"a": 0.0, "b": 1.0}


def test_summary_arithmetic():
    results = [_ran("a", 2.0, 1.0, 2.0), _ran("b", 0.5, 3.0, 0.0), _ran("c", 8.0, 5.0, 1.0),
               ModelResult("d", "timeout", 4)]
    s = report.summarize("performance", results)
    assert (s.attempted, s.passed, s.pass_rate) == (4, 3, 0.75)
    assert s.geomean_speedup == pytest.approx((2.0 * 0.5 * 8.0) ** (1 / 3))
    assert s.mean_compilation_latency == pytest.approx(3.0)
    assert s.mean_compression_ratio == pytest.approx(1.5)  # unmeasured (0) left out
    assert s.statuses == {"pass": 3, "timeout": 1}
    lines = report.format_summary(s)
    assert "3/4 (75%)" in lines[0] and any("2.000x" in line for line in lines)


def test_summary_of_accuracy_counts_pass_due_to_skip_as_passing():
    s = report.summarize("accuracy", [ModelResult("a", "pass"),
                                      ModelResult("b", "pass_due_to_skip"),
                                      ModelResult("c", "fail_accuracy")])
    assert (s.passed, s.attempted) == (2, 3) and s.geomean_speedup is None
    assert math.isnan(report.summarize("accuracy", []).pass_rate)


# --- config and selection ------------------------------------------------------------------------

def test_builtin_config_loads_and_names_only_zoo_models():
    DEFAULTS.check_names(ZOO_BY_NAME)
    assert DEFAULTS.tolerance_for("mlp", False) == (1e-4, False)
    assert DEFAULTS.tolerance_for("mlp", True) == (1e-3, False)


def test_config_settings():
    cfg = config.parse("""
skip: {all: [a], cuda: [b]}
batch_size: {training: {c: 7}}
tolerance: {default: 1.0e-5, higher_value: 0.01, higher: [c], cosine: [d]}
slow: [e]
very_slow: [f]
non_deterministic: [g]
""")
    assert cfg.skip_reason("a", "cpu") == "skip: all"
    assert cfg.skip_reason("b", "cpu") is None and cfg.skip_reason("b", "cuda") == "skip: cuda"
    assert cfg.skip_reason("e", "cpu") is None and cfg.skip_reason("e", "cpu", skip_slow=True)
    assert cfg.skip_reason("f", "cpu") and cfg.skip_reason("f", "cuda") is None
    assert cfg.batch_size_for("c", True) == 7 and cfg.batch_size_for("c", False) is None
    assert cfg.tolerance_for("c", False) == (0.01, False)
    assert cfg.tolerance_for("d", False) == (1e-5, True)
    assert cfg.names() == set("abcdefg")
    with pytest.raises(config.ConfigError, match=r"unknown model\(s\) a, b"):
        cfg.check_names(set("cdefg"))


@pytest.mark.parametrize("text, message", [
    ("skip: [a]", "skip: expected a mapping"),
    ("skip: {gpu: [a]}", "unknown key"),
    ("batch_size: {inference: {a: 0}}", "positive integer"),
    ("tolerance: {default: high}", "number in"),
    ("slow: a", "list of model names"),
    ("colour: blue", "unknown key"),
    ("skip: {all: [a]\n", "not YAML"),
])
def test_config_errors_are_one_line(text, message):
    with pytest.raises(config.ConfigError, match=message) as info:
        config.parse(text, "my.yaml")
    assert "\n" not in str(info.value) and str(info.value).startswith("my.yaml")


def test_select_filters_excludes_and_skips():
    cfg = config.parse("skip: {all: [mlp]}\nslow: [lstm]")
    names = list(ZOO_BY_NAME)
    chosen, skipped = select(names, cfg, "cpu", filters=["^(mlp|lstm|attention)$"])
    assert chosen == ["lstm", "attention"] and skipped == [("mlp", "skip: all")]
    chosen, _ = select(names, cfg, "cpu", filters=["l"], excludes=["^lstm$"], skip_slow=True)
    assert "lstm" not in chosen and "control_flow" in chosen
    chosen, skipped = select(names, cfg, "cpu", filters=["^mlp$"], no_skip=True)
    assert chosen == ["mlp"] and skipped == []
    with pytest.raises(SelectionError, match="no model"):
        select(names, cfg, "cpu", filters=["^mlp$"])
    with pytest.raises(SelectionError, match="bad --filter"):
        select(names, cfg, "cpu", filters=["("])


# --- providers -----------------------------------------------------------------------------------

def test_models_from_file_and_errors(tmp_path):
    assert "faulty_load" in {m.name for m in providers.models_from(FAULTY)}
    bad = tmp_path / "bad.py"
    bad.write_text("MODELS = [1]\n")
    with pytest.raises(providers.ProviderError, match="list of"):
        providers.models_from(str(bad))
    with pytest.raises(providers.ProviderError, match="no such"):
        providers.models_from(str(tmp_path / "missing.py"))
    with pytest.raises(providers.ProviderError, match="cannot load"):
        providers.models_from("no_such_module_anywhere")


def test_torchbench_provider_adapts_an_installed_package(monkeypatch, tmp_path):
    calls = []

    class FakeModel:
        def __init__(self, test, device, batch_size):
            calls.append((test, device, batch_size))

        def get_module(self):
            return torch.nn.Linear(3, 1), [torch.ones(2, 3)]

    fake = type(sys)("torchbenchmark")
    fake._list_model_paths = lambda: [str(tmp_path / "tiny_net")]
    fake.load_model_by_name = lambda name: FakeModel if name == "tiny_net" else None
    monkeypatch.setitem(sys.modules, "torchbenchmark", fake)
    (spec,) = providers.torchbench_models()
    assert spec.name == "torchbench.tiny_net" and spec.source == "torchbench"
    module, inputs = spec.make("smoke", 2, torch.Generator())
    assert calls == [("eval", "cpu", 2)] and module(*inputs).shape == (2, 1)


def test_optional_providers_are_absent_when_they_do_not_import(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchbenchmark", None)  # import raises ImportError
    monkeypatch.setitem(sys.modules, "torchvision.models", None)
    monkeypatch.setitem(sys.modules, "torchvision", None)
    assert providers.torchbench_models() == [] and providers.torchvision_models() == []
    assert list(providers.available_models()) == [m.name for m in ZOO]


# --- the CLI -------------------------------------------------------------------------------------

def test_cli_performance_writes_upstream_csv_and_summary(tmp_path, capsys):
    out = tmp_path / "perf.csv"
    code = main(["dynamo", "--performance", "--inference", "--backend", "aot_eager",
                 "--device", "cpu", "--size", "smoke", "-k", "^(mlp|attention)$",
                 "--repeat", "3", "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    rows = list(csv.DictReader(out.open()))
    assert [r["name"] for r in rows] == ["mlp", "attention"]
    assert all(float(r["speedup"]) > 0 and float(r["abs_latency"]) > 0 for r in rows)
    assert "pass rate:              2/2 (100%)" in printed and "geomean speedup" in printed
    project = make_project(tmp_path / "proj")
    assert main(["import", "dynamo-csv", str(out), "--config", str(project.conf), "--commit",
                 project.main[-1], "--machine", "cpu1"]) == 0
    stored = json.loads((project.results / "cpu1" / f"{project.main[-1][:8]}-external.json")
                        .read_text())
    assert "external.bench_dynamo.Dynamo.track_latency_ratio" in stored["results"]


def test_cli_accuracy_reports_statuses_and_exits_1_on_failure(tmp_path, capsys):
    out = tmp_path / "acc.csv"
    code = main(["dynamo", "--accuracy", "--inference", "--backend", "aot_eager", "--device",
                 "cpu", "--size", "smoke", "--models-from", FAULTY, "-k", "^faulty_(load|"
                 "accuracy)$|^fine", "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    rows = {r["name"]: r["accuracy"] for r in csv.DictReader(out.open())}
    assert rows == {"faulty_load": "model_fail_to_load", "faulty_accuracy": "fail_accuracy",
                    "fine_linear": "pass"}
    assert "pass rate:              1/3 (33%)" in printed
    assert "FileNotFoundError: weights.bin" in printed


def test_cli_list_shows_models_sources_and_config_notes(tmp_path, capsys):
    cfg = tmp_path / "zoo.yaml"
    cfg.write_text("skip: {cuda: [faulty_exit]}\nnon_deterministic: [faulty_flaky]\n")
    assert main(["dynamo", "--list", "--models-from", FAULTY, "--zoo-config", str(cfg)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert set(lines) == set(ZOO_BY_NAME) | set(FAULTY_BY_NAME)
    assert "zoo" in lines["cnn_bn"] and "batch norm" in lines["cnn_bn"]
    assert "faulty_models.py" in lines["fine_linear"]
    assert "[skip: cuda]" in lines["faulty_exit"] and "non_deterministic" in lines["faulty_flaky"]


@pytest.mark.parametrize("args, message", [
    (["-k", "^nothing$"], "no model to run"),
    (["--zoo-config", "{tmp}/missing.yaml"], "cannot read"),
    (["--zoo-config", "/dev/null"], "a device or a socket, not a file"),  # /dev/zero: no end
    (["--models-from", "{tmp}/missing.py"], "no such models file"),
    (["--output", "{tmp}/missing/dir/x.csv"], "not a file in an existing directory"),
    (["--device", "tpu"], "unsupported device"),
    (["--no-mode"], "say --performance or --accuracy"),
])
def test_cli_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, message):
    # paths that are missing inside this test's own folder: a global one may exist
    args = [a.format(tmp=tmp_path) for a in args]
    out = tmp_path / "keep.csv"
    out.write_text("previous\n")
    argv = ["dynamo", "--accuracy", "--inference", "--size", "smoke", "--device", "cpu",
            "--output", str(out), *args]
    if args == ["--no-mode"]:
        argv = [a for a in argv if a not in ("--accuracy", "--no-mode")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert out.read_text() == "previous\n"


# --- the asv suite's measurements -------------------------------------------------------------

def test_tracking_measures_every_model_and_backend_once():
    from torchpulse.compile.tracking import measure_zoo

    zoo = measure_zoo(["mlp", "control_flow", "not_in_this_zoo"], ["aot_eager"], "smoke",
                      "cpu", repeat=3)
    assert set(zoo["models"]) == {("mlp", "aot_eager"), ("control_flow", "aot_eager")}
    # the accuracy check ran the compiled code that was timed: one compile per model
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    for tracked in zoo["models"].values():
        assert tracked.status == "pass"
        assert tracked.step_seconds > 0 and tracked.latency_ratio > 0
        assert tracked.compile_seconds >= 0
        # dynamo's exact counters, as the harness's CSV has them
        assert tracked.unique_graphs >= 1 and tracked.calls_captured > 0
    mlp, control = zoo["models"][("mlp", "aot_eager")], zoo["models"][("control_flow",
                                                                       "aot_eager")]
    assert (mlp.graph_breaks, mlp.unique_graphs, mlp.eager_frames) == (0, 1, 0)
    # control flow on tensor values: a graph break at the branch, and the loop after it
    # (a break inside a loop) runs eagerly
    assert control.graph_breaks >= 1 and control.eager_frames >= 1
    assert control.calls_captured < mlp.calls_captured
    assert zoo["failure_rate"] == {"aot_eager": 0.0}

