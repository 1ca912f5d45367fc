"""`torchpulse import` into a results tree: merge, replace, safety, concurrency."""

import json
import os
import shutil
from pathlib import Path

import pytest
from asvproject import make_project
from paths import IMPORT_DATA

from torchpulse.cli import main
from torchpulse.results import store
from torchpulse.results.external import STUBS

DATA = IMPORT_DATA
FWD = "external.bench_fastrnns.Fastrnns.time_forward"


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "proj")


def _import(project, fmt, *files, commit=None, extra=(), unit="ms"):
    """An import as CI would run it; fastrnns files say their unit (``unit=None``: not)."""
    units = ["--unit", unit] if unit and fmt in ("oss", "pep") else []
    return main(["import", fmt, *map(str, files), "--config", str(project.conf),
                 "--commit", commit or project.main[-1], "--machine", "gpu1", *units, *extra])


def _results(project, commit=None):
    sha = commit or project.main[-1]
    data = json.loads((project.results / "gpu1" / f"{sha[:8]}-external.json").read_text())
    columns = data["result_columns"]
    return data, {name: dict(zip(columns, row, strict=False))
                  for name, row in data["results"].items()}


def _value(rows, name, *params):
    row = rows[name]
    grid = row["params"]
    idx = 0
    for values, value in zip(grid, params, strict=True):
        idx = idx * len(values) + values.index(repr(value))
    return row["result"][idx]


def test_oss_import_writes_results_machine_and_benchmarks(project, capsys):
    assert _import(project, "oss", DATA / "oss.json") == 0
    assert "12 new, 0 replaced" in capsys.readouterr().out
    data, rows = _results(project)
    assert data["commit_hash"] == project.main[-1]
    assert _value(rows, FWD, "cudnn") == pytest.approx(5.8125e-3)
    machine = json.loads((project.results / "gpu1" / "machine.json").read_text())
    assert machine["machine"] == "gpu1" and machine["version"] == 1
    assert data["params"]["machine"] == "gpu1" and data["params"]["source"] == "external"
    benchmarks = json.loads((project.results / "benchmarks.json").read_text())
    assert benchmarks[FWD]["version"] == STUBS["fastrnns"].version
    assert benchmarks[FWD]["unit"] == "seconds"


def test_pep_samples_give_median_and_all_four_stats(project):
    assert _import(project, "pep", DATA / "pep.log") == 0
    _, rows = _results(project)
    row = rows[FWD]
    i = row["params"][0].index("'cudnn'")
    assert row["result"][i] == pytest.approx(5.8e-3)
    assert row["samples"][i] == pytest.approx([5.8e-3, 5.9e-3, 5.7e-3])
    for stat in ("stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75"):
        assert row[stat][i] is not None
    assert row["stats_q_25"][i] <= row["result"][i] <= row["stats_q_75"][i]


def test_two_formats_into_one_commit_merge(project):
    assert _import(project, "oss", DATA / "oss.json") == 0
    assert _import(project, "autograd-md", DATA / "autograd.md") == 0
    _, rows = _results(project)
    assert _value(rows, FWD, "cudnn") == pytest.approx(5.8125e-3)
    assert _value(rows, "external.bench_autograd.FunctionalAutograd.time_task",
                  "resnet18", "vjp") == pytest.approx(0.03401)


def test_new_runner_merges_next_to_stored_ones(project, tmp_path):
    assert _import(project, "oss", DATA / "oss.json") == 0
    extra = tmp_path / "more.json"
    extra.write_text('{"lstm": {"jit_premul": 7.5}}')
    assert _import(project, "oss", extra) == 0
    _, rows = _results(project)
    assert _value(rows, FWD, "jit_premul") == pytest.approx(7.5e-3)
    assert _value(rows, FWD, "cudnn") == pytest.approx(5.8125e-3)


def test_existing_value_needs_replace_and_nothing_changes_without(project, tmp_path, capsys):
    assert _import(project, "oss", DATA / "oss.json") == 0
    before = project.tree_bytes()
    changed = tmp_path / "changed.json"
    changed.write_text('{"lstm": {"cudnn": 6.5, "jit_premul": 1.0}}')
    assert _import(project, "oss", changed) == 2
    err = capsys.readouterr().err
    assert "already has" in err and "time_forward('cudnn')" in err and "--replace" in err
    assert project.tree_bytes() == before
    assert _import(project, "oss", changed, extra=["--replace"]) == 0
    _, rows = _results(project)
    assert _value(rows, FWD, "cudnn") == pytest.approx(6.5e-3)
    assert _value(rows, "external.bench_fastrnns.Fastrnns.time_backward", "cudnn") == \
        pytest.approx(13.0491e-3)  # untouched


