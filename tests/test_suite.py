"""The asv glue: benchmarks/ classes over torchpulse.suite."""

import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchpulse import allocation, sizes, suite
from torchpulse.analysis.disturbance import CANARY_METHOD
from torchpulse.fastrnns.choices import CNN_RUNNERS, LSTM_RUNNERS, VL_RUNNERS
from torchpulse.fleet.plan import groups as plan_groups

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
    suite._workload.cache_clear()
    suite._autograd_task.cache_clear()
    yield
    suite._workload.cache_clear()
    suite._autograd_task.cache_clear()


def test_suites_cover_every_runner_with_explicit_versions(bench):
    classes = [bench["bench_rnns"].LSTM, bench["bench_rnns"].VariableLengthLSTM,
               bench["bench_cnns"].ResNet]
    assert classes[0].params == [list(LSTM_RUNNERS)]
    assert classes[1].params == [list(VL_RUNNERS)]
    assert classes[2].params == [list(CNN_RUNNERS)]
    for cls in classes:
        assert "version" in vars(cls), f"{cls.__name__} needs its own explicit version"
        assert {"time_forward", "time_backward", "peakmem_step"} <= set(dir(cls))


def test_bench_gpu_declares_every_workload_and_its_figures(bench):
    """One parameter per workload of the family (the LSTMs, the ResNets and the autograd
    pairs, 78), each with its wall time, kernel time, exact counters and GPU memory, all
    from one setup_cache (one process a commit) shared with the module's canary."""
    from asv_runner.discovery import disc_benchmarks

    from torchpulse.analysis.series import rule_of
    from torchpulse.kinds import DEVICE, EXACT, TIME
    from torchpulse.workloads import registry

    module = importlib.import_module("benchmarks.bench_gpu")
    every = registry.workloads(importlib.import_module("torchpulse.fastrnns.choices"),
                               importlib.import_module("torchpulse.autograd.choices"))
    older = registry.of_families(every, ("rnns", "cnns", "autograd"))
    assert module.Workloads.params == [older] and len(older) == 78
    assert module.TransformerWorkloads.params == [registry.model_workloads("transformers")]
    assert len(every) == 80
    digest = sizes.digest(sizes.FASTRNNS, sizes.AUTOGRAD, sizes.REVISIONS)
    assert module.Workloads.version == f"2-{digest}-{allocation.POLICY}"
    assert module.TransformerWorkloads.version == \
        f"2-{sizes.digest(sizes.TRANSFORMERS)}-{allocation.POLICY}"
    sys.path.insert(0, str(ROOT))
    try:
        found = {b.name: b for b in disc_benchmarks(str(ROOT / "benchmarks"))
                 if b.name.startswith("bench_gpu.")}
    finally:
        sys.path.remove(str(ROOT))
    units = {name.rsplit(".", 1)[1]: b.unit for name, b in found.items()
             if not name.endswith(CANARY_METHOD)}
    assert units == {"track_wall_time": "seconds", "track_kernel_time": "device seconds",
                     "track_kernels": "kernels", "track_syncs": "synchronizations",
                     "track_gpu_memory": "bytes"}
    assert [rule_of(units[m]) for m in ("track_kernels", "track_syncs")] == [EXACT, EXACT]
    assert rule_of(units["track_kernel_time"]) == DEVICE
    assert rule_of(units["track_wall_time"]) == TIME
    assert len({b.setup_cache_key for b in found.values()}) == 1
    assert "bench_gpu." + CANARY_METHOD in found


