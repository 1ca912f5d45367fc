"""The GPU suite's one-process measurement, run on the CPU (its dry run): sample counts,
shared builds, failures kept apart, and what the suite hands asv."""

import pickle
import pickletools

import pytest

from torchpulse import sizes, suite
from torchpulse.fastrnns import runners
from torchpulse.gpu import measure as gpu_measure
from torchpulse.gpu.measure import (
    BURSTS,
    MAX_SAMPLES,
    MIN_SAMPLES,
    PROFILED_CALLS,
    SLOW_CALL_S,
    SLOW_MIN_SAMPLES,
    burst_count,
    fastest,
    sample_count,
)
from torchpulse.workloads import build

SMOKE = {"fastrnns": sizes.FASTRNNS["smoke"],
         "autograd": {m: r["smoke"] for m, r in sizes.AUTOGRAD.items()}}


def test_sample_counts_follow_the_calls_time_within_bounds():
    assert sample_count(1e-4, MIN_SAMPLES, MAX_SAMPLES) == MAX_SAMPLES
    assert sample_count(0.0125, MIN_SAMPLES, MAX_SAMPLES) == 8  # a tenth of a second of calls
    assert sample_count(0.05, MIN_SAMPLES, MAX_SAMPLES) == MIN_SAMPLES
    # a call of seconds (vl_py's backward on a GPU) gets the fewest, in one burst
    assert sample_count(1.6, MIN_SAMPLES, MAX_SAMPLES) == SLOW_MIN_SAMPLES
    assert sample_count(0.0, MIN_SAMPLES, MAX_SAMPLES) == MAX_SAMPLES
    assert burst_count(0.01) == burst_count(SLOW_CALL_S) == BURSTS > 1
    assert burst_count(SLOW_CALL_S * 1.01) == 1


def test_the_fastest_burst_is_the_one_with_the_lowest_median():
    # the second burst's one fast sample does not make it the fastest: its median is high
    bursts = [[3.0, 3.1, 3.2], [1.0, 4.0, 4.1], [2.9, 3.0, 3.05]]
    assert fastest(bursts) == [2.9, 3.0, 3.05]
    assert fastest([[1.0, 2.0]]) == [1.0, 2.0]


def test_a_region_runs_its_measured_part_inside_the_clocks_region():
    entered = []

    class Clock:
        def region(self):
            import contextlib

            entered.append(1)
            return contextlib.nullcontext()

    for name in ("rnns/cudnn/forward", "rnns/cudnn/backward", "cnns/resnet18/forward",
                 "autograd/ppl_simple_reg/hvp"):
        region = build(name, SMOKE, "cpu", "smoke")
        region.run()
        region.run(Clock())
    assert len(entered) == 4
    with pytest.raises(ValueError, match="no backward"):
        build("rnns/cudnn_layernorm/backward", SMOKE, "cpu", "smoke")
    with pytest.raises(ValueError, match="does not run"):
        build("autograd/deepspeech/jvp", SMOKE, "cpu", "smoke")
    with pytest.raises(ValueError, match="not an instruction workload"):
        build("rnns/cudnn", SMOKE, "cpu", "smoke")


def test_one_process_measures_each_workload_and_builds_a_runner_once(monkeypatch):
    built = []
    original = runners.Workload.__init__

    def counting(self, runner, *args):
        built.append(runner.name)
        original(self, runner, *args)

    monkeypatch.setattr(runners.Workload, "__init__", counting)
    names = ["rnns/jit/forward", "rnns/jit/backward", "rnns/nope/forward",
             "cnns/resnet18/forward", "autograd/ppl_simple_reg/vjp", "rnns/cudnn/forward"]
    lines, rows = [], []
    out = gpu_measure.measure(names, SMOKE, "cpu", "smoke", log=lines.append,
                              each=lambda name, row: rows.append((name, row)))
    assert built == ["jit", "resnet18", "cudnn"]  # forward and backward share one model
    # each workload is handed over as the first pass measures it, a failure as a failure,
    # then once more with its final figures if later passes added bursts
    first = []
    for name, _ in rows:
        first += [] if name in first else [name]
    assert first == names
    finals = {name: row for name, row in rows if row["final"]}
    assert set(finals) == set(names)
    for name, row in finals.items():
        assert row["seconds"] == out["seconds"][name]
        assert (row.get("figures") == out["workloads"].get(name)
                and row.get("failed") == out["failed"].get(name))
    assert set(out["workloads"]) == set(names) - {"rnns/nope/forward"}
    assert "not in this version" in out["failed"]["rnns/nope/forward"]
    for name, row in out["workloads"].items():
        # these calls are all quick: a burst a pass, the fastest one handed to asv
        assert len(row["wall_bursts"]) == BURSTS, name
        assert all(MIN_SAMPLES <= len(b) <= MAX_SAMPLES for b in row["wall_bursts"]), name
        assert row["wall"] == fastest(row["wall_bursts"]), name
        assert all(0 < s < 5 for s in row["wall"]), name
        assert len(row["kernel_time"]) == PROFILED_CALLS
        # a CPU run launches nothing on a device and has no GPU memory to read
        assert (row["kernels"], row["syncs"], row["gpu_memory"]) == (0, 0, None)
        assert set(row["kernels_per_call"]) == {0}
    # a line a workload, and a line a later pass
    assert len(lines) == len(names) + BURSTS - 1 and any("failed" in line for line in lines)
    assert sum("wall-time pass" in line for line in lines) == BURSTS - 1
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