@pytest.mark.parametrize("fmt, text", [
    ("oss", '{"lstm": {"cudnn": NaN}}'),
    ("oss", ""),
    ("pep", 'Caffe2Observer {"type": "NET", "metric": "lstm-cudnn", "unit": "ms", '
            '"value": "-3"}'),
    ("pytest-benchmark", "{"),
    ("dynamo-csv", "dev,name\n"),
    ("autograd-md", "| model | task | mean | var |\n| <b>x</b> | vjp | 1 | 0 |\n"),
    # values that would be stored as infinity, 0.0 or a denormal, or overflow a float
    ("dynamo-csv", "dev,name,batch_size,speedup,abs_latency,compilation_latency,"
                   "compression_ratio\ncpu,m,1,1e-320,1.0,1.0,1.0\n"),
    ("oss", '{"lstm": {"cudnn": 5e-324}}'),
    ("oss", '{"lstm": {"cudnn": 1' + "0" * 400 + "}}"),
    ("oss", "[" * 100_000 + "]" * 100_000),
    ("oss", '{"lstm": {"cudnn": 1' + "0" * 5000 + "}}"),
    ("pytest-benchmark", "[" * 100_000 + "]" * 100_000),
    ("dynamo-csv", "dev,name,batch_size,speedup,abs_latency,compilation_latency,"
                   "compression_ratio\ncpu,m,1,1.0,1e-14,1.0,1.0\n"),
])
def test_malformed_files_exit_2_and_leave_results_unchanged(project, tmp_path, capsys, fmt,
                                                            text):
    assert _import(project, "oss", DATA / "oss.json") == 0
    before = project.tree_bytes()
    bad = tmp_path / "bad.txt"
    bad.write_text(text)
    capsys.readouterr()
    assert _import(project, fmt, DATA / "autograd.md" if fmt == "autograd-md" else bad,
                   bad) == 2
    err = capsys.readouterr().err
    assert err.startswith("torchpulse import: error: ") and err.count("\n") == 1
    assert str(bad) in err
    assert project.tree_bytes() == before


@pytest.mark.parametrize("given", ["/dev/null", "too-long"])
def test_a_device_or_a_file_past_the_bound_is_refused_in_one_line(project, tmp_path, capsys,
                                                                  monkeypatch, given):
    assert _import(project, "oss", DATA / "oss.json") == 0
    before = project.tree_bytes()
    if given == "too-long":  # the bound, made small: a file past it is not read whole
        import torchpulse.results.ingest as ingest

        monkeypatch.setattr(ingest, "INPUT_FILE_BYTES", 100)
        given = tmp_path / "long.json"
        given.write_text('{"lstm": {"cudnn": 1.5}}' + " " * 100)
    capsys.readouterr()
    assert _import(project, "oss", given) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"torchpulse import: error: {given}: ")
    assert err.count("\n") == 1 and ("cannot read (" in err and "not a file" in err
                                      or "over 100 bytes, not imported" in err)
    assert project.tree_bytes() == before


def test_dev_zero_is_refused_not_read_until_the_memory_runs_out(project):
    """Run with its address space capped (2 GiB): read whole, /dev/zero fails on memory in
    a few seconds instead of taking the machine's."""
    import resource
    import subprocess
    import sys

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "import", "oss", "/dev/zero",
                           "--unit", "ms", "--config", str(project.conf), "--commit",
                           project.main[-1], "--machine", "gpu1"], preexec_fn=cap,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr == ("torchpulse import: error: /dev/zero: cannot read (a device or a "
                           "socket, not a file)\n")
    assert not project.results.exists()


def test_a_pipe_is_read_as_a_file(project, tmp_path):
    """`torchpulse import oss <(ssh gpu-box cat results.json)` hands over a pipe."""
    import threading

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_bytes((DATA / "oss.json").read_bytes()))
    writer.start()
    try:
        assert _import(project, "oss", pipe) == 0
    finally:
        writer.join(timeout=60)
    reference = tmp_path / "ref"
    other = make_project(reference)
    assert _import(other, "oss", DATA / "oss.json") == 0
    got, expected = _results(project)[1], _results(other)[1]
    assert {name: row["result"] for name, row in got.items()} == \
        {name: row["result"] for name, row in expected.items()}


def test_a_bad_second_file_means_the_first_is_not_imported_either(project, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"lstm": {"cudnn": -1}}')
    assert _import(project, "oss", DATA / "oss.json", bad) == 2
    assert not project.results.exists()


@pytest.mark.parametrize("commit, message", [
    ("0123456789abcdef0123456789abcdef01234567", "unknown commit"),
    ("no-such-branch", "unknown commit"),
    ("side", "not on the first-parent history of main"),
])
def test_commits_must_resolve_on_a_configured_branch(project, capsys, commit, message):
    rev = commit
    assert _import(project, "oss", DATA / "oss.json", commit=rev) == 2
    assert message in capsys.readouterr().err
    assert not project.results.exists()