def test_bench_gpu_skips_cpu_runs_and_hands_asv_samples(monkeypatch):
    """On a CPU run every benchmark skips with the measurement's reason, nothing built; on
    a CUDA run the timed figures reach asv as samples, the counters as numbers, and a
    workload that failed fails its benchmarks with its error."""
    module = importlib.import_module("benchmarks.bench_gpu")
    cls = module.Workloads
    monkeypatch.setattr(suite, "API_VERSION", 6)
    assert cls.setup_cache(None)["unavailable"] == "the GPU suite measures CUDA runs only"
    skipped = {"unavailable": "the GPU suite measures CUDA runs only", "skipped": {},
               "workloads": {}, "failed": {}}
    with pytest.raises(NotImplementedError, match="CUDA runs only"):
        cls().setup(skipped, "rnns/cudnn/forward")
    with pytest.raises(NotImplementedError, match="has no GPU suite"):
        cls().setup(None, "rnns/cudnn/forward")
    row = {"wall": [0.002, 0.003], "kernel_time": [0.001, 0.001], "kernels": 12, "syncs": 1,
           "gpu_memory": 4096}
    measured = {"unavailable": "", "workloads": {"rnns/cudnn/forward": row},
                "failed": {"rnns/py/forward": "RuntimeError: CUDA out of memory"},
                "skipped": {"autograd/detr/vjp": "no sizes for detr at the cuda preset"}}
    bench = cls()
    bench.setup(measured, "rnns/cudnn/forward")
    args = (measured, "rnns/cudnn/forward")
    assert bench.track_wall_time(*args) == {"samples": [0.002, 0.003], "number": 1}
    assert bench.track_kernel_time(*args) == {"samples": [0.001, 0.001], "number": 1}
    assert (bench.track_kernels(*args), bench.track_syncs(*args),
            bench.track_gpu_memory(*args)) == (12, 1, 4096)
    failed = cls()
    failed.setup(measured, "rnns/py/forward")
    with pytest.raises(RuntimeError, match="out of memory"):
        failed.track_kernels(measured, "rnns/py/forward")
    with pytest.raises(NotImplementedError, match="no sizes for detr"):
        cls().setup(measured, "autograd/detr/vjp")
    with pytest.raises(NotImplementedError, match="not in this commit"):
        cls().setup(measured, "autograd/resnet18/vjp")
    dry = cls()
    dry.setup({**measured, "workloads": {"rnns/cudnn/forward": {**row, "gpu_memory": None}}},
              "rnns/cudnn/forward")
    from asv_runner.benchmarks.mark import SkipNotImplemented

    with pytest.raises(SkipNotImplemented, match="CUDA runs only"):
        dry.track_gpu_memory(measured, "rnns/cudnn/forward")


def test_the_per_process_suites_leave_cuda_runs_to_bench_gpu(bench, smoke, monkeypatch):
    """On a CUDA run the per-process classes skip in setup before building (or touching
    CUDA): bench_gpu measures their workloads in one process."""
    autograd = importlib.import_module("benchmarks.bench_autograd")
    built = []
    monkeypatch.setattr(suite, "workload", lambda *a: built.append(a))
    monkeypatch.setattr(suite, "autograd_task", lambda *a: built.append(a))
    monkeypatch.setattr(suite, "device", lambda: "cuda")
    for cls, args in ((bench["bench_rnns"].LSTM, ("cudnn",)),
                      (bench["bench_rnns"].VariableLengthLSTM, ("vl_py",)),
                      (bench["bench_cnns"].ResNet, ("resnet18",)),
                      (autograd.FunctionalAutograd, ("resnet18", "vjp"))):
        with pytest.raises(NotImplementedError, match="bench_gpu measures"):
            cls().setup(*args)
    assert built == []


def test_unknown_or_foreign_runner_is_skipped_not_failed(smoke):
    with pytest.raises(NotImplementedError):
        suite.workload("gru", "rnns", sizes.FASTRNNS)
    with pytest.raises(NotImplementedError):
        suite.workload("resnet18", "rnns", sizes.FASTRNNS)


def test_the_suite_measures_at_the_sizes_it_is_handed_not_its_own(smoke):
    """The sizes come from the suites' working tree: a commit whose own table differs is
    still measured at the run's sizes (a series never changes size in the middle)."""
    table = {**sizes.FASTRNNS, "smoke": {**sizes.FASTRNNS["smoke"], "seq_length": 7}}
    built = suite.workload("aten", "rnns", table)
    assert built.preset.seq_length == 7 != sizes.FASTRNNS["smoke"]["seq_length"]
    assert suite.workload("aten", "rnns", table) is built  # once per process
    assert suite.workload("aten", "rnns", sizes.FASTRNNS).preset.seq_length == 5

    def params(width):
        autograd = {**sizes.AUTOGRAD, "fcn_resnet": {"smoke": {
            "batch": 1, "image": 32, "backbone_width": width}}}
        prepared = suite.autograd_task("fcn_resnet", "vjp", autograd)
        return sum(t.numel() for t in prepared.inputs)

    assert params(4) < params(8)


