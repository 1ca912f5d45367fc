"""asv for real (no mocks): a temporary repository with two commits, benchmarked in a
virtualenv at the smoke preset. The first commit's package lacks the vl_py runner, as an
old commit would: asv must record it as skipped there and measure it in the second."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from asvproject import torch_env_fast

ROOT = Path(__file__).resolve().parents[2]
ASV = [sys.executable, "-m", "asv"]
SUITE = "bench_rnns.VariableLengthLSTM"
CANARY = "bench_rnns.MachineCanary"


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _copy_project(dest: Path) -> None:
    for name in ("src", "benchmarks"):
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "asv.conf.json", "README.md", ".gitignore"):
        shutil.copy(ROOT / name, dest / name)


def _without_vl_py(runners_py: Path) -> None:
    source = runners_py.read_text()
    trimmed, count = re.subn(r'    _runner\("vl_py".*?\n(?=    _runner\()', "", source,
                             flags=re.S)
    assert count == 1, "could not remove the vl_py runner from the registry"
    runners_py.write_text(trimmed)


@pytest.fixture(scope="module")
def asv_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    repo, home = tmp / "repo", tmp / "home"
    repo.mkdir()
    home.mkdir()
    # asv keeps its machine file in ~; keep the user's pip configuration (it points pip at
    # the local torch 2.13.0 CPU wheel)
    if (Path.home() / ".config" / "pip").is_dir():
        shutil.copytree(Path.home() / ".config" / "pip", home / ".config" / "pip")
    env = dict(os.environ, **torch_env_fast(), HOME=str(home), TORCHPULSE_PRESET="smoke",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")

    _copy_project(repo)
    _git(repo, "init", "-q", "-b", "main")
    runners_py = repo / "src" / "torchpulse" / "fastrnns" / "runners.py"
    full = runners_py.read_text()
    _without_vl_py(runners_py)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "old: no vl_py")
    runners_py.write_text(full)
    _git(repo, "commit", "-qam", "new: vl_py")
    shas = subprocess.run(["git", "rev-list", "--reverse", "main"], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.split()

    subprocess.run([*ASV, "machine", "--yes", "--machine", "e2e"], cwd=repo, env=env,
                   check=True, capture_output=True)
    run = subprocess.run(
        [*ASV, "run", "--machine", "e2e", "--record-samples", "--show-stderr",
         "--bench", SUITE, "--bench", CANARY, "main"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = {}
    for sha in shas:
        [path] = (repo / "results" / "e2e").glob(f"{sha[:8]}-*.json")
        results[sha] = json.loads(path.read_text())
    return shas, results, run.stdout


def _values(result_file, benchmark):
    columns = result_file["result_columns"]
    row = dict(zip(columns, result_file["results"][benchmark], strict=False))
    params = [p.strip("'") for p in row["params"][0]]
    return dict(zip(params, row["result"], strict=True)), row


@pytest.mark.slow
def test_both_commits_have_finite_results(asv_results):
    shas, results, _ = asv_results
    for sha in shas:
        assert results[sha]["commit_hash"] == sha
        for what in ("time_forward", "time_backward", "peakmem_step"):
            values, _ = _values(results[sha], f"{SUITE}.{what}")
            for runner in ("vl_cudnn", "vl_jit"):
                assert values[runner] is not None and math.isfinite(values[runner])
                assert values[runner] > 0


@pytest.mark.slow
def test_runner_missing_from_an_old_commit_is_skipped(asv_results):
    (old, new), results, stdout = asv_results
    old_values, _ = _values(results[old], f"{SUITE}.time_forward")
    new_values, _ = _values(results[new], f"{SUITE}.time_forward")
    # asv stores a skipped parameter as NaN (a failed one as null)
    assert old_values["vl_py"] is not None and math.isnan(old_values["vl_py"])
    assert new_values["vl_py"] is not None and new_values["vl_py"] > 0
    assert "failed" not in stdout


@pytest.mark.slow
def test_samples_are_recorded_in_seconds(asv_results):
    shas, results, _ = asv_results
    _, row = _values(results[shas[-1]], f"{SUITE}.time_forward")
    samples = row["samples"][0]
    assert len(samples) >= 10
    # smoke-size forward passes: well under a second each, never milliseconds mislabelled
    assert all(0 < s < 1.0 for s in samples)
    assert row["result"][0] == pytest.approx(sorted(samples)[len(samples) // 2], rel=0.5)


@pytest.mark.slow
def test_the_machine_canary_is_timed_beside_the_suite(asv_results):
    """asv stores the canary's readings with the start time and duration of every job: what
    the disturbance rule reads."""
    shas, results, _ = asv_results
    name = f"{CANARY}.time_reference"
    for sha in shas:
        columns = results[sha]["result_columns"]
        canary = dict(zip(columns, results[sha]["results"][name], strict=False))
        suite = dict(zip(columns, results[sha]["results"][f"{SUITE}.time_forward"],
                         strict=False))
        assert 0 < canary["result"][0] < 1.0
        # in name order within a round: bench_rnns.MachineCanary before
        # bench_rnns.VariableLengthLSTM. started_at is the last round's start; without
        # --interleave-rounds asv sums the rounds' durations, so the canary's start plus its
        # duration can lie past the suite's start (this test once asserted it did not).
        assert suite["started_at"] > canary["started_at"]
        assert canary["duration"] > 0
