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


def test_the_core_is_the_default_and_a_subset_of_all():
    every = family.workloads(fastrnns, autograd)
    core = family.selected(fastrnns, autograd, None)
    assert core == family.selected(fastrnns, autograd, "core") == [
        n for n in every if n in family.CORE]
    assert set(core) == set(family.CORE)
    assert family.selected(fastrnns, autograd, "all") == every
    with pytest.raises(ValueError, match="TORCHPULSE_INSTRUCTIONS must be one of core, all"):
        family.selected(fastrnns, autograd, "everything")


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