def test_sizes_the_package_cannot_take_are_skipped_not_failed(smoke):
    newer = {**sizes.FASTRNNS, "smoke": {**sizes.FASTRNNS["smoke"], "fused_heads": 2}}
    with pytest.raises(NotImplementedError, match="fused_heads"):
        suite.workload("aten", "rnns", newer)
    with pytest.raises(NotImplementedError, match="no sizes for smoke"):
        suite.workload("aten", "rnns", {"cpu": sizes.FASTRNNS["cpu"]})
    with pytest.raises(NotImplementedError, match="no sizes for detr/smoke"):
        suite.autograd_task("detr", "vjp", {"resnet18": sizes.AUTOGRAD["resnet18"]})


def test_the_package_and_the_suites_read_one_table():
    """The CLI (presets, autograd models) measures at the sizes the asv suites pass."""
    from torchpulse.autograd.models import BY_NAME
    from torchpulse.presets import PRESETS

    for name, row in sizes.FASTRNNS.items():
        assert PRESETS[name] == PRESETS[name].from_sizes(name, row)
    assert set(PRESETS) == set(sizes.FASTRNNS)
    for model, rows in sizes.AUTOGRAD.items():
        assert BY_NAME[model].sizes == rows
    assert set(BY_NAME) == set(sizes.AUTOGRAD)


def test_a_size_change_gives_the_suites_new_versions(bench):
    """The workload suites' versions end in the digest of the sizes they pass: changing a size
    starts new series instead of a step in the old ones."""
    module = importlib.import_module("benchmarks.bench_autograd")
    digest = sizes.digest(sizes.FASTRNNS)
    for cls in (bench["bench_rnns"].LSTM, bench["bench_rnns"].VariableLengthLSTM,
                bench["bench_cnns"].ResNet):
        assert cls.version == f"2-{digest}-{allocation.POLICY}"
    assert module.FunctionalAutograd.version.startswith("2-")
    changed = {**sizes.AUTOGRAD, "detr": {**sizes.AUTOGRAD["detr"], "cpu": {}}}
    changed_digest = sizes.digest({m: changed[m] for m in module._models(("vjp", "vhp", "jvp"))})
    assert module._version(("vjp", "vhp", "jvp")) != f"2-{changed_digest}-{allocation.POLICY}"
    assert module._version(("vjp", "vhp", "jvp")).endswith("-" + allocation.POLICY)
    assert sizes.digest({"a": 1, "b": 2}) == sizes.digest({"b": 2, "a": 1})
    assert sizes.digest(sizes.FASTRNNS) != sizes.digest(
        {**sizes.FASTRNNS, "cpu": {**sizes.FASTRNNS["cpu"], "seq_length": 24}})


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
    built = suite.workload("py", "rnns", sizes.FASTRNNS)
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


_DISCOVER = """
import json, sys
from asv_runner.discovery import disc_benchmarks
sys.path.insert(0, sys.argv[1])
found = [b for b in disc_benchmarks(sys.argv[1] + "/benchmarks") if b.name.startswith("external.")]
out = {}
for b in found:
    b.set_param_idx(0)
    out[b.name] = [b.type, b.unit, b.version, list(b.param_names), b.do_setup()]
print(json.dumps(out))
"""


