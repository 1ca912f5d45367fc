"""The transformer family: built from its sizes, measured region by region like the others."""

import pytest
import torch
from clocks import CountingClock

from torchpulse import sizes
from torchpulse.workloads.clock import Clock
from torchpulse.workloads.regions import build
from torchpulse.workloads.transformer import Encoder, SizesError

SMOKE = {"transformers": {m: r["smoke"] for m, r in sizes.TRANSFORMERS.items()}}


def test_each_region_measures_its_pass_only_and_a_step_leaves_no_gradient_behind():
    clock = CountingClock()
    assert isinstance(clock, Clock)
    built: dict = {}
    forward = build("transformers/encoder/forward", SMOKE, "cpu", "smoke", built=built)
    backward = build("transformers/encoder/backward", SMOKE, "cpu", "smoke", built=built)
    assert list(built) == ["transformers/encoder"]  # one model for both regions
    forward.run(clock)
    backward.run(clock)
    assert clock.entered == 2 and forward.settle == backward.settle == 2
    encoder = built["transformers/encoder"]
    assert all(p.grad is not None and not p.grad.any() for p in encoder.params)
    timed = CountingClock()
    encoder.step(forward_clock=timed, backward_clock=timed)
    assert timed.entered == 2


def test_the_same_seed_builds_the_same_model_and_a_causal_mask_hides_the_future():
    row = sizes.TRANSFORMERS["encoder"]["smoke"]
    a, b = Encoder("encoder", row, "cpu", 7), Encoder("encoder", row, "cpu", 7)
    assert torch.equal(a._forward(), b._forward())
    changed = a.x.clone()
    changed[:, -1] += 1.0  # the last token: no earlier position may see it
    before = a._forward()
    a.x = changed
    assert torch.equal(a._forward()[:, :-1], before[:, :-1])


@pytest.mark.parametrize("bad", [{"seq": 0}, {"heads": 3}, {"layers": 1.5}, {"extra": 1},
                                 {"batch": True}])
def test_sizes_it_cannot_build_are_refused_in_one_line(bad):
    row = {**sizes.TRANSFORMERS["encoder"]["smoke"], **bad}
    with pytest.raises(SizesError) as caught:
        Encoder("encoder", row, "cpu", 1)
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="not in this version"):
        Encoder("decoder", sizes.TRANSFORMERS["encoder"]["smoke"], "cpu", 1)
    with pytest.raises(ValueError, match="no sizes for transformers/encoder"):
        build("transformers/encoder/forward", {"transformers": {}}, "cpu", "smoke")
