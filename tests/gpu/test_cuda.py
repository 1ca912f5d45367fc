"""CUDA paths that only a GPU can exercise (marker ``gpu``: skipped where CUDA is absent,
run on the GPU machine with ``pytest -m gpu``; docs/gpu.md has the figures)."""

import dataclasses

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


@pytest.mark.parametrize("name", ["cudnn", "vl_cudnn", "resnet18"])
def test_gpu_memory_is_the_steps_peak_and_repeats(name):
    """suite.gpu_memory: at least what the model holds (its parameters and their gradients),
    the same at every call (the caching allocator's count, not a timing), and more for a
    larger batch."""
    from torchpulse import suite

    small = Workload(RUNNERS[name], PRESETS["smoke"], "cuda")
    first = suite.gpu_memory(small)
    held = 2 * sum(p.numel() * p.element_size() for p in small.model.params)
    assert first >= held > 0
    assert [suite.gpu_memory(small) for _ in range(2)] == [first, first]
    smoke = PRESETS["smoke"]
    larger = Workload(RUNNERS[name], dataclasses.replace(
        smoke, mini_batch=4 * smoke.mini_batch, image_batch=4 * smoke.image_batch), "cuda")
    assert suite.gpu_memory(larger) > first
