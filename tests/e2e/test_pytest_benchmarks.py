"""The pytest-benchmark suite (benchmarks/pytest_bench) must not rot: run it here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchpulse.fastrnns.choices import FORWARD_ONLY
from torchpulse.fastrnns.runners import RUNNERS

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "pytest_bench"


def _pytest(*args, tmp_path):
    # the outer run's PYTEST_* variables would make the inner one a pytest-xdist worker, for
    # which pytest-benchmark switches benchmarking off
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
           "TORCHPULSE_PRESET": "smoke", "TORCHPULSE_DEVICE": "cpu"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(SUITE), "-q", "-p", "no:cacheprovider",
         "-o", "addopts=", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.slow
def test_every_runner_runs_forward_and_backward_with_benchmarking_disabled(tmp_path):
    proc = _pytest("--benchmark-disable", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # a forward and a backward test per runner, but no backward for a forward-only one
    assert f"{2 * len(RUNNERS) - len(FORWARD_ONLY)} passed" in proc.stdout


@pytest.mark.slow
def test_json_output_has_group_fastrnns_and_timed_rounds(tmp_path):
    out = tmp_path / "out.json"
    proc = _pytest("-k", "cudnn and not layernorm and not dropout and not vl",
                   f"--benchmark-json={out}", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    by_name = {b["name"]: b for b in report["benchmarks"]}
    assert set(by_name) == {"test_forward[cudnn]", "test_backward[cudnn]"}
    for bench in by_name.values():
        assert bench["group"] == "fastrnns"
        assert bench["extra_info"] == {"preset": "smoke", "device": "cpu", "runner": "cudnn"}
        stats = bench["stats"]
        assert stats["rounds"] == 2 and len(stats["data"]) == 2  # the smoke preset's nloops
        assert 0 < stats["min"] <= stats["median"] <= stats["max"]
