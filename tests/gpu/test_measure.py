"""The GPU suite's one-process measurement, run on the CPU (its dry run): sample counts,
shared builds, failures kept apart, and what the suite hands asv."""

import pickle
import pickletools

import pytest
from clocks import CountingClock

from torchpulse import sizes, suite
from torchpulse.fastrnns import runners
from torchpulse.gpu import GPU_SUITE_ENV
from torchpulse.gpu import measure as gpu_measure
from torchpulse.gpu.measure import (
    MAX_SAMPLES,
    MIN_SAMPLES,
    PROFILED_CALLS,
    SLOW_MIN_SAMPLES,
    sample_count,
)
from torchpulse.workloads.regions import build

SMOKE = gpu_measure.sizes_at(sizes.by_preset(), "smoke")  # every family's smoke rows


def test_sample_counts_follow_the_calls_time_within_bounds():
    assert sample_count(1e-4, MIN_SAMPLES, MAX_SAMPLES) == MAX_SAMPLES
    assert sample_count(0.05, MIN_SAMPLES, MAX_SAMPLES) == 10  # half a second of calls
    assert sample_count(0.2, MIN_SAMPLES, MAX_SAMPLES) == MIN_SAMPLES
    # a call of seconds (vl_py's backward on a GPU) gets the fewest
    assert sample_count(1.6, MIN_SAMPLES, MAX_SAMPLES) == SLOW_MIN_SAMPLES
    assert sample_count(0.0, MIN_SAMPLES, MAX_SAMPLES) == MAX_SAMPLES


def test_a_region_runs_its_measured_part_inside_the_clocks_region():
    clock = CountingClock()
    for name in ("rnns/cudnn/forward", "rnns/cudnn/backward", "cnns/resnet18/forward",
                 "autograd/ppl_simple_reg/hvp"):
        region = build(name, SMOKE, "cpu", "smoke")
        region.run()
        region.run(clock)
    assert clock.entered == 4
    with pytest.raises(ValueError, match="no backward"):
        build("rnns/cudnn_layernorm/backward", SMOKE, "cpu", "smoke")
    with pytest.raises(ValueError, match="does not run"):
        build("autograd/deepspeech/jvp", SMOKE, "cpu", "smoke")
    with pytest.raises(ValueError, match="not a workload"):
        build("rnns/cudnn", SMOKE, "cpu", "smoke")


def test_one_process_measures_each_workload_and_builds_a_runner_once(monkeypatch):
    built = []
    original = runners.Workload.__init__

    def counting(self, runner, *args):
        built.append(runner.name)
        original(self, runner, *args)

    monkeypatch.setattr(runners.Workload, "__init__", counting)
    names = ["rnns/jit/forward", "rnns/jit/backward", "rnns/nope/forward",
             "cnns/resnet18/forward", "transformers/encoder/forward",
             "transformers/encoder/backward", "autograd/ppl_simple_reg/vjp",
             "rnns/cudnn/forward"]
    lines, rows = [], []
    out = gpu_measure.measure(names, SMOKE, "cpu", "smoke", log=lines.append,
                              each=lambda name, row: rows.append((name, row)))
    assert built == ["jit", "resnet18", "cudnn"]  # forward and backward share one model
    # each workload is handed over as it is measured, a failure as a failure
    assert [name for name, _ in rows] == names
    for name, row in rows:
        assert row["seconds"] == out["seconds"][name]
        assert (row.get("figures") == out["workloads"].get(name)
                and row.get("failed") == out["failed"].get(name))
    assert set(out["workloads"]) == set(names) - {"rnns/nope/forward"}
    assert "not in this version" in out["failed"]["rnns/nope/forward"]
    for name, row in out["workloads"].items():
        assert MIN_SAMPLES <= len(row["wall"]) <= MAX_SAMPLES, name
        assert all(0 < s < 5 for s in row["wall"]), name
        assert len(row["kernel_time"]) == PROFILED_CALLS
        # a CPU run launches nothing on a device and has no GPU memory to read
        assert (row["kernels"], row["syncs"], row["gpu_memory"]) == (0, 0, None)
        assert set(row["kernels_per_call"]) == {0}
    assert len(lines) == len(names) and any("failed" in line for line in lines)
    assert set(out["seconds"]) == set(names)
    assert {"cublas and cudnn", "profiler start", "build", "warm-up", "wall-time samples",
            "profiled calls", "trace reading", "total"} <= set(out["phases"])
    assert out["phases"]["total"] >= sum(out["seconds"].values())
    # each workload's own split: its phases add up to the process's, less the one-offs
    assert set(out["workload_phases"]) == set(names)
    for phase in ("warm-up", "profiled calls", "trace reading"):
        assert sum(p.get(phase, 0.0) for p in out["workload_phases"].values()) == \
            pytest.approx(out["phases"][phase])
    for name, split in out["workload_phases"].items():
        assert sum(split.values()) <= out["seconds"][name] + 1e-6, name
    # asv unpickles it once per benchmark: plain data only
    opcodes = {op.name for op, _, _ in pickletools.genops(pickle.dumps(out))}
    assert not opcodes & {"GLOBAL", "STACK_GLOBAL", "REDUCE"}


