"""Acceptance: files of each format, produced the way their tools produce them, imported
with only --commit and --machine, show up on the site `asv publish` builds, with the right
values and units."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asvproject import make_project
from paths import IMPORT_DATA

from torchpulse.cli import main

DATA = IMPORT_DATA


def _graph(html: Path, benchmark: str) -> list:
    paths = [p for p in html.glob(f"graphs/**/{benchmark}.json") if "summary" not in p.parts]
    assert len(paths) == 1, paths  # one machine, one graph line
    return json.loads(paths[0].read_text())


def _at(points, revision_count, combo_index):
    (point,) = [p for p in points if p[0] == revision_count]
    return point[1][combo_index] if isinstance(point[1], list) else point[1]


@pytest.mark.slow
def test_imported_values_reach_the_published_graphs(tmp_path, capsys):
    project = make_project(tmp_path / "proj")
    sha = project.main[-1]
    oss = tmp_path / "oss.json"
    assert main(["bench", "--rnns", "cudnn", "--group", "rnns", "--preset", "smoke",
                 "--device", "cpu", "--nloops", "2", "--warmup", "2", "--print-json"]) == 0
    oss.write_text(capsys.readouterr().out)
    measured = json.loads(oss.read_text())["lstm"]["cudnn"]
    imports = [("oss", oss), ("pep", DATA / "pep.log"),
               ("pytest-benchmark", DATA / "pytest-benchmark.json"),
               ("dynamo-csv", DATA / "dynamo_performance.csv"),
               ("autograd-md", DATA / "autograd.md")]
    v3 = tmp_path / "v3.json"  # a PyTorch benchmark database record, as its CI writes one
    v3.write_text(json.dumps([{
        "benchmark": {"name": "TorchInductor", "mode": "inference", "dtype": "bfloat16",
                      "extra_info": {"device": "cuda"}},
        "model": {"name": "BERT_pytorch", "type": "OSS model", "backend": "inductor"},
        "metric": {"name": "speedup", "benchmark_values": [1.25, 1.5, 1.3]},
        "runners": [{"name": "ci-gpu", "type": "ci-gpu", "gpu_count": 1}],
        "head_sha": sha}]))
    imports.append(("pytorch-v3", v3))
    for fmt, path in imports:
        env_name = ["--env-name", "pep"] if fmt == "pep" else []  # same metrics as oss
        # fastrnns files do not say their unit: torchpulse's and these are in ms
        unit = ["--unit", "ms"] if fmt in ("oss", "pep") else []
        assert main(["import", fmt, str(path), "--config", str(project.conf), "--commit", sha,
                     "--machine", "ci-gpu", *env_name, *unit]) == 0, capsys.readouterr().err
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "asv", "publish", "--config",
                           str(project.conf)], cwd=project.root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    index = json.loads((project.html / "index.json").read_text())
    rev = index["revision_to_hash"]
    revision = int(next(k for k, v in rev.items() if v == sha))

    fwd = "external.bench_fastrnns.Fastrnns.time_forward"
    assert index["benchmarks"][fwd]["unit"] == "seconds"
    cudnn = index["benchmarks"][fwd]["params"][0].index("'cudnn'")
    values = [_at(json.loads(p.read_text()), revision, cudnn)
              for p in project.html.glob(f"graphs/**/{fwd}.json") if "summary" not in p.parts]
    # two graph lines: source external (oss, measured here) and source pep (median 5.8 ms)
    assert sorted(values) == pytest.approx(sorted([measured / 1000, 5.8e-3]))

    test = "external.bench_pytest.PytestBenchmark.time_test"
    tests = index["benchmarks"][test]["params"][0]
    name = "'benchmarks/pytest_bench/test_fastrnns.py::test_backward[resnet18]'"
    data = json.loads((DATA / "pytest-benchmark.json").read_text())
    median = next(b["stats"]["median"] for b in data["benchmarks"]
                  if b["name"] == "test_backward[resnet18]")
    assert _at(_graph(project.html, test), revision, tests.index(name)) == pytest.approx(median)

    ratio = "external.bench_dynamo.Dynamo.track_latency_ratio"
    assert index["benchmarks"][ratio]["unit"] == "compiled/eager"
    devices, models = index["benchmarks"][ratio]["params"]
    combo = devices.index("'cuda'") * len(models) + models.index("'BERT_pytorch'")
    assert _at(_graph(project.html, ratio), revision, combo) == pytest.approx(1 / 1.452)

    task = "external.bench_autograd.FunctionalAutograd.time_task"
    models, tasks = index["benchmarks"][task]["params"]
    combo = models.index("'ppl_simple_reg'") * len(tasks) + tasks.index("'jacfwd'")
    assert _at(_graph(project.html, task), revision, combo) == pytest.approx(0.00051)

    # a v3 speedup is stored as its inverse, and goes back out as it came, after publish
    inverse = "external.bench_pytorch.PyTorchV3.track_inverse"
    assert _at(_graph(project.html, inverse), revision, 0) == pytest.approx(1 / 1.3)
    out = tmp_path / "export.json"
    assert main(["export", "pytorch-v3", "--config", str(project.conf), "--output",
                 str(out)]) == 0
    (back,) = [r for r in json.loads(out.read_text())
               if r["benchmark"]["name"] == "TorchInductor"]
    assert back["metric"]["benchmark_values"] == pytest.approx([1.25, 1.5, 1.3], rel=1e-12)
    assert back["head_sha"] == sha and back["runners"][0]["type"] == "ci-gpu"
