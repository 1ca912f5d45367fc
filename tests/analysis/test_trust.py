"""On a GPU machine the alert and the summary page say which series to trust at which
threshold, and why wall time cannot be on a VM whose host moves it between processes (issue
85): from the series' own noise, not from the docs."""

import json

import numpy as np
import pytest
from asvproject import track_project

from torchpulse.cli import main
from torchpulse.results.project import Project
from torchpulse.site import page, summary

COMMITS = 12
WORKLOADS = ["'rnns/cudnn/forward'", "'rnns/py/forward'", "'cnns/resnet50/forward'"]
BENCHES = {"bench_gpu.Workloads.track_wall_time": "seconds",
           "bench_gpu.Workloads.track_kernel_time": "device seconds",
           "bench_gpu.Workloads.track_kernels": "kernels",
           "bench_gpu.Workloads.track_gpu_memory": "bytes"}
NOISE = {"seconds": 0.15, "device seconds": 0.002, "kernels": 0.0, "bytes": 0.0}  # as on an H200


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("trust")
    rng = np.random.default_rng(11)
    levels = {"seconds": 0.002, "device seconds": 0.0008, "kernels": 201.0, "bytes": 2e8}

    def values(i: int) -> dict[str, list[float]]:
        return {name: [levels[unit] * float(np.exp(NOISE[unit] * rng.standard_normal()))
                       for _ in WORKLOADS] for name, unit in BENCHES.items()}

    track_project(root, COMMITS, {name: (unit, [WORKLOADS]) for name, unit in BENCHES.items()},
                  values, machine="gpu1", python="3.12")
    return root


def test_a_gpu_machine_says_what_to_trust_in_every_view(project, capsys):
    conf = str(project / "asv.conf.json")
    assert main(["alert", "--config", conf, "--format", "json"]) == 0
    trust = {t["unit"]: t for t in json.loads(capsys.readouterr().out)["trust"]}
    assert set(trust) == set(BENCHES.values())
    assert trust["device seconds"]["trusted"] is True
    assert trust["device seconds"]["threshold"] == 0.02
    assert trust["seconds"]["trusted"] is False and trust["seconds"]["mde"] > 0.05
    assert trust["kernels"]["trusted"] is True and trust["kernels"]["threshold"] is None
    assert trust["bytes"]["trusted"] is True
    assert main(["alert", "--config", conf]) == 0
    text = capsys.readouterr().out
    assert "what machine gpu1 can be trusted for" in text
    assert "  kernel time: trusted at its 2% threshold" in text
    assert "  kernels: exact: any increase is a regression" in text
    assert "  wall time: not at its 5% threshold: its series detect only" in text
    assert "the host's launch work" in text
    assert main(["alert", "--config", conf, "--format", "markdown"]) == 0
    assert "- kernel time: trusted at its 2% threshold" in capsys.readouterr().out
    html = page.render(summary.build(Project.load(project / "asv.conf.json")))
    assert '<div class="trust">' in html and "wall time: not at its 5% threshold" in html


def test_a_machine_without_kernel_time_says_nothing_of_it(tmp_path, capsys):
    from torchpulse.evaluation import synthetic

    synthetic.build(tmp_path, commits=8, per_cell=1, noise_series=1, seed=3, kinds=("step",),
                    sizes=(0.2,), distances=(2,))
    assert main(["alert", "--config", str(tmp_path / "asv.conf.json"), "--format",
                 "json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["trust"] == []