def test_abbreviated_and_symbolic_revisions_resolve_to_the_full_sha(project):
    assert _import(project, "oss", DATA / "oss.json", commit="main~1") == 0
    data, _ = _results(project, project.main[1])
    assert data["commit_hash"] == project.main[1]
    assert _import(project, "oss", DATA / "oss.json", commit=project.main[0][:7]) == 0
    assert _results(project, project.main[0])[0]["commit_hash"] == project.main[0]


@pytest.mark.parametrize("argv, message", [
    (["oss", "missing.json"], "missing.json: no such file"),
    (["pytest-benchmark", str(DATA / "pytest-benchmark.json"), "--unit", "ms"],
     "--unit applies to oss and pep only"),
    (["oss", str(DATA / "oss.json"), "--env-name", "../x"], "--env-name '../x'"),
])
def test_usage_errors(project, capsys, argv, message):
    rc = main(["import", *argv, "--config", str(project.conf), "--commit", "main",
               "--machine", "gpu1"])
    assert rc == 2 and message in capsys.readouterr().err


def test_unknown_format_is_a_usage_error(project, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["import", "csv", "x", "--commit", "main", "--machine", "m"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'csv'" in capsys.readouterr().err


def test_machine_info_fills_machine_json_and_conflicts_are_refused(project, tmp_path, capsys):
    info = tmp_path / "machine.json"
    info.write_text(json.dumps({"arch": "x86_64", "cpu": "EPYC", "num_cpu": 32, "os": "Linux",
                                "ram": "512GB"}))
    assert _import(project, "oss", DATA / "oss.json", extra=["--machine-info", str(info)]) == 0
    machine = json.loads((project.results / "gpu1" / "machine.json").read_text())
    assert machine["cpu"] == "EPYC" and machine["num_cpu"] == "32"
    before = project.tree_bytes()
    info.write_text(json.dumps({"cpu": "Xeon"}))
    assert _import(project, "pep", DATA / "pep.log", commit=project.main[0],
                   extra=["--machine-info", str(info)]) == 2
    assert "describes machine 'gpu1' differently" in capsys.readouterr().err
    assert project.tree_bytes() == before


def test_every_commit_of_a_machine_gets_the_same_graph_params(project):
    for sha in project.main:
        assert _import(project, "oss", DATA / "oss.json", commit=sha) == 0
    params = [_results(project, sha)[0]["params"] for sha in project.main]
    assert params[0] == params[1] == params[2]


_IMPORT_ONE = """
import sys
from pathlib import Path
from torchpulse.results import store
from torchpulse.results.importers import Record
results_dir, commit, runner, value = sys.argv[1:]
target = store.Target(Path(results_dir), "gpu1", commit, 1_700_000_000_000)
store.import_records(target, [Record("fastrnns", "time_forward", (runner,), float(value))])
"""


def test_concurrent_imports_lose_nothing(project):
    import subprocess
    import sys

    # separate interpreters, as concurrent CI jobs are (a fork of a threaded test worker can
    # deadlock in the child)
    runners = [f"r{i}" for i in range(12)]
    procs = [subprocess.Popen([sys.executable, "-c", _IMPORT_ONE, str(project.results),
                               project.main[-1], r, str(0.001 * (i + 1))])
             for i, r in enumerate(runners)]
    assert [p.wait(timeout=120) for p in procs] == [0] * len(procs)
    _, rows = _results(project)
    for i, runner in enumerate(runners):
        assert _value(rows, FWD, runner) == pytest.approx(0.001 * (i + 1))
    leftovers = [p for p in project.results.rglob("*") if p.name.startswith(".")]
    assert leftovers == []


def test_stub_suites_list_imported_values(project, monkeypatch):
    from torchpulse.results.external import stub_params

    assert _import(project, "pytest-benchmark", DATA / "pytest-benchmark.json") == 0
    (values,) = stub_params(STUBS["pytest"], project.results)
    assert values == sorted(values) and len(values) == 2
    assert "'benchmarks/pytest_bench/test_fastrnns.py::test_forward[cudnn]'" in values
    # nothing imported: asv still needs one value per parameter
    empty = project.root / "empty"
    shutil.rmtree(empty, ignore_errors=True)
    assert stub_params(STUBS["pytest"], empty) == [["'none'"]]


def test_ci_script_defaults_commit_and_machine(project, tmp_path):
    import os
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "import-results"
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "GITHUB_SHA": project.main[1], "TORCHPULSE_MACHINE": "gpu1"}
    # the script passes its repository's config; point it at the project with a copy
    local = tmp_path / "repo"
    (local / "scripts").mkdir(parents=True)
    shutil.copy(script, local / "scripts" / "import-results")
    shutil.copy(project.conf, local / "asv.conf.json")
    conf = (local / "asv.conf.json").read_text().replace('"repo": "."',
                                                         f'"repo": "{project.root}"')
    (local / "asv.conf.json").write_text(conf)
    proc = subprocess.run([str(local / "scripts" / "import-results"), "oss",
                           str(DATA / "oss.json")], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    stored = local / "results" / "gpu1" / f"{project.main[1][:8]}-external.json"
    assert json.loads(stored.read_text())["commit_hash"] == project.main[1]
    bad = subprocess.run([str(local / "scripts" / "import-results"), "oss", "nope.json"],
                         env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "nope.json: no such file" in bad.stderr


@pytest.mark.parametrize("info, says", [
    ({"cpu": "<img src=x onerror=alert(1)>"}, "without < > &"),
    ({"os": "Linux\x1b[2J"}, "printable"),
    ({"cpu": "x" * 100_000}, "at most 200"),
    ({"num_cpu": 10**400}, "more than 200 digits"),
])
def test_machine_info_that_would_break_or_script_the_site_is_refused(project, tmp_path,
                                                                      capsys, info, says):
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(info))
    before = project.tree_bytes()
    capsys.readouterr()
    assert _import(project, "oss", DATA / "oss.json", extra=["--machine-info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert project.tree_bytes() == before


def test_an_interrupted_import_is_completed_by_running_it_again(project, capsys):
    """A kill between the results file and benchmarks.json (simulated: benchmarks.json as
    it was before) leaves values without their declaration; the same import again is no
    conflict, and declares them."""
    assert _import(project, "oss", DATA / "oss.json", commit=project.main[0]) == 0
    declared = json.loads((project.results / "benchmarks.json").read_text())
    assert FWD in declared
    (project.results / "benchmarks.json").write_text(json.dumps({"version": 2}))
    capsys.readouterr()
    assert _import(project, "oss", DATA / "oss.json", commit=project.main[0]) == 0
    assert "already stored as they are" in capsys.readouterr().out
    assert json.loads((project.results / "benchmarks.json").read_text()) == declared


def test_a_failed_write_leaves_every_file_as_it_was(project, tmp_path, monkeypatch, capsys):
    """The disk fills up while benchmarks.json is written: the results file and the new
    machine's machine.json written before it are taken back."""
    assert _import(project, "oss", DATA / "oss.json") == 0
    before = project.tree_bytes()

    def full_disk(results_dir):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "update_benchmarks_json", full_disk)
    info = tmp_path / "machine.json"
    info.write_text(json.dumps({"cpu": "EPYC"}))
    capsys.readouterr()
    assert main(["import", "pep", str(DATA / "pep.log"), "--unit", "ms", "--config",
                 str(project.conf),
                 "--commit", project.main[1], "--machine", "fresh", "--machine-info",
                 str(info)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err
    assert "nothing was imported" in err
    assert project.tree_bytes() == before
    assert not (project.results / "fresh").exists() or not any(
        (project.results / "fresh").iterdir())


def test_device_is_for_dynamo_csvs_without_dev(project, tmp_path, capsys):
    ci = tmp_path / "cuda_inductor_inference.csv"
    ci.write_text("name,accuracy,graph_breaks\nBERT_pytorch,pass,0\nresnet18,OOM,2\n")
    assert _import(project, "dynamo-csv", ci, extra=["--device", "cuda"]) == 0
    _, rows = _results(project)
    assert _value(rows, "external.bench_dynamo.Dynamo.track_accuracy_failure", "cuda",
                  "resnet18") == 1.0
    assert _value(rows, "external.bench_dynamo.Dynamo.track_graph_breaks", "cuda",
                  "resnet18") == 2.0
    capsys.readouterr()
    assert _import(project, "oss", DATA / "oss.json", extra=["--device", "cuda"]) == 2
    assert "--device applies to dynamo-csv only" in capsys.readouterr().err


def test_an_oss_file_without_its_unit_is_refused_and_nothing_written(project, tmp_path,
                                                                     capsys):
    before = project.tree_bytes()
    ambiguous = tmp_path / "cpu.json"
    ambiguous.write_text('{"lstm": {"cudnn": 0.0921}, "lstm-backward": {"cudnn": 0.381}}')
    assert _import(project, "oss", ambiguous, unit=None) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--unit s (upstream's CPU path" in err
    assert project.tree_bytes() == before
    assert _import(project, "oss", DATA / "oss.json", unit=None) == 0  # its 201.6 says ms
    assert "values read as ms (assumed" in capsys.readouterr().err
    _, rows = _results(project)
    assert _value(rows, "external.bench_fastrnns.Fastrnns.time_forward", "cudnn") == \
        pytest.approx(5.8125e-3)