@pytest.fixture
def smoke(monkeypatch):
    monkeypatch.setenv("TORCHPULSE_PRESET", "smoke")
    suite.device.cache_clear()
    yield
    suite.device.cache_clear()


TABLES = sizes.by_preset()


def test_the_suite_measures_cuda_runs_only_unless_asked_for_a_dry_run(smoke, monkeypatch):
    monkeypatch.setattr(gpu_measure, "measure", lambda *a, **k: pytest.fail("measured"))
    got = suite.measure_gpu(["rnns/cudnn/forward"], TABLES)
    assert got["unavailable"] == "the GPU suite measures CUDA runs only"


def test_the_suites_dry_run_skips_what_the_sizes_or_revisions_do_not_allow(smoke,
                                                                           monkeypatch):
    monkeypatch.setenv(GPU_SUITE_ENV, "cpu")
    seen = []
    monkeypatch.setattr(gpu_measure, "measure", lambda names, rows, device, preset, **k: (
        seen.append((names, rows, device, preset)) or
        {"workloads": {n: {} for n in names}, "failed": {}, "seconds": {}, "phases": {}}))
    tables = {**TABLES, "autograd": {m: r for m, r in sizes.AUTOGRAD.items() if m != "detr"},
              "revisions": {**sizes.REVISIONS, "ppl_robust_reg": 1}}
    got = suite.measure_gpu(["rnns/cudnn/forward", "autograd/detr/vjp",
                             "autograd/ppl_robust_reg/vjp", "autograd/resnet18/vjp",
                             "transformers/encoder/backward"], tables)
    [(names, rows, device, preset)] = seen
    assert names == ["rnns/cudnn/forward", "autograd/resnet18/vjp",
                     "transformers/encoder/backward"]
    assert rows["transformers"]["encoder"] == sizes.TRANSFORMERS["encoder"]["smoke"]
    assert (device, preset) == ("cpu", "smoke")
    assert rows["fastrnns"] == sizes.FASTRNNS["smoke"]
    assert rows["autograd"]["resnet18"] == sizes.AUTOGRAD["resnet18"]["smoke"]
    assert got["unavailable"] == ""
    assert got["skipped"] == {
        "autograd/detr/vjp": "no sizes for autograd/detr/vjp at the smoke preset",
        "autograd/ppl_robust_reg/vjp": "this commit's ppl_robust_reg is revision 2; the "
                                       "suite measures revision 1"}
    no_preset = suite.measure_gpu(["cnns/resnet18/forward"],
                                  {**TABLES, "fastrnns": {"cpu": sizes.FASTRNNS["cpu"]}})
    assert no_preset["skipped"] == {
        "cnns/resnet18/forward": "no sizes for cnns/resnet18/forward at the smoke preset"}


