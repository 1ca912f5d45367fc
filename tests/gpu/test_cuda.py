"""CUDA paths that only a GPU can exercise (marker ``gpu``: skipped where CUDA is absent,
run on the GPU machine with ``pytest -m gpu``; docs/gpu.md has the figures)."""

import contextlib

import pytest
import torch

from torchpulse.autograd import table as autograd_table
from torchpulse.cli import main
from torchpulse.compile import config
from torchpulse.compile.run import make_job, run_job
from torchpulse.compile.zoo import ZOO
from torchpulse.fastrnns.runners import RUNNERS, Workload
from torchpulse.presets import PRESETS
from torchpulse.timing import RegionClock

pytestmark = pytest.mark.gpu

SLEEP_CYCLES = 50_000_000  # ~25 ms at 2 GHz: far longer than any launch


def _events_around(fn) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0


def test_region_clock_counts_the_kernels_not_their_launch():
    """A region holding an asynchronous kernel reads as long as the kernel runs: the clock
    synchronises before it answers (a perf_counter region would see the launch alone)."""
    # load the kernel first: CUDA loads modules lazily, and the first launch's load falls
    # between the events (an H100 read 33.7 ms for a 25.3 ms sleep, and this test failed)
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    bare = _events_around(lambda: torch.cuda._sleep(SLEEP_CYCLES))
    clock = RegionClock("cuda")
    with clock.region():
        torch.cuda._sleep(SLEEP_CYCLES)
    # slower is fine (a busy GPU); far shorter would mean the kernel was not waited for
    assert clock() >= 0.8 * bare
    # and work outside regions never counts
    before = clock()
    torch.cuda._sleep(SLEEP_CYCLES)
    assert clock() == before


@pytest.mark.parametrize("name", ["cudnn", "aten", "jit", "resnet18_jit"])
def test_runner_steps_on_cuda_with_both_clocks(name):
    work = Workload(RUNNERS[name], PRESETS["smoke"], "cuda")
    forward, backward = RegionClock("cuda"), RegionClock("cuda")
    for _ in range(3):
        work.step(forward, backward)
    assert forward() > 0 and backward() > 0
    assert all(p.device.type == "cuda" for p in work.model.params)


def test_check_passes_on_cuda():
    assert main(["check", "--device", "cuda", "--preset", "smoke"]) == 0


def test_autograd_runs_on_gpu_zero(tmp_path):
    table = tmp_path / "autograd.md"
    assert main(["autograd", "--gpu", "0", "--preset", "smoke", "--num-iters", "2",
                 "--model-filter", "ppl_simple_reg", "--output", str(table)]) == 0
    rows = autograd_table.read(table)
    assert ("ppl_simple_reg", "vjp") in rows
    assert all(mean > 0 for mean, _ in rows.values())


def test_compiled_run_on_cuda_measures_the_cuda_allocator():
    spec = {m.name: m for m in ZOO}
    job = make_job(spec["mlp"], config.load(), "performance", False, "inductor", "cuda", "smoke",
                   repeat=3)
    result = run_job(job, spec)
    assert result.status == "pass", result.detail
    assert result.speedup > 0 and result.eager_peak_mem > 0 and result.dynamo_peak_mem > 0


def _profiled_calls(run, count):
    from torch.profiler import ProfilerActivity, profile

    from torchpulse.gpu import trace

    clock = trace.ProfiledClock("cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(count):
            run(clock)
    return trace.calls(trace.read(prof.profiler.kineto_results.events()))


def test_a_regions_kernels_and_synchronisations_are_counted_exactly():
    """Three in-place adds launch three kernels; ``.item()`` copies the value to the host
    and waits for it: one copy, one synchronisation. The work outside the region (before
    it, and between calls) counts for nothing, and every call says the same."""
    from torchpulse.gpu.trace import Call

    x = torch.ones(1 << 20, device="cuda")

    def run(clock):
        x.mul_(1.0)  # untimed: before the region
        with clock.region():
            for _ in range(3):
                x.add_(1.0)
            x[0].item()
        x.sub_(3.0)  # untimed: after it

    class Unmarked:
        region = staticmethod(contextlib.nullcontext)

    run(Unmarked())  # the kernels' first launches load them
    calls = _profiled_calls(run, 4)
    assert len(calls) == 4 and len(set((c.kernels, c.copies, c.syncs) for c in calls)) == 1
    first = calls[0]
    assert (first.kernels, first.copies, first.syncs, first.by_time) == (3, 1, 1, 0)
    assert all(c.device_ns > 0 for c in calls)
    assert first == Call(3, 1, first.device_ns, 1, 0)


def test_the_gpu_suite_measures_exact_counters_and_the_memory_a_region_adds():
    """torchpulse.gpu.measure on CUDA at the smoke sizes: every profiled call launches the
    same kernels; the kernels' time is positive and no longer than the region's; the GPU
    memory is positive; a second measurement in the same process counts the same."""
    from torchpulse import sizes
    from torchpulse.gpu.measure import measure

    names = ["rnns/cudnn/forward", "rnns/cudnn/backward", "rnns/py/forward",
             "cnns/resnet18/backward", "autograd/ppl_simple_reg/vjp", "rnns/nope/forward"]
    from torchpulse.gpu.measure import sizes_at

    tables = sizes_at(sizes.by_preset(), "smoke")
    first = measure(names, tables, "cuda", "smoke")
    second = measure(names, tables, "cuda", "smoke")
    assert set(first["failed"]) == {"rnns/nope/forward"}
    for name in names[:-1]:
        row = first["workloads"][name]
        assert len(set(row["kernels_per_call"])) == 1, (name, row["kernels_per_call"])
        assert row["kernels"] > 0, (name, row)
        assert all(0 < k for k in row["kernel_time"])
        assert min(row["kernel_time"]) <= max(row["wall"]) * 1.05, name
        assert row["gpu_memory"] > 0
        again = second["workloads"][name]
        assert (again["kernels"], again["syncs"]) == (row["kernels"], row["syncs"]), name
    # the py LSTM launches a cell's kernels at every time step: more than cuDNN's LSTM
    assert first["workloads"]["rnns/py/forward"]["kernels"] > \
        first["workloads"]["rnns/cudnn/forward"]["kernels"]
    assert {"cuda context", "cublas and cudnn", "build", "warm-up", "wall-time samples",
            "profiled calls", "total"} <= set(first["phases"])
