"""`torchpulse merge`: results trees from several machines or shards into one."""

import json
import shutil
from pathlib import Path

import pytest
from asvproject import make_project
from paths import IMPORT_DATA

from torchpulse.cli import main

DATA = IMPORT_DATA


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "proj")


def _import(project, results, machine, fmt, path, commit=None):
    unit = ["--unit", "ms"] if fmt in ("oss", "pep") else []
    assert main(["import", fmt, str(path), "--config", str(project.conf), "--commit",
                 commit or project.main[-1], "--machine", machine, *unit,
                 "--results-dir", str(results)]) == 0


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_machines_and_shards_are_combined(project, tmp_path, capsys):
    a, b, into = tmp_path / "a", tmp_path / "b", tmp_path / "into"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")
    _import(project, b, "gpu2", "oss", DATA / "oss.json")
    # a shard of the same machine and commit, with other benchmarks
    _import(project, b, "gpu1", "autograd-md", DATA / "autograd.md")
    assert main(["merge", str(a), str(b), "--into", str(into)]) == 0
    assert "machines gpu1, gpu2" in capsys.readouterr().out
    sha8 = project.main[-1][:8]
    merged = json.loads((into / "gpu1" / f"{sha8}-external.json").read_text())
    assert {"external.bench_fastrnns.Fastrnns.time_forward",
            "external.bench_autograd.FunctionalAutograd.time_task"} <= set(merged["results"])
    assert (into / "gpu2" / f"{sha8}-external.json").is_file()
    assert "external.bench_fastrnns.Fastrnns.time_forward" in json.loads(
        (into / "benchmarks.json").read_text())
    # merging again changes nothing
    before = _snapshot(into)
    assert main(["merge", str(a), str(b), "--into", str(into)]) == 0
    assert _snapshot(into) == before


def test_conflicting_results_exit_2_and_write_nothing(project, tmp_path, capsys):
    a, b, into = tmp_path / "a", tmp_path / "b", tmp_path / "into"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")
    other = tmp_path / "other.json"
    other.write_text('{"lstm": {"cudnn": 99.0}}')
    _import(project, b, "gpu1", "oss", other)
    assert main(["merge", str(a), str(b), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert "conflict" in err and "nothing written" in err and err.count("\n") == 1
    assert not into.exists()


@pytest.mark.parametrize("field, value, says", [
    ("version", "2", "version '1' vs '2'"),
    ("unit", "bytes", "unit 'seconds' vs 'bytes'"),  # was: the first tree's unit, silently
])
def test_conflicting_benchmark_declarations_are_reported(project, tmp_path, capsys, field,
                                                         value, says):
    a, b, into = tmp_path / "a", tmp_path / "b", tmp_path / "into"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")
    _import(project, b, "gpu2", "oss", DATA / "oss.json")
    bj = b / "benchmarks.json"
    data = json.loads(bj.read_text())
    data["external.bench_fastrnns.Fastrnns.time_forward"][field] = value
    bj.write_text(json.dumps(data))
    into.mkdir()
    (into / "keep.txt").write_text("x")
    before = _snapshot(into)
    assert main(["merge", str(a), str(b), "--into", str(into)]) == 2
    assert says in capsys.readouterr().err
    assert _snapshot(into) == before


def test_a_source_that_is_not_a_results_tree_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["merge", str(tmp_path / "empty"), "--into", str(tmp_path / "x")]) == 2
    assert "not an asv results tree" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "nope"), "--into", str(tmp_path / "x")]) == 2


def _tamper(tree: Path, edit) -> None:
    """Apply ``edit(kind, data)`` to every JSON file of a tree, kind: benchmarks, machine or
    results."""
    for path in sorted(tree.rglob("*.json")):
        kind = ("benchmarks" if path.name == "benchmarks.json" else
                "machine" if path.name == "machine.json" else "results")
        data = json.loads(path.read_text())
        edit(kind, data)
        path.write_text(json.dumps(data))