def _discover_stubs(root: Path) -> dict:
    """asv's discovery of ``root``/benchmarks/external, in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", _DISCOVER, str(root)], capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_stub_suites_are_declared_once_something_is_imported(tmp_path):
    """asv's discovery of benchmarks/external gives what the importer writes into
    benchmarks.json (names, types, units, versions, parameter names), and only for the
    formats something was imported from: no empty tiles on the site."""
    from torchpulse.results import store
    from torchpulse.results.external import STUBS
    from torchpulse.results.importers import Record

    for name in ("benchmarks", "src"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "asv.conf.json", tmp_path)
    assert _discover_stubs(tmp_path) == {}

    records = [Record("fastrnns", "time_forward", ("cudnn",), 0.01),
               Record("autograd", "time_task", ("resnet18", "vjp"), 0.02),
               Record("pytest", "time_test", ("t.py::test_x",), 0.03),
               Record("dynamo", "time_latency", ("cpu", "mlp"), 0.001),
               Record("pytorch", "track_inverse", ("benchmark=b, model=m, device=cuda",
                                                   "speedup"), 0.8)]
    store.import_records(store.Target(tmp_path / "results", "m", "a" * 40, 0), records[:1])
    assert {n.rsplit(".", 1)[0] for n in _discover_stubs(tmp_path)} == {
        "external.bench_fastrnns.Fastrnns"}
    store.import_records(store.Target(tmp_path / "results", "m", "a" * 40, 0), records[1:])
    found = _discover_stubs(tmp_path)
    expected = {}
    for stub in STUBS.values():
        for metric in stub.metrics:
            entry = store.benchmark_entry(stub, metric, [])
            expected[entry["name"]] = entry
    assert set(found) == set(expected)
    written = json.loads((tmp_path / "results" / "benchmarks.json").read_text())
    for name, (kind, unit, version, param_names, skipped) in found.items():
        entry = expected[name]
        assert (kind, unit, version, param_names) == (
            entry["type"], entry["unit"], entry["version"], entry["param_names"]), name
        assert skipped is True  # asv records a skip if anyone runs a stub
        assert written[name]["params"] == _stub_params(tmp_path, name)


def _stub_params(root: Path, name: str) -> list:
    from torchpulse.results import external

    stub, _ = external.stub_for(name)
    return external.stub_params(stub, root / "results")


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
        "bench_compile.CompiledModel.track_graph_breaks",
        "bench_compile.CompiledModel.track_unique_graphs",
        "bench_compile.CompiledModel.track_calls_captured",
        "bench_compile.CompiledModel.track_eager_frames",
        "bench_compile.CompileZoo.track_failure_rate",
        "bench_compile." + CANARY_METHOD}
    assert len({b.setup_cache_key for b in found}) == 1


def test_the_machine_canary_runs_between_the_suites():
    """In asv's run order (sorted names, the setup_cache groups one after another) a canary
    opens a commit's run, follows the autograd pairs, splits the LSTM classes and ends the
    compile group, and it runs as a plain torch workload whatever its suite passes it."""
    from asv_runner.discovery import disc_benchmarks

    sys.path.insert(0, str(ROOT))
    try:
        found = [b for b in disc_benchmarks(str(ROOT / "benchmarks"))
                 if not b.name.startswith("external.")]
        canary = importlib.import_module("benchmarks._canary").MachineCanary()
    finally:
        sys.path.remove(str(ROOT))
    groups: dict = {}
    for b in sorted(found, key=lambda b: b.name):
        groups.setdefault(b.setup_cache_key, []).append(b.name)
    order = [name for names in groups.values() for name in names]
    suite_of = [name.split(".")[0] + (":canary" if name.endswith(CANARY_METHOD) else "")
                for name in order]
    runs = [s for i, s in enumerate(suite_of) if i == 0 or s != suite_of[i - 1]]
    # every suite module that a fleet shard may measure alone carries a canary, but the
    # instruction counts: no load moves them (docs/instructions.md)
    assert runs == ["_canary:canary", "bench_autograd", "bench_autograd:canary",
                    "bench_cnns:canary", "bench_cnns", "bench_rnns", "bench_rnns:canary",
                    "bench_rnns", "bench_transformers:canary", "bench_transformers",
                    "bench_compile", "bench_compile:canary", "bench_gpu:canary",
                    "bench_gpu", "bench_instructions"]
    assert {name.split(".")[0] for name in order if name.endswith(CANARY_METHOD)} == \
        {"_canary", *plan_groups(ROOT / "benchmarks")} - {"bench_instructions"}
    canary.setup({"a": "setup_cache value"})
    canary.time_reference({"a": "setup_cache value"})
    canary.setup()
    canary.time_reference()


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


def test_asv_skips_the_backward_of_a_forward_only_runner(bench, smoke):
    """asv_runner's own discovery: time_backward('cudnn_layernorm') is skipped before setup
    (no process, no log line), its forward and every other backward are not."""
    from asv_runner.discovery import get_benchmark_from_name

    assert LSTM_RUNNERS.index("cudnn_layernorm") == 2
    backward = get_benchmark_from_name(str(ROOT / "benchmarks"),
                                       "bench_rnns.LSTM.time_backward-2")
    assert backward._current_params == ("cudnn_layernorm",) and backward.do_setup() is True
    forward = get_benchmark_from_name(str(ROOT / "benchmarks"),
                                      "bench_rnns.LSTM.time_forward-2")
    assert forward.do_setup() is False
    other = get_benchmark_from_name(str(ROOT / "benchmarks"), "bench_rnns.LSTM.time_backward-0")
    assert other._current_params == ("cudnn",) and other.do_setup() is False


def test_autograd_suites_declare_exactly_the_pairs_the_models_run(bench):
    """No (model, task) is declared and then skipped on every commit."""
    import itertools

    from torchpulse.autograd.models import supported_pairs

    module = importlib.import_module("benchmarks.bench_autograd")
    classes = [module.FunctionalAutograd, module.FunctionalAutogradVjpOnly,
               module.FunctionalAutogradAllTasks]
    declared = [pair for cls in classes for pair in itertools.product(*cls.params)]
    assert sorted(declared) == sorted((m.name, t) for m, t in supported_pairs())
    assert len(declared) == len(set(declared)) == 39
    assert all("version" in vars(cls) for cls in classes)


def test_a_model_is_measured_only_at_the_definition_revision_the_suites_measure(smoke,
                                                                               monkeypatch):
    """A definition change (sizes.REVISIONS) starts new series: an older package's model is
    skipped, never measured under the new version."""
    module = importlib.import_module("benchmarks.bench_autograd")
    assert sizes.REVISIONS["ppl_robust_reg"] == 2
    with pytest.raises(NotImplementedError, match="revision 2; the suites measure revision 1"):
        suite.autograd_task("ppl_robust_reg", "vjp", sizes.AUTOGRAD)
    assert suite.autograd_task("ppl_robust_reg", "vjp", sizes.AUTOGRAD, 2) is not None
    pairs = module.FunctionalAutogradAllTasks()
    pairs.setup("ppl_robust_reg", "vjp")
    monkeypatch.setattr(suite, "API_VERSION", 2)  # a package from before revisions
    pairs.setup("ppl_simple_reg", "vjp")
    with pytest.raises(NotImplementedError, match="predates revision 2"):
        pairs.setup("ppl_robust_reg", "vjp")
    # the revision is in the version of the class that measures the model, and only there
    plain = module._suite_version({m: sizes.AUTOGRAD[m] for m in module._models(
        module._choices.ALL_TASKS)})
    assert module.FunctionalAutogradAllTasks.version != plain
    assert module.FunctionalAutograd.version == module._suite_version(
        {m: sizes.AUTOGRAD[m] for m in module._models(module._choices.FAST_TASKS)})


def test_count_instructions_hands_asv_counts_and_stores_the_commits_profile(monkeypatch,
                                                                             tmp_path):
    import pickle
    import pickletools

    from torchpulse.instructions import count, profiles, reuse, summary

    sha = "c" * 40
    monkeypatch.setenv("ASV_COMMIT", sha)
    said = tmp_path / "counts.jsonl"  # what the dashboard reads back and says
    monkeypatch.setenv(summary.ENV, str(said))
    monkeypatch.setenv("ASV_ENV_NAME", "env")
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path))
    monkeypatch.delenv(profiles.FOLDER_ENV, raising=False)
    counted = {"rnns/py/forward": count.Counted("rnns/py/forward", 900, [900, 901, 899],
                                                {"f": 600, "g": 200})}
    monkeypatch.delenv(count.REUSE_ENV, raising=False)
    asked = []

    def counts(workloads, tables, log, reuse_in):
        asked.append(reuse_in)
        return counted, {"rnns/nope/forward": "no such runner"}

    monkeypatch.setattr(count, "count", counts)
    got = suite.count_instructions(["rnns/py/forward", "rnns/nope/forward"],
                                   sizes.INSTRUCTIONS)
    assert asked == [reuse.directory()]  # counts of unchanged inputs are reused
    assert got == {"counts": {"rnns/py/forward": 900},
                   "failed": {"rnns/nope/forward": "no such runner"}, "unavailable": ""}
    opcodes = {op.name for op, _, _ in pickletools.genops(pickle.dumps(got))}
    assert not opcodes & {"GLOBAL", "STACK_GLOBAL", "REDUCE"}
    assert profiles.read(tmp_path / ".asv" / "profiles", sha, "env") == {
        "rnns/py/forward": {"f": 600, "g": 200}}

    monkeypatch.setenv(count.REUSE_ENV, "no")
    suite.count_instructions(["rnns/py/forward"], sizes.INSTRUCTIONS)
    assert asked[-1] is None
    monkeypatch.setenv(count.REUSE_ENV, "maybe")
    assert suite.count_instructions(["rnns/py/forward"], sizes.INSTRUCTIONS) == {
        "counts": {}, "failed": {},
        "unavailable": "$TORCHPULSE_COUNT_REUSE must be yes or no, not 'maybe'"}
    monkeypatch.delenv(count.REUSE_ENV)

    def fails(workloads, tables, log, reuse_in):
        raise count.CountingError("valgrind is not installed")

    monkeypatch.setattr(count, "count", fails)
    assert suite.count_instructions(["rnns/py/forward"], sizes.INSTRUCTIONS) == {
        "counts": {}, "failed": {}, "unavailable": "valgrind is not installed"}
    counted["rnns/py/forward"].reused = True
    monkeypatch.setattr(count, "count", counts)
    suite.count_instructions(["rnns/py/forward"], sizes.INSTRUCTIONS)
    # one line a count: counted, counted (reuse off), unavailable twice, reused
    got = [(s.commit, s.counted, s.reused, s.failed, s.unavailable)
           for s in summary.read(said)]
    assert got == [(sha, 1, 0, 1, False), (sha, 1, 0, 1, False), (sha, 0, 0, 0, True),
                   (sha, 0, 0, 0, True), (sha, 0, 1, 1, False)]


def test_a_run_of_one_device_leaves_out_exactly_the_suites_that_would_only_skip_there():
    """On CUDA the per-process suites (their setup refuses CUDA runs) and the instruction
    counts are left out, bench_gpu kept; on the CPU only bench_gpu is left out. A new suite
    module is placed by what its setup does, not by a list kept by hand."""
    from torchpulse.results.external import measured_on

    modules = sorted(plan_groups(ROOT / "benchmarks"))

    def refuses_cuda(module: str) -> bool:  # a class whose setup calls _check_cpu_run()
        classes = [c for c in vars(importlib.import_module(f"benchmarks.{module}")).values()
                   if isinstance(c, type) and callable(getattr(c, "setup", None))]
        return any("_check_cpu_run()" in inspect.getsource(c.setup) for c in classes)

    cpu_only = {m for m in modules if refuses_cuda(m)}
    assert {"bench_rnns", "bench_cnns", "bench_autograd", "bench_transformers"} <= cpu_only
    cpu_only.add("bench_instructions")
    on_cuda = {m for m in modules if re.match(measured_on("cuda"), f"{m}.X.time_y")}
    on_cpu = {m for m in modules if re.match(measured_on("cpu"), f"{m}.X.time_y")}
    assert on_cuda == set(modules) - cpu_only
    assert on_cpu == set(modules) - {"bench_gpu"}