def test_the_suite_files_each_workloads_kernels_beside_asvs_results(smoke, monkeypatch,
                                                                    tmp_path):
    """What a GPU workload's calls are made of goes to the profiles folder (kernel time,
    launches, synchronisation sites), as the instruction counts' functions do, and not into
    what asv unpickles once per benchmark."""
    from torchpulse.instructions import profiles

    monkeypatch.setenv(GPU_SUITE_ENV, "cpu")
    sha = "c" * 40
    for name, value in (("ASV_COMMIT", sha), ("ASV_ENV_NAME", "env-1"),
                        ("ASV_CONF_DIR", str(tmp_path))):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(profiles.FOLDER_ENV, raising=False)
    made = {"kernel_time": {"gemm": 900, "add": 100}, "kernel_launches": {"gemm": 2, "add": 1},
            "syncs": {"aten::is_nonzero": 1}}
    monkeypatch.setattr(gpu_measure, "measure", lambda names, *a, **k: {
        "workloads": {n: {"kernel_time": [1e-6, 1.2e-6, 1.1e-6], "kernels": 3, "syncs": 1,
                          "profile": made} for n in names},
        "failed": {}, "seconds": {}, "phases": {}})
    got = suite.measure_gpu(["rnns/cudnn/forward"], TABLES)
    assert "profile" not in got["workloads"]["rnns/cudnn/forward"]
    where = profiles.folder(tmp_path)
    for kind in (profiles.KERNEL_TIME, profiles.KERNEL_LAUNCHES, profiles.SYNCS):
        assert profiles.read(where, sha, "env-1", kind) == {"rnns/cudnn/forward": made[kind]}
    assert profiles.read(where, sha, "env-1") is None  # no instruction profile: none counted


def test_compare_measures_each_environment_on_cuda_through_its_worker(monkeypatch):
    """compare --python --gpu runs torchpulse.gpu.worker in each environment: on the CPU a
    dry run of that path ($TORCHPULSE_GPU_SUITE=cpu), which gives every GPU metric of each
    workload a value (none on the CPU: no kernels) and the first run what the calls are made
    of; a workload its sizes cannot run is that workload's failure only."""
    import sys

    from torchpulse.culprit import environments as envs

    monkeypatch.setenv(GPU_SUITE_ENV, "cpu")
    tables = {**TABLES, "autograd": {}}  # no autograd sizes: that pair cannot run
    import os

    # a relative interpreter, as a user types it: the worker runs from a folder of its own
    python = os.path.relpath(sys.executable)
    with envs.EnvironmentRuns({"A": python}, [], TABLES, instructions=False,
                              gpu=["rnns/cudnn/forward", "autograd/resnet18/vjp"],
                              gpu_tables=tables, gpu_preset="smoke") as runs:
        first = runs("A")
        again = runs("A", [envs.key("rnns/cudnn/forward", envs.KERNEL_TIME)])
    side = runs.sides["A"]
    for metric in envs.GPU_METRICS:
        assert envs.key("rnns/cudnn/forward", metric) in first.values
    assert first.values[envs.key("rnns/cudnn/forward", envs.KERNELS)] == 0.0  # no CUDA
    assert len(first.samples[envs.key("rnns/cudnn/forward", envs.KERNEL_TIME)]) == \
        gpu_measure.PROFILED_CALLS
    assert set(side.gpu_profiles["rnns/cudnn/forward"]) == {"kernel_time", "kernel_launches",
                                                            "syncs"}
    assert side.gpu_failed == {"autograd/resnet18/vjp": "no sizes at the smoke preset"}
    # a later round measures again only the kernel time and GPU memory asked for
    assert set(again.values) == {envs.key("rnns/cudnn/forward", envs.KERNEL_TIME),
                                 envs.key("rnns/cudnn/forward", envs.GPU_MEMORY)}
