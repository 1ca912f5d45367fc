"""fastrnns' ResNet runners: forward alone, backward alone, and the peak memory of a step."""

from ._canary import MachineCanary  # noqa: F401  (opens the ResNets: a fleet shard of
from ._common import _sizes, _version, _WorkloadSuite  # this module alone still reads its machine)
from ._tree import load

_choices = load("fastrnns/choices.py")


class ResNet(_WorkloadSuite):
    version = _version(_sizes.FASTRNNS)
    family = "cnns"
    params = [list(_choices.CNN_RUNNERS)]
