"""fastrnns' ResNet runners: forward alone, backward alone, and the peak memory of a step
(the process's), on CPU runs; on CUDA runs bench_gpu measures them."""

# the canary opens the ResNets: a fleet shard of this module alone still reads its machine
from ._canary import MachineCanary  # noqa: F401
from ._common import _sizes, _version, _WorkloadSuite
from ._tree import load

_choices = load("fastrnns/choices.py")


class ResNet(_WorkloadSuite):
    version = _version(_sizes.FASTRNNS)
    family = "cnns"
    params = [list(_choices.CNN_RUNNERS)]
