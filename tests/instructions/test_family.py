"""The instruction family's names and the selections a run counts."""

import pytest

from torchpulse.autograd import choices as autograd
from torchpulse.fastrnns import choices as fastrnns
from torchpulse.instructions import family


def test_every_workload_of_the_cpu_suites_has_a_name():
    names = family.workloads(fastrnns, autograd)
    assert len(names) == len(set(names))
    assert "rnns/cudnn_layernorm/forward" in names
    assert "rnns/cudnn_layernorm/backward" not in names  # forward only, as upstream
    assert {"cnns/resnet50_jit/backward", "autograd/deepspeech/vjp"} <= set(names)
    assert "autograd/deepspeech/jvp" not in names
    pairs = sum(len(tasks) for tasks in autograd.MODEL_TASKS.values())
    assert len([n for n in names if n.startswith("autograd/")]) == pairs
    assert all(family.split(n)[0] in ("rnns", "cnns", "autograd") for n in names)


def test_the_default_is_every_workload_but_the_left_out_ones_heaviest_first():
    every = family.workloads(fastrnns, autograd)
    default = family.selected(fastrnns, autograd, None)
    assert default == family.selected(fastrnns, autograd, "default")
    left_out = set(every) - set(default)
    assert left_out == set(family.matching(every, ",".join(family.LEFT_OUT)))
    assert len(every) == 78 and len(default) == 78 - 6
    # the double-backward tasks of ResNet-18 are counted: under the fixed-cost allocator their
    # windows no longer grow (docs/instructions.md)
    assert {"autograd/resnet18/jvp", "autograd/resnet18/vhp"} <= set(default)
    assert {"cnns/resnet18/backward", "autograd/resnet18/vjp", "rnns/jit/backward",
            "autograd/ppl_robust_reg/hessian_fwdrev"} <= set(default)
    # the heavy models start first, the rest in the family's order
    heavy = [w for w in default if w.startswith(("cnns/", "autograd/resnet18/"))]
    assert default[:len(heavy)] == heavy[:len(heavy)]
    assert default[0].startswith("cnns/") and default[-1].startswith("autograd/")
    rest = [w for w in default if not w.startswith(family.HEAVY)]
    assert rest == [w for w in every if w in rest]
    assert sorted(family.selected(fastrnns, autograd, "all")) == sorted(every)
    assert set(family.selected(fastrnns, autograd, "core")) == set(family.CORE)
    with pytest.raises(ValueError,
                       match="TORCHPULSE_INSTRUCTIONS must be one of default, all, core"):
        family.selected(fastrnns, autograd, "everything")
    # patterns narrow the count to what a compare or bisect looks at
    assert family.selected(fastrnns, autograd, "autograd/ppl_robust_reg/vjp,rnns/cudnn/*") \
        == ["rnns/cudnn/forward", "rnns/cudnn/backward", "autograd/ppl_robust_reg/vjp"]
    with pytest.raises(ValueError, match="matches no workload"):
        family.selected(fastrnns, autograd, "nothing/*/here")


@pytest.mark.parametrize("bad", ["rnns/cudnn", "gpu/x/y", "rnns//forward", "a/b/c/d"])
def test_a_malformed_name_is_refused(bad):
    with pytest.raises(ValueError, match="not an instruction workload"):
        family.split(bad)


def test_a_selection_of_workloads_by_shell_patterns():
    every = family.workloads(fastrnns, autograd)
    assert family.matching(every, None) == family.matching(every, " ") == every
    assert family.matching(every, "rnns/cudnn/*, autograd/resnet18/vjp") == [
        "rnns/cudnn/forward", "rnns/cudnn/backward", "autograd/resnet18/vjp"]
    assert family.matching(every, "cnns/*") == [n for n in every if n.startswith("cnns/")]
    assert family.matching(every, "nothing/*") == []


def test_the_gpu_suite_measures_all_but_the_variable_length_loops_by_default():
    every = family.workloads(fastrnns, autograd)
    default = family.gpu_selected(every, None)
    left_out = {"rnns/vl_jit/forward", "rnns/vl_jit/backward", "rnns/vl_py/forward",
                "rnns/vl_py/backward"}
    assert set(every) - set(default) == left_out
    assert default == [w for w in every if w not in left_out]  # the measuring order kept
    assert "rnns/vl_cudnn/backward" in default
    assert family.gpu_selected(every, "default") == family.gpu_selected(every, " ") == default
    assert family.gpu_selected(every, "all") == every
    assert family.gpu_selected(every, "rnns/vl_py/*,cnns/resnet18/forward") == [
        "rnns/vl_py/forward", "rnns/vl_py/backward", "cnns/resnet18/forward"]