SCRIPT = "<img src=x onerror=alert(1)>"


def _rename_benchmark(kind, data):
    if kind == "benchmarks":
        entry = data.pop("external.bench_fastrnns.Fastrnns.time_forward")
        entry["name"] = f"external.{SCRIPT}"
        data[f"external.{SCRIPT}"] = entry
    elif kind == "results":
        data["results"][f"external.{SCRIPT}"] = data["results"].pop(
            "external.bench_fastrnns.Fastrnns.time_forward")


def _param_names(kind, data):
    if kind == "benchmarks":
        data["external.bench_fastrnns.Fastrnns.time_forward"]["param_names"] = [SCRIPT]


def _param_values(kind, data):
    if kind == "results":
        columns = data["result_columns"]
        row = data["results"]["external.bench_fastrnns.Fastrnns.time_forward"]
        row[columns.index("params")] = [[f"'{SCRIPT}'"] * len(row[columns.index("params")][0])]


def _unit(kind, data):
    if kind == "benchmarks":
        data["external.bench_fastrnns.Fastrnns.time_forward"]["unit"] = SCRIPT


def _machine(kind, data):
    if kind == "machine":
        data["cpu"] = SCRIPT


def _env(kind, data):
    if kind == "results":
        data["env_name"] = SCRIPT


def _entry_name(kind, data):
    if kind == "benchmarks":  # the key stays, the name asv's pages use does not
        data["external.bench_fastrnns.Fastrnns.time_forward"]["name"] = SCRIPT


