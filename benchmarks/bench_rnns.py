"""fastrnns LSTM runners: forward alone, backward alone, and the peak memory of a step (the
process's, and on CUDA the GPU's)."""

from ._canary import MachineCanary  # noqa: F401  (runs between the LSTM classes)
from ._common import _GPUMemorySuite, _sizes, _version, _WorkloadSuite
from ._tree import load

_choices = load("fastrnns/choices.py")


class LSTM(_WorkloadSuite):
    version = _version(_sizes.FASTRNNS)
    family = "rnns"
    params = [list(_choices.LSTM_RUNNERS)]


class VariableLengthLSTM(_WorkloadSuite):
    version = _version(_sizes.FASTRNNS)
    family = "rnns"
    params = [list(_choices.VL_RUNNERS)]


# named after the class whose runners they measure, so that asv (sorted names) runs each
# right after it and the canary's places stay where they were
class LSTMGPUMemory(_GPUMemorySuite):
    version, family, params = LSTM.version, LSTM.family, LSTM.params


class VariableLengthLSTMGPUMemory(_GPUMemorySuite):
    version = VariableLengthLSTM.version
    family, params = VariableLengthLSTM.family, VariableLengthLSTM.params
