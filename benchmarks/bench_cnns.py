"""fastrnns' ResNet runners: forward alone, backward alone, and the peak memory of a step."""

from ._common import _sizes, _WorkloadSuite
from ._tree import load

_choices = load("fastrnns/choices.py")


class ResNet(_WorkloadSuite):
    version = "2-" + _sizes.digest(_sizes.FASTRNNS)
    family = "cnns"
    params = [list(_choices.CNN_RUNNERS)]
