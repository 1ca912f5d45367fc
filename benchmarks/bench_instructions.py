"""Instructions per call of the CPU workloads, counted under callgrind: the signal a busy
machine does not move. One valgrind process counts every selected workload of a commit
(asv's setup_cache); each track_instructions reads its workload's count. The regions are the
wall-time suites' (a forward pass, a backward pass, one autograd task) at the sizes of
sizes.INSTRUCTIONS. $TORCHPULSE_INSTRUCTIONS picks the workloads: ``default`` (74 of 80),
``all`` or ``core`` (docs/instructions.md: what each costs). CUDA runs and machines without
valgrind skip the family, each benchmark saying why. Each class holds the families whose
sizes its version digests: a new family is a new class, and the others keep their series."""

import os

from ._common import _OLDER_FAMILIES, _asked, _model_classes, _registry, _sizes, _suite
from ._common import _version as _suite_version
from ._tree import load

WORKLOADS = _registry.selected(load("fastrnns/choices.py"), load("autograd/choices.py"),
                               os.environ.get(_registry.SELECTION_ENV))


def _count(self):
    api = getattr(_suite, "API_VERSION", 0)
    if _suite is None or api < 10:
        return None  # an older package counts another way: the benchmarks skip in setup
    return _suite.count_instructions(_asked(WORKLOADS), _sizes.counting())


_count.timeout = 3600


# how the counts are taken (suite API 7-10): part of every class's version
_METHOD = "windows-fixed-malloc-stage-bytecode"


class Instructions:
    # counted per call over windows in a normalised process (suite API 7), the ResNets at
    # their counting width (API 8), under torchpulse's malloc (API 9), from byte-code the
    # stage compiled (API 10): a new version starts new series, so asv does not draw API
    # 10's counts after API 9's as a step
    version = f"{_suite_version(_sizes.INSTRUCTIONS)}-{_METHOD}"
    params = [_registry.of_families(WORKLOADS, _OLDER_FAMILIES)]
    param_names = ["workload"]
    setup_cache = _count

    def setup(self, counted, workload):
        if counted is None:
            raise NotImplementedError("this commit's torchpulse counts instructions another "
                                      "way (torchpulse.suite API 10 needed)")
        if counted["unavailable"]:
            raise NotImplementedError(counted["unavailable"])
        if workload not in counted["counts"] and workload not in counted["failed"]:
            raise NotImplementedError(f"{workload} is not in this commit's torchpulse")

    def track_instructions(self, counted, workload):
        if workload in counted["failed"]:
            raise RuntimeError(counted["failed"][workload])
        return counted["counts"][workload]

    track_instructions.unit = "instructions"


# each model family's counts (TransformerInstructions, ...): from the same process as the
# others' (one setup_cache), under a version of its own counting sizes
globals().update(_model_classes(
    Instructions, "{suite}Instructions",
    lambda tables: f"{_suite_version(tables[1])}-{_METHOD}", WORKLOADS))
