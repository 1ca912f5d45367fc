"""One wrong argument must not damage a project: every file a command writes is checked
before the command works (torchpulse.results.protected), and compare/bisect leave no scratch
behind. Each refusal is one line and exit 2, with results/ and .git/ byte for byte as they
were."""

import os
import stat
import tempfile

import pytest
from asvproject import tree_bytes
from clirun import exit_code

from torchpulse.evaluation import synthetic
from torchpulse.results.project import Project
from torchpulse.results.protected import ProtectedPathError, check_file, check_folder


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("guarded") / "p"
    synthetic.build(root, commits=6, per_cell=1, noise_series=1, seed=1, kinds=("noise",))
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "bench_x.py").write_text("def time_x():\n    pass\n")
    (root / "env" / "venv").mkdir(parents=True)  # asv's env_dir default
    outside = tmp_path_factory.mktemp("outside")
    (outside / "theirs.txt").write_text("not yours\n")
    return root, outside


def snapshot(root):
    return tree_bytes(root / "results"), tree_bytes(root / ".git"), tree_bytes(root / "env")


def one_line_exit_2(argv, capsys, *words):
    capsys.readouterr()
    assert exit_code(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert all(w in err[0] for w in words), err[0]
    return err[0]


def machine(root):
    (name,) = [p.name for p in (root / "results").iterdir() if p.is_dir()]
    return name


KEPT = ["results/benchmarks.json", "results/{machine}/machine.json", "results/new.json",
        ".git/HEAD", ".git/config", ".git/hooks/x", "asv.conf.json", "benchmarks/bench_x.py",
        "env/venv/x"]


@pytest.mark.parametrize("target", KEPT)
@pytest.mark.parametrize("option", [["alert", "--output"], ["disturbed", "--hashfile"],
                                    ["disturbed", "--confirm"]])
def test_writers_refuse_what_the_project_keeps(project, capsys, monkeypatch, option, target):
    root, _ = project
    monkeypatch.chdir(root)
    before = snapshot(root)
    path = target.format(machine=machine(root))
    one_line_exit_2([*option, path], capsys, option[1], path)
    assert snapshot(root) == before
    assert (root / "asv.conf.json").stat().st_size > 0


@pytest.mark.parametrize("option", [["alert", "--output"], ["disturbed", "--hashfile"],
                                    ["disturbed", "--confirm"],
                                    ["export", "pytorch-v3", "--output"]])
def test_another_results_dir_leaves_the_configured_one_kept(project, capsys, tmp_path,
                                                           option):
    """--results-dir points the command elsewhere; the project's own results tree stays
    out of reach of its outputs (export and disturbed overwrote or emptied stored files)."""
    root, _ = project
    other = tmp_path / "other-results"
    other.mkdir()
    before = snapshot(root)
    for target in (f"results/{machine(root)}/machine.json", "results/benchmarks.json"):
        one_line_exit_2([*option, str(root / target), "--config", str(root / "asv.conf.json"),
                         "--results-dir", str(other)], capsys, option[-1], "results folder")
    assert snapshot(root) == before


@pytest.mark.parametrize("argv", [
    ["autograd", "--gpu", "-1", "--preset", "smoke", "--output", "results/table.md"],
    ["dynamo", "--performance", "--inference", "--output", ".git/perf.csv"],
    ["profile", "--rnns", "aten", "--output", "results/profile"],
    ["evaluate-detection", "--no-asv", "--no-otava", "--output", "benchmarks/tables.txt"],
    ["evaluate-detection", "--no-asv", "--no-otava", "--keep", "env/kept"],
    ["compare", "HEAD~1", "HEAD", "--output", "results/cmp.json"],
])
def test_every_writer_checks_before_it_works(project, capsys, monkeypatch, argv):
    """Commands without --config guard the project of ./asv.conf.json; none of these gets as
    far as measuring (the refusal comes first, so these calls take no time)."""
    root, _ = project
    monkeypatch.chdir(root)
    before = snapshot(root)
    one_line_exit_2(argv, capsys, argv[-1])
    assert snapshot(root) == before
    assert not (root / "results" / "profile").exists()


def test_links_and_special_files_are_refused(project, capsys, monkeypatch, tmp_path):
    root, outside = project
    monkeypatch.chdir(root)
    before = snapshot(root)
    theirs = outside / "theirs.txt"
    (tmp_path / "out.json").symlink_to(theirs)
    (tmp_path / "into-results").symlink_to(root / "results", target_is_directory=True)
    (tmp_path / "to-benchmarks.json").symlink_to(root / "results" / "benchmarks.json")
    os.mkfifo(tmp_path / "fifo")
    cases = {str(tmp_path / "out.json"): "symbolic link",
             str(tmp_path / "to-benchmarks.json"): "symbolic link",
             str(tmp_path / "into-results" / "benchmarks.json"): "results folder",
             str(tmp_path / "fifo"): "not a regular file",
             str(tmp_path): "is a folder",
             "/dev/null": "not a regular file"}
    for path, why in cases.items():
        one_line_exit_2(["alert", "--output", path], capsys, why)
        one_line_exit_2(["disturbed", "--hashfile", path], capsys, why)
    assert theirs.read_text() == "not yours\n"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert snapshot(root) == before


def test_a_plain_file_is_written_whole(project, capsys, monkeypatch, tmp_path):
    root, _ = project
    monkeypatch.chdir(root)
    before = snapshot(root)
    report = tmp_path / "alerts.json"
    report.write_text("old\n")
    os.chmod(report, 0o640)
    assert exit_code(["alert", "--format", "json", "--output", str(report)]) == 0
    assert '"verdicts"' in report.read_text() and stat.S_IMODE(report.stat().st_mode) == 0o640
    assert exit_code(["disturbed", "--hashfile", "hashes.txt"]) == 0
    assert (root / "hashes.txt").is_file()
    (root / "hashes.txt").unlink()
    assert snapshot(root) == before


@pytest.mark.parametrize("argv", [["record", "--package", ""], ["record", "--package", "a b"],
                                  ["record", "--machine", ""], ["alert", "--machine", "../x"],
                                  ["alert", "--output", ""]])
def test_empty_and_malformed_names(project, capsys, monkeypatch, argv):
    root, _ = project
    monkeypatch.chdir(root)
    before = snapshot(root)
    one_line_exit_2(argv, capsys, "error")
    assert snapshot(root) == before


@pytest.mark.parametrize("argv", [["compare", "HEAD~1", "HEAD"], ["record", "--commit", "HEAD"]])
def test_a_bench_that_is_no_regular_expression_is_refused_before_asv_runs(
        project, capsys, monkeypatch, tmp_path, argv):
    """compare once prepared asv and built both commits before asv refused the pattern."""
    root, _ = project
    monkeypatch.chdir(root)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = snapshot(root)
    line = one_line_exit_2([*argv, "--bench", "bench_(x"], capsys, "--bench",
                           "not a regular expression: 'bench_(x'")
    assert "preparing" not in line
    assert snapshot(root) == before and list(scratch.iterdir()) == []


@pytest.mark.parametrize("command", ["compare", "bisect"])
def test_scratch_is_removed_on_error_unless_kept(project, capsys, monkeypatch, tmp_path,
                                                command):
    root, _ = project
    monkeypatch.chdir(root)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    argv = [command, "nosuchrev", "HEAD", *(["--bench", "x"] if command == "bisect" else [])]
    one_line_exit_2(argv, capsys, "nosuchrev")
    assert list(scratch.iterdir()) == []
    capsys.readouterr()
    assert exit_code([*argv, "--keep-scratch"]) == 2
    (kept,) = scratch.iterdir()
    assert kept.name.startswith(f"torchpulse-{command}-")
    assert str(kept) in capsys.readouterr().err


def test_the_rule_itself(project, tmp_path):
    root, _ = project
    proj = Project.load(root / "asv.conf.json")
    assert check_file(str(tmp_path / "new" / "r.json"), "--output", [proj]).name == "r.json"
    assert check_folder(str(tmp_path / "profile"), "--output", [proj]).name == "profile"
    for bad in (root / "results" / "x", root / "sub" / ".." / ".git" / "x", root / "env"):
        with pytest.raises(ProtectedPathError):
            check_file(str(bad), "--output", [proj])
    with pytest.raises(ProtectedPathError, match=".git"):  # any repository's, no project
        check_file(str(tmp_path / "other" / ".git" / "config"), "--output", ())
    (tmp_path / "f").write_text("")
    with pytest.raises(ProtectedPathError, match="not a folder"):
        check_folder(str(tmp_path / "f"), "--output", ())
