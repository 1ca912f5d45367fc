"""fastrnns' ResNet runners: forward alone, backward alone, and the peak memory of a step."""

from ._common import _WorkloadSuite


class ResNet(_WorkloadSuite):
    version = "1"
    family = "cnns"
    params = [["resnet18", "resnet18_jit", "resnet50", "resnet50_jit"]]
