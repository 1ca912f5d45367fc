"""The fastrnns names: runners (family, upstream JSON group, description), the default
selections, groups, fusers and executors.

The one source of these lists: the runner registry (runners.py), the CLI, the asv suites and
the stubs for imported results read them from here. Standard library only: `torchpulse --help`
and the asv suites (which load this file by path from the working tree, since the torchpulse
installed for a measured commit may be older) must not pay for importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunnerInfo:
    family: str  # "rnns" or "cnns": the flag (--rnns/--cnns) and the asv suite that takes it
    group: str  # upstream's JSON group: "lstm", "vl_lstm" or "resnet"
    description: str
    # upstream times no backward for it (its creator sets backward=None): no backward series
    forward_only: bool = False


RUNNERS: dict[str, RunnerInfo] = {
    "cudnn": RunnerInfo("rnns", "lstm", "native nn.LSTM (cuDNN on CUDA); honours numLayers"),
    "cudnn_dropout": RunnerInfo(
        "rnns", "lstm", "native nn.LSTM with dropout 0.4 between layers (none with one layer)"),
    "cudnn_layernorm": RunnerInfo(
        "rnns", "lstm", "native nn.LSTM plus three layer norms per step (upstream's lower bound "
        "of a layer-norm cuDNN LSTM); forward only, as upstream", forward_only=True),
    "aten": RunnerInfo(
        "rnns", "lstm", "native nn.LSTM with cuDNN disabled (ATen kernels); on CPU the same "
        "kernel as cudnn"),
    "jit": RunnerInfo("rnns", "lstm", "TorchScript LSTM, one cell call per step; one layer"),
    "py": RunnerInfo("rnns", "lstm", "the jit runner's code run eagerly in Python; one layer"),
    "jit_premul": RunnerInfo(
        "rnns", "lstm", "TorchScript LSTM with the input projection of all steps in one "
        "matmul; one layer"),
    "jit_premul_bias": RunnerInfo(
        "rnns", "lstm", "jit_premul with the input bias added once for all steps; one layer"),
    "jit_simple": RunnerInfo(
        "rnns", "lstm", "TorchScript LSTM with flat arguments returning the final state only; "
        "one layer"),
    "jit_multilayer": RunnerInfo("rnns", "lstm",
                                 "TorchScript stacked LSTM; honours numLayers"),
    "jit_layernorm": RunnerInfo("rnns", "lstm",
                                "TorchScript layer-norm LSTM (nn.LayerNorm); one layer"),
    "jit_layernorm_decom": RunnerInfo(
        "rnns", "lstm", "TorchScript layer-norm LSTM with layer norm decomposed into "
        "elementary ops"),
    "jit_dropout": RunnerInfo(
        "rnns", "lstm", "TorchScript stacked LSTM with dropout 0.4 between layers; honours "
        "numLayers"),
    "vl_cudnn": RunnerInfo(
        "rnns", "vl_lstm", "native nn.LSTM over a packed batch of variable-length sequences"),
    "vl_jit": RunnerInfo(
        "rnns", "vl_lstm", "TorchScript LSTM over each variable-length sequence in turn"),
    "vl_py": RunnerInfo("rnns", "vl_lstm", "the vl_jit runner's code run eagerly in Python"),
    "resnet18": RunnerInfo("cnns", "resnet", "ResNet-18, eager"),
    "resnet18_jit": RunnerInfo("cnns", "resnet", "ResNet-18 traced with torch.jit.trace"),
    "resnet50": RunnerInfo("cnns", "resnet", "ResNet-50, eager"),
    "resnet50_jit": RunnerInfo("cnns", "resnet", "ResNet-50 traced with torch.jit.trace"),
}
LSTM_RUNNERS = tuple(n for n, r in RUNNERS.items() if r.group == "lstm")
FORWARD_ONLY = tuple(n for n, r in RUNNERS.items() if r.forward_only)
VL_RUNNERS = tuple(n for n, r in RUNNERS.items() if r.group == "vl_lstm")
CNN_RUNNERS = tuple(n for n, r in RUNNERS.items() if r.family == "cnns")

# upstream's defaults: the layer-norm and dropout LSTMs run only when named
DEFAULT_RNNS = ("cudnn", "aten", "jit", "jit_premul", "jit_premul_bias", "jit_simple",
                "jit_multilayer", "py")
DEFAULT_CNNS = CNN_RUNNERS
GROUPS = ("rnns", "cnns")  # bench --group: which of the two lists run
# output order and stderr titles as upstream: variable-length first, then LSTMs, then ResNets
GROUP_TITLES = {"vl_lstm": "variable-length sequence LSTM", "lstm": "LSTM", "resnet": "ResNet"}

# --print-json pep: each line is this prefix and a JSON object
PEP_PREFIX = "Caffe2Observer "

FUSERS = ("default", "te", "old", "none")
EXECUTORS = ("default", "profiling", "simple", "legacy")
