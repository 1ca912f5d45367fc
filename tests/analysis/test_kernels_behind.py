"""The kernels behind a GPU regression (issue 85): an alert on a workload's kernel time,
kernel count or synchronisations names what grew between the two commits' stored kernel
profiles, with its share of the change, in every view. On the CPU, with made-up profiles
of the planted regression of experiments/gpu/plant.py: one elementwise kernel more at every
time step of the LSTM cell, and one host synchronisation after the loop."""

import json

import numpy as np
import pytest
from asvproject import track_project

from torchpulse.cli import main
from torchpulse.instructions import profiles
from torchpulse.results.project import Project
from torchpulse.site import page, summary

COMMITS = 12
STEP_AT = 9
WORKLOAD = "'rnns/py/forward'"
STEPS = 100  # the LSTM's time steps: 100 launches of the planted kernel a call
PLANTED = "void at::native::elementwise_kernel<128, 2>(int, <lambda>)"  # as CUDA names it
SITE = "aten::is_nonzero"  # `if tensor:` after the loop
BENCHES = {"bench_gpu.Workloads.track_kernel_time": "device seconds",
           "bench_gpu.Workloads.track_kernels": "kernels",
           "bench_gpu.Workloads.track_syncs": "synchronizations"}
BEFORE = {  # one call of the workload before the plant: device ns and launches by kernel
    "ampere_sgemm_32x32_sliced1x4_tn": (2_400_000, 400),
    "void at::native::vectorized_elementwise_kernel<4, sigmoid>": (900_000, 300),
    "void at::native::vectorized_elementwise_kernel<4, tanh>": (500_000, 200),
}
PLANTED_NS = 100_000  # 100 launches of 1 us: +2.7 %, over the 2 % device threshold


def _profiles(planted: bool) -> dict[str, dict[str, int]]:
    time = {name: ns for name, (ns, _) in BEFORE.items()}
    launches = {name: n for name, (_, n) in BEFORE.items()}
    syncs: dict[str, int] = {}
    if planted:
        time[PLANTED], launches[PLANTED], syncs[SITE] = PLANTED_NS, STEPS, 1
        # the rest moves a little between the two commits, as kernel time does
        time["ampere_sgemm_32x32_sliced1x4_tn"] += 4_000
    return {profiles.KERNEL_TIME: time, profiles.KERNEL_LAUNCHES: launches,
            profiles.SYNCS: syncs}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("kernels")
    rng = np.random.default_rng(5)
    before_ns = sum(ns for ns, _ in BEFORE.values())

    def values(i: int) -> dict[str, list[float]]:
        planted = i >= STEP_AT
        time_s = (before_ns + (PLANTED_NS + 4_000 if planted else 0)) / 1e9
        return {
            "bench_gpu.Workloads.track_kernel_time": [time_s * (1 + 0.0005
                                                                * rng.standard_normal())],
            "bench_gpu.Workloads.track_kernels": [900.0 + (STEPS if planted else 0)],
            "bench_gpu.Workloads.track_syncs": [1.0 if planted else 0.0],
        }

    shas = track_project(root, COMMITS,
                         {name: (unit, [[WORKLOAD]]) for name, unit in BENCHES.items()}, values)
    where = root / profiles.DEFAULT_FOLDER
    for sha, planted in ((shas[STEP_AT - 1], False), (shas[STEP_AT], True)):
        for kind, table in _profiles(planted).items():
            profiles.write(profiles.path(where, sha, "e", kind), sha, "e",
                           {"rnns/py/forward": table}, {"rnns/py/forward": sum(table.values())})
    return root, shas


def alert(root, *args):
    return main(["alert", "--config", str(root / "asv.conf.json"), *args])


def test_each_gpu_alert_names_what_grew_behind_it_with_its_share(project, capsys):
    root, shas = project
    assert alert(root, "--format", "json") == 1
    found = {a["benchmark"]: a for a in json.loads(capsys.readouterr().out)["alerts"]}
    assert set(found) == set(BENCHES)
    assert all(a["commit"] == shas[STEP_AT] for a in found.values())
    time = found["bench_gpu.Workloads.track_kernel_time"]
    assert time["functions_of"] == "kernel_time" and time["functions_total"] == 104_000
    # the planted kernel first, then the GEMM's small drift; nothing that did not grow
    assert [(f["name"], f["before"], f["after"]) for f in time["functions"]] == [
        (PLANTED, 0, PLANTED_NS), ("ampere_sgemm_32x32_sliced1x4_tn", 2_400_000, 2_404_000)]
    launches = found["bench_gpu.Workloads.track_kernels"]
    assert launches["functions_of"] == "kernel_launches"
    assert [(f["name"], f["change"]) for f in launches["functions"]] == [(PLANTED, STEPS)]
    syncs = found["bench_gpu.Workloads.track_syncs"]
    assert [(f["name"], f["change"]) for f in syncs["functions"]] == [(SITE, 1)]

    assert alert(root) == 1
    text = capsys.readouterr().out
    assert "kernels that grew most (device ns a call):" in text
    assert f"+100,000 (96% of the change)  {PLANTED} (0 -> 100,000)" in text
    assert "kernels that grew most (launches a call):" in text
    assert f"+100 (100% of the change)  {PLANTED} (0 -> 100)" in text
    assert "synchronisation sites that grew most (synchronisations a call):" in text
    assert f"+1 (100% of the change)  {SITE} (0 -> 1)" in text
    assert alert(root, "--format", "markdown") == 1
    markdown = capsys.readouterr().out
    assert "Kernels of bench\\_gpu" in markdown and "(device ns a call):" in markdown
    assert "| 0 | 100,000 | +100,000 (96% of the change) |" in markdown
    assert alert(root, "--format", "github") == 1
    github = capsys.readouterr().out
    assert "(+100,000 device ns a call)" in github and f"grew most: {SITE} (+1 " in github
    html = page.render(summary.build(Project.load(root / "asv.conf.json")))
    assert "kernels that grew most (device ns a call)" in html
    assert "void at::native::elementwise_kernel&lt;128, 2&gt;(int, &lt;lambda&gt;)" in html


def test_without_both_profiles_a_gpu_alert_lists_nothing(project, capsys, tmp_path):
    """A profile is derived data: the step's commit measured without one (an older
    torchpulse) leaves the alert without its list, nothing else."""
    root, shas = project
    moved = tmp_path / "moved"
    (root / profiles.DEFAULT_FOLDER).rename(moved)
    try:
        assert alert(root, "--format", "json") == 1
        alerts = json.loads(capsys.readouterr().out)["alerts"]
        assert len(alerts) == 3 and all(a["functions"] == [] for a in alerts)
        assert all(a["functions_of"] is None for a in alerts)
    finally:
        moved.rename(root / profiles.DEFAULT_FOLDER)
