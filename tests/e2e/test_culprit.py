"""compare, bisect and the CI gate for real: asv builds and measures the commits of a
fixture repository whose commit 3 makes stepwork.work() 2.5 times slower."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from asvproject import tree_bytes
from paths import ROOT

from torchpulse.cli import main
from torchpulse.culprit import probes
from torchpulse.culprit.runs import AsvRuns
from torchpulse.results.project import Project
from torchpulse.testing import culprit_repo as fixture

pytestmark = pytest.mark.slow
STEP = 3


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("culprit") / "stepwork"
    shas = fixture.make(root, commits=5, step_at=STEP, factor=2.5)
    return root, shas


def _copy_in_its_environment(root: Path, dest: Path) -> None:
    """A copy of the fixture repository without its results, sharing its asv environment
    (building one is 13 s of pip)."""
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns("results", ".asv"))
    (root / ".asv").mkdir(exist_ok=True)  # run alone, no test has made it yet
    (dest / ".asv").symlink_to(root / ".asv")


def test_bisect_finds_the_step_and_files_its_probes(repo, monkeypatch, capsys, tmp_path):
    root, shas = repo
    monkeypatch.chdir(root)
    code = main(["bisect", shas[0], shas[-1], "--bench", fixture.BENCHMARK])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"first bad commit: {shas[STEP]} revision {STEP} (the step)" in out
    assert "BAD is slower than GOOD" in err
    # the probes (commits 2 and 3 of 4 candidates) are filed under their commits
    stored = {p.name[:8] for p in (root / "results").glob("*/*.json")
              if p.name != "machine.json"}
    assert stored == {shas[2][:8], shas[3][:8]}
    assert f"{shas[3][:12]}: stored in" in err

    # filing a probe again never replaces what is stored: nothing is written
    before = tree_bytes(root / "results")
    runs = AsvRuns(Project.load(root / "asv.conf.json"), ".", tmp_path / "w")
    runs.prepare()
    run = runs(shas[3], [fixture.BENCHMARK])
    said = probes.store(runs.project, [run], fixture.BENCHMARK, runs.results_dir,
                        runs.workdir)
    assert said.startswith("not stored:") and "already holds" in said
    assert tree_bytes(root / "results") == before


def test_compare_of_equal_commits_claims_no_difference(repo, monkeypatch, capsys):
    """Commits 0 and 1 run the same code. On a quiet machine five runs decide them
    equivalent within 50 % (the unit tests pin that decision on scripted values); on a shared
    CI host one run may read 1.5 times another, and the honest answer is then undecided.
    What must never happen is a claim that one is slower or faster."""
    root, shas = repo
    monkeypatch.chdir(root)
    code = main(["compare", shas[0], shas[1], "--threshold", "50%", "--max-runs", "5",
                 "--format", "json", "--output", "cmp.json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if line.startswith(fixture.BENCHMARK)]
    (stored,) = json.loads((root / "cmp.json").read_text())["benchmarks"]
    assert stored["benchmark"] == fixture.BENCHMARK
    assert stored["decision"] in ("equivalent", "undecided"), (out, stored)
    assert row.split()[1] == stored["decision"]  # the terminal and the file say the same
    if stored["decision"] == "undecided":  # only after every run it was allowed
        assert stored["runs"] == 5, stored
    low, high = stored["interval"]
    assert low <= 1.5 and high >= 1 / 1.5, stored  # no step beyond the threshold either way


def test_compare_across_the_step_is_slower(repo, monkeypatch, capsys):
    root, shas = repo
    monkeypatch.chdir(root)
    code = main(["compare", shas[STEP - 1], shas[STEP], "--format", "json",
                 "--output", "step.json"])
    out, err = capsys.readouterr()
    assert code == 1, err  # a slower benchmark fails the command, as the gate needs
    (stored,) = json.loads((root / "step.json").read_text())["benchmarks"]
    assert stored["decision"] == "slower", (out, stored)
    assert stored["interval"][0] > 1.05, stored  # beyond the default 5 %


def test_gate_without_history_decides_by_comparing(repo, tmp_path):
    root, shas = repo
    project = tmp_path / "gate"
    _copy_in_its_environment(root, project)
    env = {**os.environ, "TORCHPULSE": str(Path(sys.executable).with_name("torchpulse")),
           "PYTHON": sys.executable, "ASV": str(Path(sys.executable).with_name("asv")),
           "TORCHPULSE_CONFIG": str(project / "asv.conf.json"),
           "TORCHPULSE_REPORT": str(tmp_path / "report.md"),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    proc = subprocess.run([str(ROOT / "scripts" / "ci-regression-gate"), "HEAD~2"],
                          cwd=project, env=env, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "REGRESSION" in proc.stderr and "no stored history" in proc.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert "## torchpulse compare: 1 benchmark(s) slower beyond 5%" in summary
    assert not (project / "results").exists() or not any((project / "results").rglob("*-*.json"))


@pytest.mark.parametrize(("args", "message"), [
    (["bisect", "nosuchrev", "HEAD", "--bench", fixture.BENCHMARK], "is not in"),
    (["bisect", "HEAD", "HEAD~3", "--bench", fixture.BENCHMARK], "not on the first-parent"),
    (["bisect", "HEAD~1", "HEAD", "--bench", "bench_work.time_none"], "matched no benchmark"),
    (["compare", "HEAD~1", "HEAD", "--max-runs", "2"], "--max-runs must be at least 3"),
])
def test_bad_input_is_one_line_and_exit_2(repo, monkeypatch, capsys, tmp_path, args,
                                          message):
    root, _ = repo
    monkeypatch.chdir(root)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = tree_bytes(root / "results")
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and err[-1].startswith(f"torchpulse {args[0]}: error:")
    assert tree_bytes(root / "results") == before
    assert list(tmp_path.iterdir()) == []  # the scratch folder went with the error


def test_a_kept_scratch_is_named_with_asvs_log(repo, monkeypatch, capsys, tmp_path):
    root, _ = repo
    monkeypatch.chdir(root)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # asv describes the machine in the scratch folder, not in the user's ~/.asv-machine.json
    # (which another asv command may be rewriting meanwhile); pip's cache stays where it is
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    monkeypatch.setenv("HOME", str(home))
    assert main(["bisect", "HEAD~1", "HEAD", "--bench", "bench_work.time_none",
                 "--keep-scratch"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].startswith("torchpulse bisect: scratch results and log kept in")
    log = err[-1].split("asv's log: ")[1].rstrip(")")
    assert "matched no benchmark" in err[-1] and Path(log).is_file()
    assert not (home / ".asv-machine.json").exists()
    described = list(Path(log).parent.glob("asv-*/asv-machine.json"))
    assert len(described) == 1 and "version" in json.loads(described[0].read_text())


def test_a_commit_that_does_not_build_is_an_error_in_either_order(repo, tmp_path,
                                                                   monkeypatch, capsys):
    """BASE and HEAD go to one asv run, and asv discovers the suite at the first commit that
    builds: a HEAD that does not build would only read as failed benchmarks. It is measured
    alone then, and is the one-line error it was before (exit 2)."""
    # a copy of the fixture with a broken commit on top
    source, shas = repo
    root = tmp_path / "stepwork"
    _copy_in_its_environment(source, root)
    good = shas[-1]
    (root / "pyproject.toml").write_text("[build-system\nnot toml")
    subprocess.run(["git", "commit", "-qam", "a broken build"], cwd=root, check=True)
    broken = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True,
                            capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(root)
    assert main(["compare", good, broken, "--max-runs", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"torchpulse compare: error: asv failed measuring {broken[:12]}")
    assert "Failed to build" in err[-1]