@pytest.mark.parametrize("edit, says", [
    (_rename_benchmark, "is not a dotted Python name"),
    (_entry_name, "is not a dotted Python name"),
    (_param_names, "markup on a page"),
    (_param_values, "markup on a page"),
    (_unit, "unit"),
    (_machine, "machine field 'cpu'"),
    (_env, "env_name"),
])
def test_trees_whose_names_would_be_markup_are_refused(project, tmp_path, capsys, edit, says):
    a, into = tmp_path / "a", tmp_path / "into"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")
    _import(project, into, "gpu2", "oss", DATA / "oss.json")
    before = _snapshot(into)
    _tamper(a, edit)
    capsys.readouterr()
    assert main(["merge", str(a), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert _snapshot(into) == before


def test_merge_into_a_file_is_one_line(project, tmp_path, capsys):
    a, into = tmp_path / "a", tmp_path / "file"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")
    into.write_text("mine\n")
    assert main(["merge", str(a), "--into", str(into)]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert into.read_text() == "mine\n"


def test_a_tree_with_an_infinite_value_is_refused(project, tmp_path, capsys):
    a, into = tmp_path / "a", tmp_path / "into"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")

    def infinite(kind, data):
        if kind == "results":
            columns = data["result_columns"]
            row = data["results"]["external.bench_fastrnns.Fastrnns.time_forward"]
            row[columns.index("result")][0] = float("inf")

    _tamper(a, infinite)
    assert main(["merge", str(a), "--into", str(into)]) == 2
    assert "infinite value" in capsys.readouterr().err
    assert not into.exists() or not any(into.iterdir())


@pytest.mark.parametrize("where", ["import", "alert", "merge source", "merge into",
                                   "fifo in a source", "/dev/zero in a source"])
def test_no_link_out_of_a_tree_is_followed_and_no_fifo_waited_on(project, tmp_path, capsys,
                                                                  where):
    """A machine folder linked out of the results tree was written through by import and
    merge --into and read from alert and a merge source; a FIFO in a source hung merge for
    ever, a results file linked to /dev/zero grew merge's memory until it was killed."""
    import os

    a, into, elsewhere = tmp_path / "a", tmp_path / "into", tmp_path / "elsewhere"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")
    _import(project, into, "gpu1", "oss", DATA / "oss.json")
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    tree = {"import": into, "alert": into, "merge source": a, "merge into": into}.get(where, a)
    before = _snapshot(tree)
    if where == "fifo in a source":
        os.mkfifo(a / "gpu1" / "0123abcd-external.json")
    elif where == "/dev/zero in a source":
        (a / "gpu1" / "0123abcd-external.json").symlink_to("/dev/zero")
    else:
        (tree / "evil").symlink_to(elsewhere)
    if where == "import":
        code = main(["import", "oss", str(DATA / "oss.json"), "--config", str(project.conf),
                     "--commit", project.main[-1], "--machine", "evil", "--unit", "ms",
                     "--results-dir", str(into)])
    elif where == "alert":
        code = main(["alert", "--config", str(project.conf), "--results-dir", str(into)])
    else:
        code = main(["merge", str(a), "--into", str(into)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "a link out of the results tree" in err or "not a regular file" in err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]
    if not where.endswith("in a source"):
        assert _snapshot(tree) == before


def test_no_escape_sequence_from_a_tree_reaches_the_terminal(project, tmp_path, capsys):
    """A machine folder named with ESC[2J was printed raw in alert's, export's and merge's
    error lines; a merged commit_hash holding one went raw into asv publish's output."""
    a, into = tmp_path / "a", tmp_path / "into"
    _import(project, a, "gpu1", "oss", DATA / "oss.json")
    (a / "evil\x1b[2J").mkdir()
    (a / "evil\x1b[2J" / "machine.json").write_bytes((a / "gpu1" / "machine.json").read_bytes())
    conf = str(project.conf)
    for argv in (["alert", "--config", conf, "--results-dir", str(a), "--machine", "x"],
                 ["export", "pytorch-v3", "--config", conf, "--results-dir", str(a),
                  "--machine", "x", "--output", str(tmp_path / "out.json")],
                 ["merge", str(a), "--into", str(into)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "\x1b" not in err, (argv, err)
    shutil.rmtree(a / "evil\x1b[2J")
    stored = next((a / "gpu1").glob("*-external.json"))
    data = json.loads(stored.read_text())
    data["commit_hash"] = "\x1b[2J" + data["commit_hash"][4:]
    stored.write_text(json.dumps(data))
    assert main(["merge", str(a), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert "commit_hash is not a commit's 40 hex digits" in err and "\x1b" not in err
    assert not into.exists()


def test_writers_hold_the_bounds_readers_hold(project, tmp_path, capsys, monkeypatch):
    """import and merge wrote results files over the 256 MiB every reader refuses (a 112 MB
    pytest-benchmark file became a 280 MB results file, and then alert, export and publish
    refused the tree); a 202 MB CSV took 8.4 GB to import. The bounds, made small here:
    an import's input, a results file import writes, one merge writes."""
    from torchpulse.results import asv_results, ingest
    from torchpulse.results import merge as merging

    a, into = tmp_path / "a", tmp_path / "into"
    conf = str(project.conf)
    argv = ["import", "oss", str(DATA / "oss.json"), "--config", conf, "--commit",
            project.main[-1], "--machine", "gpu1", "--unit", "ms", "--results-dir", str(a)]
    size = (DATA / "oss.json").stat().st_size
    monkeypatch.setattr(ingest, "INPUT_FILE_BYTES", size - 1)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not imported" in err and "split it" in err and err.count("\n") == 1
    assert not a.exists() or _snapshot(a) == {}
    monkeypatch.setattr(ingest, "INPUT_FILE_BYTES", size)
    monkeypatch.setattr(asv_results, "RESULTS_FILE_BYTES", 300)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "over the 0 MiB every reader takes; not written" in err and err.count("\n") == 1
    assert not list(a.glob("gpu1/*-external.json"))
    monkeypatch.undo()
    assert main(argv) == 0
    monkeypatch.setattr(merging, "RESULTS_FILE_BYTES", 300)
    assert main(["merge", str(a), "--into", str(into)]) == 2
    assert "over the 0 MiB every reader takes" in capsys.readouterr().err
    assert not into.exists()
