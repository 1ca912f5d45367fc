"""bench_gpu through asv for real, as a dry run on the CPU ($TORCHPULSE_GPU_SUITE=cpu, the
smoke sizes, three workloads): one setup_cache measures them, the timed figures reach asv's
results with their samples, the counters as numbers, GPU memory as skipped, and the alert
judges each by its unit's rule. The CUDA figures themselves are docs/gpu.md's."""

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from asvproject import _git

ROOT = Path(__file__).resolve().parents[2]
ASV = [sys.executable, "-m", "asv"]
SELECTED = ["rnns/cudnn/forward", "rnns/cudnn/backward", "autograd/ppl_simple_reg/vjp"]
BENCH = r"^bench_gpu\.(MachineCanary|Workloads\.\w+\('(rnns/cudnn/|autograd/ppl_simple_reg/vjp))"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpu-suite")
    repo, home = tmp / "repo", tmp / "home"
    for name in ("src", "benchmarks"):
        shutil.copytree(ROOT / name, repo / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "asv.conf.json", "README.md", ".gitignore"):
        shutil.copy(ROOT / name, repo / name)
    home.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    sha = _git(repo, "rev-parse", "HEAD")
    env = {**os.environ, "HOME": str(home), "TORCHPULSE_PRESET": "smoke",
           "TORCHPULSE_GPU_SUITE": "cpu", "TORCHPULSE_GPU_WORKLOADS": ",".join(SELECTED)}
    env.pop("TORCHPULSE_DEVICE", None)
    subprocess.run([*ASV, "machine", "--yes", "--machine", "e2e"], cwd=repo, env=env,
                   check=True, capture_output=True)
    proc = subprocess.run(
        [*ASV, "run", "--machine", "e2e", "-E", f"existing:{sys.executable}",
         "--set-commit-hash", sha, "--record-samples", "--show-stderr", "--bench", BENCH],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [path] = (repo / "results" / "e2e").glob(f"{sha[:8]}-*.json")
    return repo, sha, json.loads(path.read_text())


def _rows(result: dict, method: str) -> dict[str, dict]:
    row = dict(zip(result["result_columns"], result["results"][f"bench_gpu.Workloads.{method}"],
                   strict=False))
    params = [p.strip("'") for p in row["params"][0]]
    out = {}
    for i, name in enumerate(params):
        if name in SELECTED:
            out[name] = {"value": row["result"][i],
                         "samples": (row.get("samples") or [None] * len(params))[i]}
    return out


def test_the_timed_figures_are_stored_with_their_samples(run):
    _, _, result = run
    for method in ("track_wall_time", "track_kernel_time"):
        rows = _rows(result, method)
        assert set(rows) == set(SELECTED)
        for name, row in rows.items():
            samples = row["samples"]
            assert samples and len(samples) >= 3, (method, name)
            # asv's value is the median of the samples the one process took
            assert row["value"] == pytest.approx(statistics.median(samples)), (method, name)
    assert all(0 < s < 1 for s in _rows(result, "track_wall_time")["rnns/cudnn/forward"]
               ["samples"])


def test_counters_are_numbers_and_gpu_memory_is_skipped_on_the_cpu(run):
    _, _, result = run
    for method in ("track_kernels", "track_syncs"):
        assert {n: r["value"] for n, r in _rows(result, method).items()} == dict.fromkeys(
            SELECTED, 0)
    memory = _rows(result, "track_gpu_memory")
    assert all(math.isnan(r["value"]) for r in memory.values())  # asv's "skipped"


def test_the_alert_reads_each_figure_by_its_rule(run):
    repo, _, _ = run
    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "alert", "--config",
                           str(repo / "asv.conf.json"), "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    verdicts = json.loads(proc.stdout)["verdicts"]
    rules = {(v["benchmark"].rsplit(".", 1)[1], v["rule"]) for v in verdicts
             if v["benchmark"].startswith("bench_gpu.Workloads.")}
    assert rules == {("track_wall_time", "time"), ("track_kernel_time", "device"),
                     ("track_kernels", "exact"), ("track_syncs", "exact")}
    assert len([v for v in verdicts if v["benchmark"].startswith("bench_gpu.Workloads.")]) \
        == 4 * len(SELECTED)
