"""fastrnns LSTM runners: forward alone, backward alone, and the peak memory of a step (the
process's), on CPU runs; on CUDA runs bench_gpu measures them."""

from ._canary import MachineCanary  # noqa: F401  (runs between the LSTM classes)
from ._common import _sizes, _version, _WorkloadSuite
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
