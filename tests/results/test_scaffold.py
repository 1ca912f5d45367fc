"""`torchpulse init`'s scaffold (results/scaffold.py): the project it writes, what it refuses,
and the suites it can bring along. The end-to-end run of such a project through asv is
tests/e2e/test_init.py."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from asvproject import one_commit_repo

from torchpulse.results import scaffold
from torchpulse.results.project import Project


def test_init_writes_a_whole_project_or_nothing(tmp_path, monkeypatch):
    repo = one_commit_repo(tmp_path / "repo", branch="trunk")

    plan = scaffold.plan(tmp_path / "proj", str(repo))
    assert (plan.branch, plan.name, plan.repo) == ("trunk", "repo", str(repo.resolve()))
    written = scaffold.create(plan)
    proj = Project.load(tmp_path / "proj" / "asv.conf.json")
    assert proj.branches == ["trunk"] and proj.local_repo() == repo.resolve()
    settings = proj.settings
    assert settings["matrix"]["req"]["torch"] == plan.pins["torch"]
    assert all("--no-deps" in c for c in settings["install_command"])
    wheel = next(w for w in written if w.startswith("wheels/"))
    assert f"{{wheel_file}} ../../../{wheel}" in settings["install_command"][0]
    assert (tmp_path / "proj" / wheel).is_file()
    assert "MachineCanary" in (tmp_path / "proj" / "benchmarks" / "_canary.py").read_text()
    # its Makefile runs the one pipeline, on its branch
    # (under `make test` the outer make's settings would add "Entering directory" lines)
    outside_make = {k: v for k, v in os.environ.items()
                    if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    dry = subprocess.run(["make", "--no-print-directory", "-n", "dashboard", "N=3"],
                         cwd=tmp_path / "proj", capture_output=True, text=True, check=True,
                         env=outside_make).stdout
    assert dry.strip() == 'torchpulse dashboard --branch "trunk" -n 3 --preset cpu'

    # a second init into the same folder, a folder that is no repository, a URL without a
    # branch and a version range are refused before anything is written
    for kwargs, says in (({"directory": tmp_path / "proj", "repo": str(repo)}, "not an empty"),
                         ({"directory": tmp_path / "p2", "repo": str(tmp_path)}, "not a git"),
                         ({"directory": tmp_path / "p3", "repo": "https://x.invalid/r.git"},
                          "--branch"),
                         ({"directory": tmp_path / "p4", "repo": str(repo),
                           "torch": ">=2.4"}, "exact version"),
                         ({"directory": tmp_path / "p6", "repo": "x\nall:\n\trm -rf ~"},
                          "not a path or URL")):
        with pytest.raises(scaffold.ScaffoldError, match=says):
            scaffold.plan(**kwargs)

    # a failed wheel build leaves no project and no scratch folder behind
    broken = tmp_path / "broken"
    (broken / "src" / "torchpulse").mkdir(parents=True)
    (broken / "benchmarks").mkdir()
    (broken / "pyproject.toml").write_text("[build-system]\nrequires = [\n")
    (broken / "README.md").write_text("")
    monkeypatch.setattr(scaffold, "source_tree", lambda: broken)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(scaffold.ScaffoldError, match="wheel failed"):
        scaffold.create(scaffold.plan(tmp_path / "p5", str(repo)))
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_with_suites_the_project_runs_torchpulses_own_suites_too(tmp_path):
    """They load their names and sizes from the torchpulse installed beside each commit (the
    project has no src/ of its own)."""
    repo = one_commit_repo(tmp_path / "repo")
    scaffold.create(scaffold.plan(tmp_path / "proj", str(repo), with_suites=True))
    script = textwrap.dedent("""\
        import json, sys
        from asv_runner.discovery import disc_benchmarks
        sys.path.insert(0, sys.argv[1])
        from benchmarks import _tree
        names = sorted({b.name for b in disc_benchmarks(sys.argv[1] + "/benchmarks")})
        print(json.dumps([str(_tree.PACKAGE), names]))
        """)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "proj")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    package, names = json.loads(proc.stdout.strip().splitlines()[-1])
    import torchpulse

    assert Path(package) == Path(torchpulse.__file__).parent
    assert {"bench_rnns.LSTM.time_forward", "bench_autograd.FunctionalAutograd.time_task",
            "bench_compile.CompiledModel.track_step_time", "bench_model.Example.time_forward",
            "bench_instructions.Instructions.track_instructions",
            "_canary.MachineCanary.time_reference"} <= set(names)
    assert not any(n.startswith(("external.", "harness.")) for n in names)
    without = scaffold.files(scaffold.plan(tmp_path / "p2", str(repo)), "w.whl")
    assert not any(f.startswith("benchmarks/bench_rnns") for f in without)


def test_init_never_writes_into_git_a_results_tree_under_a_file_or_a_folder_it_cannot(
        tmp_path, monkeypatch, capsys):
    """A whole project was written inside .git/ and inside a results tree with exit 0; a
    path under a file and a read-only folder were tracebacks. Each is one line, exit 2,
    and nothing is left behind."""
    import tempfile

    from torchpulse.cli import main

    repo = one_commit_repo(tmp_path / "repo")
    results = tmp_path / "results"
    (results / "m").mkdir(parents=True)
    (results / "benchmarks.json").write_text("{}")
    (tmp_path / "a file").write_text("")
    for directory, says in ((repo / ".git" / "proj", "inside a git repository's .git"),
                            (results / "m" / "proj", "inside the asv results tree"),
                            (tmp_path / "a file" / "proj", "is a file, not a folder")):
        assert main(["init", str(directory), "--repo", str(repo)]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1
        assert not directory.exists()

    def refused(*args, **kwargs):  # a read-only or immutable folder, whoever runs it
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    assert main(["init", str(tmp_path / "proj"), "--repo", str(repo)]) == 2
    err = capsys.readouterr().err
    (error,) = [line for line in err.splitlines() if "error:" in line]
    assert error.endswith("cannot write " + str(tmp_path / "proj") + ": Permission denied")
    assert not (tmp_path / "proj").exists()
