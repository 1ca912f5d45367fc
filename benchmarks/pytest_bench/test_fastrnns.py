"""pytest-benchmark suite of the fastrnns runners, as upstream's fastrnns/test_bench.py.

    pytest benchmarks/pytest_bench --benchmark-json out.json

Sizes come from $TORCHPULSE_PRESET (else the device's preset), the device from
$TORCHPULSE_DEVICE (else cuda when available). Each test times whole calls of one pass;
forward and backward are prepared outside the timed call, and every timed call ends with a
device synchronize. Import the JSON with ``torchpulse import pytest-benchmark``. This directory
has no __init__.py, so asv's benchmark discovery does not import it.
"""

import pytest

from torchpulse.fastrnns.runners import RUNNERS, build_workload
from torchpulse.presets import default_device, resolve_preset

DEVICE = default_device()
PRESET = resolve_preset(device=DEVICE)


def _built(name):
    built = build_workload(name, PRESET, DEVICE)
    built.warm_up(max(PRESET.warmup, built.runner.settle_iterations))
    return built


@pytest.fixture(scope="module", params=list(RUNNERS))
def workload(request):
    built = _built(request.param)
    yield built
    built.close()


# forward-only runners (cudnn_layernorm) have no backward to time, as upstream
@pytest.fixture(scope="module", params=[n for n, r in RUNNERS.items() if not r.forward_only])
def trained(request):
    built = _built(request.param)
    yield built
    built.close()


def _run(benchmark, workload, target, setup):
    benchmark.group = "fastrnns"
    benchmark.extra_info.update(preset=PRESET.name, device=DEVICE, runner=workload.runner.name)
    with workload.runner.context():
        benchmark.pedantic(target, setup=setup, rounds=PRESET.nloops, warmup_rounds=1)


def test_forward(benchmark, workload):
    _run(benchmark, workload, workload.forward_pass, workload.prepare_forward)


def test_backward(benchmark, trained):
    _run(benchmark, trained, trained.backward_pass, trained.prepare_backward)
