"""fastrnns LSTM runners: forward alone, backward alone, and the peak memory of a step."""

from ._common import _WorkloadSuite


class LSTM(_WorkloadSuite):
    version = "1"
    family = "rnns"
    params = [[
        "cudnn", "cudnn_dropout", "cudnn_layernorm", "aten", "jit", "py", "jit_premul",
        "jit_premul_bias", "jit_simple", "jit_multilayer", "jit_layernorm",
        "jit_layernorm_decom", "jit_dropout",
    ]]


class VariableLengthLSTM(_WorkloadSuite):
    version = "1"
    family = "rnns"
    params = [["vl_cudnn", "vl_jit", "vl_py"]]
