"""`torchpulse init`: a benchmark project for another repository, end to end. A small
torch-model package whose history has one commit that makes its forward pass slower; asv
measures every commit through the scaffold and `torchpulse alert` names that commit. (The
scaffold's own tests: tests/results/test_scaffold.py; this file holds only the slow run,
which make test starts first, on a core of its own: tests/conftest.py.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asvproject import package_repo, torch_env_fast

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
