"""The one registry of workloads: their names, their sizes' tables and the selections each
meter takes."""

import pytest

from torchpulse.autograd import choices as autograd
from torchpulse.fastrnns import choices as fastrnns
from torchpulse.workloads import registry


def test_every_workload_of_the_cpu_suites_has_a_name():
    names = registry.workloads(fastrnns, autograd)
    assert len(names) == len(set(names))
    assert "rnns/cudnn_layernorm/forward" in names
    assert "rnns/cudnn_layernorm/backward" not in names  # forward only, as upstream
    assert {"cnns/resnet50_jit/backward", "autograd/deepspeech/vjp"} <= set(names)
    assert "autograd/deepspeech/jvp" not in names
    pairs = sum(len(tasks) for tasks in autograd.MODEL_TASKS.values())
    assert len([n for n in names if n.startswith("autograd/")]) == pairs
    assert {registry.split(n)[0] for n in names} == set(registry.FAMILIES)
    assert registry.of_families(names, ("transformers",)) == [
        "transformers/encoder/forward", "transformers/encoder/backward"]


def test_each_workload_finds_its_own_row_of_the_sizes():
    from torchpulse import sizes

    rows = sizes.counting()
    assert registry.row("rnns/py/forward", rows) is rows["fastrnns"]
    assert registry.row("autograd/detr/vjp", rows) is rows["autograd"]["detr"]
    assert registry.row("transformers/encoder/backward", rows) is \
        rows["transformers"]["encoder"]
    assert registry.row("transformers/encoder/forward", sizes.INSTRUCTIONS) is None
    assert registry.row("autograd/nope/vjp", rows) is None
    assert registry.row("rnns/py/forward", {"fastrnns": None}) is None


def test_the_default_is_every_workload_but_the_left_out_ones_heaviest_first():
    every = registry.workloads(fastrnns, autograd)
    default = registry.selected(fastrnns, autograd, None)
    assert default == registry.selected(fastrnns, autograd, "default")
    left_out = set(every) - set(default)
    assert left_out == set(registry.matching(every, ",".join(registry.LEFT_OUT)))
    assert len(every) == 80 and len(default) == 80 - 6
    # the double-backward tasks of ResNet-18 are counted: under the fixed-cost allocator their
    # windows no longer grow (experiments/diary/instructions.md)
    assert {"autograd/resnet18/jvp", "autograd/resnet18/vhp"} <= set(default)
    assert {"cnns/resnet18/backward", "autograd/resnet18/vjp", "rnns/jit/backward",
            "autograd/ppl_robust_reg/hessian_fwdrev"} <= set(default)
    # the heavy models start first, the rest in the family's order
    heavy = [w for w in default if w.startswith(("cnns/", "autograd/resnet18/"))]
    assert default[:len(heavy)] == heavy[:len(heavy)]
    assert default[0].startswith("cnns/") and default[-1].startswith("transformers/")
    rest = [w for w in default if not w.startswith(registry.HEAVY)]
    assert rest == [w for w in every if w in rest]
    assert sorted(registry.selected(fastrnns, autograd, "all")) == sorted(every)
    assert set(registry.selected(fastrnns, autograd, "core")) == set(registry.CORE)
    with pytest.raises(ValueError,
                       match="TORCHPULSE_INSTRUCTIONS must be one of default, all, core"):
        registry.selected(fastrnns, autograd, "everything")
    # patterns narrow the count to what a compare or bisect looks at
    assert registry.selected(fastrnns, autograd, "autograd/ppl_robust_reg/vjp,rnns/cudnn/*") \
        == ["rnns/cudnn/forward", "rnns/cudnn/backward", "autograd/ppl_robust_reg/vjp"]
    with pytest.raises(ValueError, match="matches no workload"):
        registry.selected(fastrnns, autograd, "nothing/*/here")


def test_a_workload_is_counted_in_the_same_group_whatever_is_asked():
    """A child counts a group: at most GROUP workloads of one runner or model, in the
    family's order, so that a narrowed count (compare, bisect) counts each workload after
    the same others as the dashboard's; a left-out workload alone, whether ``all`` or a
    pattern asks for it."""
    every = registry.workloads(fastrnns, autograd)
    default = registry.selected(fastrnns, autograd, "default")
    full = registry.groups(every, default)
    assert sorted(n for g in full for n in g) == sorted(default)  # each once
    assert all(1 <= len(g) <= registry.GROUP for g in full)
    assert all(len({registry.group_key(n) for n in g}) == 1 for g in full)
    assert all(g == [n for n in every if n in g] for g in full)  # the family's order
    assert ["rnns/py/forward", "rnns/py/backward"] in full
    assert ["autograd/ppl_simple_reg/vjp", "autograd/ppl_simple_reg/jvp",
            "autograd/ppl_simple_reg/vhp", "autograd/ppl_simple_reg/hvp"] in full
    assert ["autograd/detr/vjp"] in full and ["rnns/cudnn_layernorm/forward"] in full
    group_of = {n: g for g in full for n in g}
    # asked alone, in any order, or among all 78: each counted among the same others
    for name in default:
        assert registry.groups(every, [name]) == [group_of[name]]
    assert sorted(registry.groups(every, default[::-1])) == sorted(full)
    everything = registry.groups(every, registry.selected(fastrnns, autograd, "all"))
    assert all(g in everything for g in full)
    for name in registry.matching(every, ",".join(registry.LEFT_OUT)):
        assert [name] in everything and registry.groups(every, [name]) == [[name]]
    # the heaviest first, as asked; a name this package lacks alone
    assert full[0] == ["cnns/resnet18/forward", "cnns/resnet18/backward"]
    assert registry.groups(every, ["rnns/nope/forward", "rnns/py/backward"]) == [
        ["rnns/nope/forward"], ["rnns/py/forward", "rnns/py/backward"]]


@pytest.mark.parametrize("bad", ["rnns/cudnn", "gpu/x/y", "rnns//forward", "a/b/c/d"])
def test_a_malformed_name_is_refused(bad):
    with pytest.raises(ValueError, match="not a workload"):
        registry.split(bad)


def test_a_selection_of_workloads_by_shell_patterns():
    every = registry.workloads(fastrnns, autograd)
    assert registry.matching(every, None) == registry.matching(every, " ") == every
    assert registry.matching(every, "rnns/cudnn/*, autograd/resnet18/vjp") == [
        "rnns/cudnn/forward", "rnns/cudnn/backward", "autograd/resnet18/vjp"]
    assert registry.matching(every, "cnns/*") == [n for n in every if n.startswith("cnns/")]
    assert registry.matching(every, "nothing/*") == []


def test_the_gpu_suite_measures_all_but_the_variable_length_loops_by_default():
    every = registry.workloads(fastrnns, autograd)
    default = registry.gpu_selected(every, None)
    left_out = {"rnns/vl_jit/forward", "rnns/vl_jit/backward", "rnns/vl_py/forward",
                "rnns/vl_py/backward"}
    assert set(every) - set(default) == left_out
    assert default == [w for w in every if w not in left_out]  # the measuring order kept
    assert "rnns/vl_cudnn/backward" in default
    assert registry.gpu_selected(every, "default") == registry.gpu_selected(every, " ") == default
    assert registry.gpu_selected(every, "all") == every
    assert registry.gpu_selected(every, "rnns/vl_py/*,cnns/resnet18/forward") == [
        "rnns/vl_py/forward", "rnns/vl_py/backward", "cnns/resnet18/forward"]
    # patterns that are all empty name no workload (they selected all 78)
    assert registry.gpu_selected(every, ",") == registry.gpu_selected(every, " , ,") == []
