import pytest
import torch

from torchpulse.fastrnns import choices
from torchpulse.fastrnns.choices import CNN_RUNNERS, LSTM_RUNNERS, VL_RUNNERS
from torchpulse.fastrnns.runners import (
    RUNNERS,
    UnknownRunnerError,
    build_workload,
    get_runners,
)
from torchpulse.presets import PRESETS
from torchpulse.timing import RegionClock

UPSTREAM_RUNNERS = {
    "cudnn", "cudnn_dropout", "cudnn_layernorm", "aten", "jit", "py", "jit_premul",
    "jit_premul_bias", "jit_simple", "jit_multilayer", "jit_layernorm", "jit_layernorm_decom",
    "jit_dropout", "vl_cudnn", "vl_jit", "vl_py", "resnet18", "resnet18_jit", "resnet50",
    "resnet50_jit",
}
SMOKE = PRESETS["smoke"]


def test_registry_has_exactly_the_upstream_runners():
    assert set(RUNNERS) == UPSTREAM_RUNNERS
    assert set(LSTM_RUNNERS) | set(VL_RUNNERS) | set(CNN_RUNNERS) == UPSTREAM_RUNNERS
    assert set(VL_RUNNERS) == {"vl_cudnn", "vl_jit", "vl_py"}
    assert {RUNNERS[n].group for n in CNN_RUNNERS} == {"resnet"}


def test_registry_follows_the_torch_free_name_list():
    """choices.RUNNERS is the one list: the registry has its names, in its order, with its
    family, group and description."""
    assert list(RUNNERS) == list(choices.RUNNERS)
    for name, runner in RUNNERS.items():
        info = choices.RUNNERS[name]
        assert (runner.family, runner.group, runner.description) == \
            (info.family, info.group, info.description)
    assert set(choices.DEFAULT_RNNS) <= set(LSTM_RUNNERS)


def test_aten_says_it_is_the_cudnn_kernel_on_cpu():
    assert "on CPU the same kernel" in RUNNERS["aten"].description


def test_unknown_runner_lists_the_valid_ones():
    with pytest.raises(UnknownRunnerError, match="'nope'.*valid runners: cudnn"):
        get_runners(["cudnn", "nope"])


@pytest.mark.parametrize("name", sorted(UPSTREAM_RUNNERS - {"cudnn_layernorm"}))
def test_every_runner_steps_and_fills_every_gradient(name):
    workload = build_workload(name, SMOKE, "cpu")
    forward, backward = RegionClock(), RegionClock()
    workload.step(forward, backward)
    assert forward() > 0 and backward() > 0
    for param in workload.model.params:
        # step() zeroes gradients after checking they exist
        assert param.grad is not None and not param.grad.any()
    # a forward pass alone is timed on its own clock
    alone = RegionClock()
    workload.forward(alone)
    assert alone() > 0


def test_inputs_are_identical_across_builds():
    """Fixed seeds: the same runner built twice sees the same weights and inputs."""
    a = build_workload("jit", SMOKE, "cpu").model
    b = build_workload("jit", SMOKE, "cpu").model
    assert torch.equal(a.inputs[0], b.inputs[0])
    assert all(torch.equal(p, q) for p, q in zip(a.params, b.params, strict=True))


def test_multilayer_runners_honour_num_layers():
    preset = SMOKE.replace(num_layers=3)
    for name, per_layer in [("jit_multilayer", 4), ("cudnn", 4), ("jit_dropout", 4)]:
        model = build_workload(name, preset, "cpu").model
        assert len(model.params) == 3 * per_layer, name


def test_single_layer_runners_say_so():
    for name in ["jit", "py", "jit_premul", "jit_premul_bias", "jit_simple"]:
        assert "one layer" in RUNNERS[name].description


def test_varlen_lengths_follow_the_preset():
    model = build_workload("vl_py", PRESETS["cpu"].replace(mini_batch=64), "cpu").model
    lengths = [s.shape[0] for s in model.inputs[0]]
    low, high = PRESETS["cpu"].varlen_bounds
    assert len(lengths) == 64
    assert min(lengths) >= low and max(lengths) < high


def test_resnet_input_follows_the_preset():
    model = build_workload("resnet18", SMOKE, "cpu").model
    assert tuple(model.inputs[0].shape) == (SMOKE.image_batch, 3, SMOKE.image_size,
                                             SMOKE.image_size)


def test_cudnn_layernorm_is_forward_only_as_upstream():
    """Upstream's creator sets backward=None: a step times its forward pass only, measure
    gives no backward, and nothing asks for a backward pass."""
    assert choices.FORWARD_ONLY == ("cudnn_layernorm",)
    workload = build_workload("cudnn_layernorm", SMOKE, "cpu")
    assert workload.runner.forward_only and workload.model.backward is None
    forward, backward = RegionClock(), RegionClock()
    workload.step(forward, backward)
    assert forward() > 0 and backward() == 0
    assert all(p.grad is None for p in workload.model.params)
    timed_forward, timed_backward = workload.measure(nloops=2, warmup=1)
    assert len(timed_forward.samples) == 2 and timed_backward is None
    with pytest.raises(ValueError, match="forward only"):
        workload.prepare_backward()


def test_compiled_runners_settle_later():
    assert RUNNERS["jit"].settle_iterations > RUNNERS["py"].settle_iterations
    assert all(RUNNERS[n].compiled for n in RUNNERS if "jit" in n)
    assert not any(RUNNERS[n].compiled for n in RUNNERS if "jit" not in n)


def test_forward_output_is_finite():
    model = build_workload("cudnn_layernorm", SMOKE, "cpu").model
    out, (hy, cy) = model.forward(*model.inputs)
    assert all(torch.isfinite(t).all() for t in (out, hy, cy))


def test_measure_times_forward_and_backward_per_iteration(monkeypatch):
    workload = build_workload("py", SMOKE, "cpu")
    steps = []
    real_step = workload.step
    monkeypatch.setattr(workload, "step", lambda *clocks: steps.append(real_step(*clocks)))
    forward, backward = workload.measure(nloops=3, warmup=2)
    assert len(steps) == 5  # 2 warm-up + 3 timed
    assert len(forward.samples) == len(backward.samples) == 3
    assert all(s > 0 for s in forward.samples + backward.samples)
    assert len(build_workload("cudnn", SMOKE, "cpu").measure()[0].samples) == SMOKE.nloops


def test_workload_applies_the_presets_thread_count():
    before = torch.get_num_threads()
    try:
        build_workload("py", SMOKE.replace(num_threads=1), "cpu")
        assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        build_workload("py", SMOKE.replace(num_threads=None), "cpu")
        assert torch.get_num_threads() == 2  # None leaves torch's setting alone
    finally:
        torch.set_num_threads(before)


def test_single_passes_for_whole_call_harnesses_leave_fresh_gradients():
    workload = build_workload("py", PRESETS["smoke"], "cpu")
    workload.prepare_forward()
    workload.forward_pass()
    grads = []
    for _ in range(2):
        torch.manual_seed(0)  # backward_setup draws a random output gradient
        args, kwargs = workload.prepare_backward()
        assert kwargs == {}
        workload.backward_pass(*args)
        grads.append([p.grad.clone() for p in workload.model.params])
    # the second backward starts from zeroed gradients: the same values, not twice them
    for first, second in zip(*grads, strict=True):
        assert torch.equal(first, second) and first.abs().sum() > 0
    workload.close()
    assert not hasattr(workload, "model")
