"""`torchpulse init`: a benchmark project for another repository. End to end: a small
torch-model package whose history has one commit that makes its forward pass slower; asv
measures every commit through the scaffold and `torchpulse alert` names that commit."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from asvproject import one_commit_repo, package_repo, torch_env_fast

from torchpulse.results import scaffold
from torchpulse.results.project import Project

SLOW_AT = 4  # the commit (0-based) that makes the network four times as deep
COMMITS = 8  # four at each depth: enough for a verdict on a 4x step, and 1/3 cheaper than 12

MODEL = '''\
import torch
from torch import nn

DEPTH = {depth}  # revision {i}


class Net(nn.Module):
    def __init__(self, width=256):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.Tanh())
                                      for _ in range(DEPTH)])

    def forward(self, x):
        return self.layers(x)
'''

SUITE = '''\
import torch

from torchpulse.harness import ModelBenchmark

import tinymodel


class Tiny(ModelBenchmark):
    def build(self, device, generator):
        return tinymodel.Net(), (torch.randn(64, 256, generator=generator),)
'''


def _model_repo(root: Path) -> list[str]:
    return package_repo(root, "tinymodel", [
        MODEL.format(depth=16 if i >= SLOW_AT else 4, i=i) for i in range(COMMITS)])


@pytest.mark.slow
def test_init_then_asv_then_alert_names_the_slow_commit(tmp_path):
    shas = _model_repo(tmp_path / "tinymodel")
    env = {**os.environ, **torch_env_fast(), "HOME": str(tmp_path), "TORCHPULSE_PRESET": "cpu"}
    cli = [sys.executable, "-m", "torchpulse.cli"]
    proc = subprocess.run([*cli, "init", str(tmp_path / "proj"), "--repo",
                           str(tmp_path / "tinymodel")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    proj = tmp_path / "proj"
    (proj / "benchmarks" / "bench_model.py").write_text(SUITE)  # as the user would
    conf = str(proj / "asv.conf.json")
    # the main job as the project's Makefile runs it, every commit, without the site
    alert = subprocess.run([*cli, "dashboard", "--config", conf, "--machine", "e2e", "-n",
                            str(len(shas)), "--no-publish", "--format", "json", "--output",
                            str(tmp_path / "alert.json")],
                           cwd=proj, env=env, capture_output=True, text=True, timeout=2400)
    assert alert.returncode == 1, alert.stdout[-4000:] + alert.stderr[-3000:]
    assert f"== measuring {len(shas)} commit(s)" in alert.stdout
    assert "== regression alerts" in alert.stdout
    stored = list((proj / "results" / "e2e").glob("*-*.json"))
    assert len(stored) == len(shas)
    report = json.loads((tmp_path / "alert.json").read_text())
    # forward and backward both slow down; on a busy machine one of the two series may be
    # too noisy (or too disturbed) for a verdict, so at least one alert, each naming that
    # commit. A shared CI machine can also add a smaller rise elsewhere in a series, which
    # the alert rightly lists as a further culprit: the slow commit must be among them. When
    # the canary saw the machine disturbed at the slow commit, that point is not counted and
    # the alert names the range to the next commit (as CI once did): the slow commit must
    # then be one of the disturbed commits it says lie between.
    timed = ("bench_model.Tiny.time_forward", "bench_model.Tiny.time_backward")
    tiny = [a for a in report["alerts"] if a["benchmark"] in timed]
    order = {sha: i for i, sha in enumerate(shas)}
    named = [(a["benchmark"], [order.get(c) for c in a["culprits"]],
              [order.get(c) for c in a["disturbed_before"]]) for a in tiny]
    assert tiny, report["alerts"]
    assert all(shas[SLOW_AT] in (*a["culprits"], *a["disturbed_before"]) for a in tiny), named
    assert all(order[a["previous_commit"]] < SLOW_AT for a in tiny), named
    assert all(a["ratio"] > 1.5 for a in tiny), [(a["benchmark"], a["ratio"]) for a in tiny]


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
