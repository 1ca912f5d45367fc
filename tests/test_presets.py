import pytest

from torchpulse.presets import PRESETS, UnknownPresetError, resolve_preset


def test_cuda_preset_is_the_upstream_default():
    p = PRESETS["cuda"]
    assert (p.seq_length, p.num_layers, p.input_size, p.hidden_size, p.mini_batch) == (
        100, 1, 512, 512, 64)
    assert (p.image_batch, p.image_size, p.warmup, p.nloops) == (32, 224, 10, 100)
    assert p.varlen_bounds == (30, 100)


def test_preset_chosen_by_device():
    assert resolve_preset(device="cpu").name == "cpu"
    assert resolve_preset(device="cuda").name == "cuda"
    assert resolve_preset(device="cuda:1").name == "cuda"


def test_environment_overrides_device(monkeypatch):
    monkeypatch.setenv("TORCHPULSE_PRESET", "smoke")
    assert resolve_preset(device="cuda").name == "smoke"
    # an explicit name wins over the environment
    assert resolve_preset("cpu", device="cuda").name == "cpu"


def test_unknown_preset_names_the_choices(monkeypatch):
    with pytest.raises(UnknownPresetError, match="cuda, cpu, smoke"):
        resolve_preset("huge")
    monkeypatch.setenv("TORCHPULSE_PRESET", "tiny")
    with pytest.raises(UnknownPresetError, match="'tiny'"):
        resolve_preset(device="cpu")


@pytest.mark.parametrize("name", list(PRESETS))
def test_varlen_bounds_are_a_nonempty_range(name):
    low, high = PRESETS[name].varlen_bounds
    assert 1 <= low < high


def test_cpu_presets_run_single_threaded_cuda_keeps_the_default():
    assert PRESETS["cpu"].num_threads == 1 and PRESETS["smoke"].num_threads == 1
    assert PRESETS["cuda"].num_threads is None


def test_cpu_preset_shrinks_the_varlen_range():
    low, high = PRESETS["cpu"].varlen_bounds
    assert (low, high) == (8, 25)


def test_the_instruction_sizes_build_narrow_resnets_and_the_other_presets_full_ones():
    from torchpulse import sizes
    from torchpulse.fastrnns.runners import RUNNERS, Workload
    from torchpulse.presets import PRESETS, Preset

    assert all(p.image_width == 64 for p in PRESETS.values())
    counting = Preset.from_sizes("instructions", sizes.INSTRUCTIONS["fastrnns"])
    assert counting.image_width == 16
    model = Workload(RUNNERS["resnet18"], counting, "cpu").model
    assert model.params[0].shape[0] == 16  # the stem's output channels
