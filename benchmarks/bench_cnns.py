"""fastrnns' ResNet runners: forward alone, backward alone, and the peak memory of a step
(the process's, and on CUDA the GPU's)."""

# the canary opens the ResNets: a fleet shard of this module alone still reads its machine
from ._canary import MachineCanary  # noqa: F401
from ._common import _GPUMemorySuite, _sizes, _version, _WorkloadSuite
from ._tree import load

_choices = load("fastrnns/choices.py")


class ResNet(_WorkloadSuite):
    version = _version(_sizes.FASTRNNS)
    family = "cnns"
    params = [list(_choices.CNN_RUNNERS)]


class ResNetGPUMemory(_GPUMemorySuite):  # after ResNet in asv's order (bench_rnns says why)
    version, family, params = ResNet.version, ResNet.family, ResNet.params