def _fake_region(calls: list, fail_after: int | None = None):
    """A region that sleeps a little a call, and fails after ``fail_after`` calls."""
    import contextlib
    import time

    from torchpulse.workloads import Region

    def run(clock=None):
        calls.append(1)
        if fail_after is not None and len(calls) > fail_after:
            raise RuntimeError("the device went away")
        with clock.region() if clock is not None else contextlib.nullcontext():
            time.sleep(0.001)

    return Region(run=run, settle=0)


def test_a_slow_call_gets_one_burst_and_is_handed_over_once(monkeypatch):
    calls: list = []
    monkeypatch.setattr(gpu_measure, "build", lambda *a, **k: _fake_region(calls))
    monkeypatch.setattr(gpu_measure, "SLOW_CALL_S", 0.0)  # every call counts as slow
    rows, lines = [], []
    out = gpu_measure.measure(["autograd/a/vjp"], SMOKE, "cpu", "smoke", log=lines.append,
                              each=lambda name, row: rows.append((name, row)))
    row = out["workloads"]["autograd/a/vjp"]
    assert row["wall_bursts"] == [row["wall"]]
    assert [(name, r["final"]) for name, r in rows] == [("autograd/a/vjp", True)]
    assert not any("wall-time pass" in line for line in lines)


def test_a_workload_that_fails_in_a_later_pass_is_a_failure(monkeypatch):
    calls: list = []
    # the first pass's calls: warm-up (2), a burst (MAX_SAMPLES: 1 ms calls), the profiled
    # calls and none for memory on the CPU; the second pass's untimed call then fails
    first_pass = 2 + MAX_SAMPLES + PROFILED_CALLS
    monkeypatch.setattr(gpu_measure, "build",
                        lambda *a, **k: _fake_region(calls, fail_after=first_pass))
    rows = []
    out = gpu_measure.measure(["autograd/a/vjp"], SMOKE, "cpu", "smoke",
                              each=lambda name, row: rows.append((name, row)))
    assert out["workloads"] == {}
    assert "the device went away" in out["failed"]["autograd/a/vjp"]
    # handed over measured after the first pass, then as failed
    assert ["figures" in r for _, r in rows] == [True, False]
    assert rows[-1][1]["final"] and "failed" in rows[-1][1]


@pytest.fixture
def smoke(monkeypatch):
    monkeypatch.setenv("TORCHPULSE_PRESET", "smoke")
    suite.device.cache_clear()
    yield
    suite.device.cache_clear()


TABLES = {"fastrnns": sizes.FASTRNNS, "autograd": sizes.AUTOGRAD, "revisions": sizes.REVISIONS}


def test_the_suite_measures_cuda_runs_only_unless_asked_for_a_dry_run(smoke, monkeypatch):
    monkeypatch.setattr(gpu_measure, "measure", lambda *a, **k: pytest.fail("measured"))
    got = suite.measure_gpu(["rnns/cudnn/forward"], TABLES)
    assert got["unavailable"] == "the GPU suite measures CUDA runs only"


def test_the_suites_dry_run_skips_what_the_sizes_or_revisions_do_not_allow(smoke,
                                                                           monkeypatch):
    monkeypatch.setenv(suite.GPU_SUITE_ENV, "cpu")
    seen = []
    monkeypatch.setattr(gpu_measure, "measure", lambda names, rows, device, preset, **k: (
        seen.append((names, rows, device, preset)) or
        {"workloads": {n: {} for n in names}, "failed": {}, "seconds": {}, "phases": {}}))
    tables = {**TABLES, "autograd": {m: r for m, r in sizes.AUTOGRAD.items() if m != "detr"},
              "revisions": {**sizes.REVISIONS, "ppl_robust_reg": 1}}
    got = suite.measure_gpu(["rnns/cudnn/forward", "autograd/detr/vjp",
                             "autograd/ppl_robust_reg/vjp", "autograd/resnet18/vjp"], tables)
    [(names, rows, device, preset)] = seen
    assert names == ["rnns/cudnn/forward", "autograd/resnet18/vjp"]
    assert (device, preset) == ("cpu", "smoke")
    assert rows["fastrnns"] == sizes.FASTRNNS["smoke"]
    assert rows["autograd"]["resnet18"] == sizes.AUTOGRAD["resnet18"]["smoke"]
    assert got["unavailable"] == ""
    assert got["skipped"] == {
        "autograd/detr/vjp": "no sizes for detr at the smoke preset",
        "autograd/ppl_robust_reg/vjp": "this commit's ppl_robust_reg is revision 2; the "
                                       "suite measures revision 1"}
    no_preset = suite.measure_gpu(["cnns/resnet18/forward"],
                                  {**TABLES, "fastrnns": {"cpu": sizes.FASTRNNS["cpu"]}})
    assert no_preset["skipped"] == {"cnns/resnet18/forward": "no sizes for the smoke preset"}
