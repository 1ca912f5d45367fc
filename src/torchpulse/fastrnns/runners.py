"""The fastrnns runners: 16 LSTM variants and 4 ResNets, device-agnostic.

A runner's creator builds a ``ModelDef`` (the upstream contract: inputs, params, forward,
backward_setup, backward) from a ``Preset``. ``Workload`` wraps a built model definition with
the train step that every harness times: forward and backward each in their own region.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from torchpulse.errors import TorchpulseError
from torchpulse.fastrnns import choices
from torchpulse.models import lstm as L
from torchpulse.models.resnet import resnet_builder
from torchpulse.presets import Preset
from torchpulse.timing import (
    Measurement,
    RegionClock,
    collect_garbage,
    freeze_long_lived_objects,
    is_cuda,
    release_long_lived_objects,
)


@dataclass
class ModelDef:
    inputs: Sequence[Any]
    params: list[Tensor]
    forward: Callable[..., Any]
    # None for a forward-only runner (upstream's backward=None): nothing to time after forward
    backward_setup: Callable[[Any], tuple[Tensor, Tensor]] | None
    backward: Callable[..., None] | None
    # modules whose train/eval mode matters (dropout), switched off by the correctness check
    modules: tuple[nn.Module, ...] = ()


Creator = Callable[[Preset, str], ModelDef]


@dataclass(frozen=True)
class Runner:
    name: str
    family: str  # "rnns" or "cnns"
    group: str  # upstream JSON group: "lstm", "vl_lstm" or "resnet"
    creator: Creator
    description: str
    context: Callable[[], AbstractContextManager[Any]] = nullcontext
    # TorchScript (script or trace): the profiling executor needs ~4 iterations to settle
    compiled: bool = False
    # what the correctness check compares this runner against (None: not checked)
    reference: Creator | None = None
    reference_name: str = ""
    # maps the reference's backward tensor onto this runner's (e.g. last time step only)
    reference_view: Callable[[Tensor], Tensor] = field(default=lambda t: t)

    @property
    def forward_only(self) -> bool:
        """Upstream times no backward for it (choices.RUNNERS says so)."""
        return choices.RUNNERS[self.name].forward_only

    @property
    def settle_iterations(self) -> int:
        """Training steps after which step times are steady (measured at the cpu preset:
        TorchScript runners need 4, eager ones 1-2)."""
        return 4 if self.compiled else 2


class UnknownRunnerError(TorchpulseError, ValueError):
    pass


# --------------------------------------------------------------------------- helpers


@contextmanager
def _quiet_torchscript() -> Iterator[None]:
    """TorchScript works in 2.13 but warns DeprecationWarning on every script/trace call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        yield


def _script(fn: Any) -> Any:
    with _quiet_torchscript():
        return torch.jit.script(fn)


def simple_backward_setup(output: Tensor) -> tuple[Tensor, Tensor]:
    return output, torch.randn_like(output)


def lstm_backward_setup(outputs: tuple[Tensor, Any]) -> tuple[Tensor, Tensor]:
    return simple_backward_setup(outputs[0])


def varlen_backward_setup(outputs: tuple[list[Tensor], Any]) -> tuple[Tensor, Tensor]:
    return simple_backward_setup(nn.utils.rnn.pad_sequence(outputs[0]))


def simple_backward(output: Tensor, grad_output: Tensor) -> None:
    output.backward(grad_output)


def _flatten(weights: list[list[Tensor]]) -> list[Tensor]:
    return [w for layer in weights for w in layer]


def _native_lstm(
    p: Preset, device: str, num_layers: int, dropout: float = 0.0
) -> tuple[Tensor, tuple[Tensor, Tensor], nn.LSTM]:
    """Inputs and a native LSTM, drawn on the CPU from the preset's seed (same on every device)."""
    torch.manual_seed(p.seed)
    x = torch.randn(p.seq_length, p.mini_batch, p.input_size)
    hx = torch.randn(num_layers, p.mini_batch, p.hidden_size)
    cx = torch.randn(num_layers, p.mini_batch, p.hidden_size)
    with warnings.catch_warnings():
        # nn.LSTM warns that dropout needs num_layers > 1; upstream runs it that way anyway
        warnings.simplefilter("ignore", UserWarning)
        module = nn.LSTM(p.input_size, p.hidden_size, num_layers, dropout=dropout)
    return x.to(device), (hx.to(device), cx.to(device)), module.to(device)


# --------------------------------------------------------------------------- LSTM creators


def native_lstm_creator(p: Preset, device: str, dropout: float = 0.0) -> ModelDef:
    x, hidden, module = _native_lstm(p, device, p.num_layers, dropout)
    return ModelDef(
        inputs=[x, hidden], params=_flatten(module.all_weights), forward=module,
        backward_setup=lstm_backward_setup, backward=simple_backward, modules=(module,),
    )


def native_single_layer_creator(p: Preset, device: str) -> ModelDef:
    return native_lstm_creator(p.replace(num_layers=1), device)


def layernorm_native_lstm_creator(p: Preset, device: str) -> ModelDef:
    """Native LSTM plus three layer norms per step: upstream's lower bound of a LN-cuDNN LSTM."""
    x, hidden, module = _native_lstm(p, device, p.num_layers)
    ln_i = nn.LayerNorm(4 * p.hidden_size).to(device)
    ln_h = nn.LayerNorm(4 * p.hidden_size).to(device)
    ln_c = nn.LayerNorm(p.hidden_size).to(device)
    ln_input = torch.randn(p.mini_batch, 4 * p.hidden_size).to(device)

    def forward(input: Tensor, hidden: tuple[Tensor, Tensor]) -> Any:
        out, (hy, cy) = module(input, hidden)
        for _ in range(input.size(0)):
            ln_i(ln_input)
            ln_h(ln_input)
            cy = ln_c(cy)
        return out, (hy, cy)

    # forward only, as upstream: the layer norms take no gradient, so a backward would time
    # the plain LSTM's under this runner's name
    return ModelDef(
        inputs=[x, hidden], params=_flatten(module.all_weights), forward=forward,
        backward_setup=None, backward=None, modules=(module,),
    )


def functional_lstm_creator(
    p: Preset, device: str, layer_fn: Any, script: bool, flat_state: bool = False
) -> ModelDef:
    """One layer through one of the functional sequence functions of models.lstm;
    ``flat_state`` passes h and c as separate arguments (lstm_layer_simple)."""
    x, (hx, cx), module = _native_lstm(p, device, 1)
    weights = [w.detach().requires_grad_() for w in module.all_weights[0]]
    forward = _script(layer_fn) if script else layer_fn
    if flat_state:
        inputs: list[Any] = [x, hx[0], cx[0], *weights]
    else:
        inputs = [x, (hx, cx), *weights]
    return ModelDef(
        inputs=inputs, params=weights, forward=forward,
        backward_setup=lstm_backward_setup, backward=simple_backward,
    )


def multilayer_lstm_creator(p: Preset, device: str, script: bool = True) -> ModelDef:
    x, hidden, module = _native_lstm(p, device, p.num_layers)
    params = [w.detach().requires_grad_() for w in _flatten(module.all_weights)]
    forward = _script(L.lstm_multilayer) if script else L.lstm_multilayer
    return ModelDef(
        inputs=[x, hidden, params], params=params, forward=forward,
        backward_setup=lstm_backward_setup, backward=simple_backward,
    )


def _stacked_lstm_creator(
    p: Preset, device: str, make_cell: Callable[[list[Tensor]], nn.Module], num_layers: int,
    dropout: float, script: bool,
) -> ModelDef:
    x, (hx, cx), module = _native_lstm(p, device, num_layers)
    cells = [L.LSTMLayer(make_cell(list(w))) for w in module.all_weights]
    model = L.StackedLSTM(cells, dropout=dropout).to(device)
    forward = _script(model) if script else model
    states = [(hx[i], cx[i]) for i in range(num_layers)]
    return ModelDef(
        inputs=[x, states], params=list(forward.parameters()), forward=forward,
        backward_setup=lstm_backward_setup, backward=simple_backward, modules=(forward,),
    )


def layernorm_lstm_creator(
    p: Preset, device: str, decompose: bool = False, script: bool = True
) -> ModelDef:
    def make(w: list[Tensor]) -> nn.Module:
        return L.LayerNormLSTMCell(w[0], w[1], decompose_layernorm=decompose)

    return _stacked_lstm_creator(p, device, make, 1, 0.0, script)


def dropout_lstm_creator(p: Preset, device: str, script: bool = True) -> ModelDef:
    def make(w: list[Tensor]) -> nn.Module:
        return L.LSTMCell(*w)

    return _stacked_lstm_creator(p, device, make, p.num_layers, 0.4, script)


def _varlen_inputs(
    p: Preset, device: str
) -> tuple[list[Tensor], tuple[Tensor, Tensor], nn.LSTM]:
    torch.manual_seed(p.seed)
    low, high = p.varlen_bounds
    lengths = torch.randint(low, high, (p.mini_batch,))
    sequences = [torch.randn(int(n), p.input_size).to(device) for n in lengths]
    hx = torch.randn(1, p.mini_batch, p.hidden_size).to(device)
    cx = torch.randn(1, p.mini_batch, p.hidden_size).to(device)
    module = nn.LSTM(p.input_size, p.hidden_size, 1).to(device)
    return sequences, (hx, cx), module


def varlen_native_creator(p: Preset, device: str) -> ModelDef:
    sequences, hidden, module = _varlen_inputs(p, device)
    rnn_utils = nn.utils.rnn

    def forward(sequences: list[Tensor], hidden: tuple[Tensor, Tensor]) -> Any:
        packed = rnn_utils.pack_sequence(sequences, enforce_sorted=False)
        out, new_hidden = module(packed, hidden)
        padded, _ = rnn_utils.pad_packed_sequence(out)
        return padded, new_hidden

    return ModelDef(
        inputs=[sequences, hidden], params=_flatten(module.all_weights), forward=forward,
        backward_setup=lstm_backward_setup, backward=simple_backward, modules=(module,),
    )


def varlen_lstm_creator(p: Preset, device: str, script: bool) -> ModelDef:
    sequences, hidden, module = _varlen_inputs(p, device)
    weights = [w.detach().requires_grad_() for w in module.all_weights[0]]
    forward = _script(L.varlen_lstm) if script else L.varlen_lstm
    return ModelDef(
        inputs=[sequences, hidden, *weights], params=weights, forward=forward,
        backward_setup=varlen_backward_setup, backward=simple_backward,
    )


# --------------------------------------------------------------------------- CNN creators


def resnet_creator(p: Preset, device: str, arch: str, jit: bool) -> ModelDef:
    build, _source = resnet_builder(arch, p.image_width)
    torch.manual_seed(p.seed)
    model = build().to(device)
    x = torch.randn(p.image_batch, 3, p.image_size, p.image_size).to(device)
    if jit:
        with _quiet_torchscript():
            model = torch.jit.trace(model, x)
    return ModelDef(
        inputs=(x,), params=list(model.parameters()), forward=model,
        backward_setup=simple_backward_setup, backward=simple_backward,
    )


# --------------------------------------------------------------------------- registry


def _no_cudnn() -> AbstractContextManager[Any]:
    return torch.backends.cudnn.flags(enabled=False)


def _last_step(t: Tensor) -> Tensor:
    return t[-1]


def _runner(name: str, creator: Creator, **details: Any) -> Runner:
    """A runner whose family, group and description are choices.RUNNERS[name]'s."""
    info = choices.RUNNERS[name]
    return Runner(name, info.family, info.group, creator, info.description, **details)


_fn = functional_lstm_creator
_CUDNN = {"reference": native_lstm_creator, "reference_name": "cudnn"}
_ONE_LAYER = {"reference": native_single_layer_creator, "reference_name": "cudnn"}
_EAGER_LN = {"reference": partial(layernorm_lstm_creator, script=False),
             "reference_name": "eager layer-norm LSTM"}
_VL = {"reference": varlen_native_creator, "reference_name": "vl_cudnn"}
_RUNNERS = [
    _runner("cudnn", native_lstm_creator),
    _runner("cudnn_dropout", partial(native_lstm_creator, dropout=0.4), **_CUDNN),
    _runner("cudnn_layernorm", layernorm_native_lstm_creator, **_CUDNN),
    _runner("aten", native_lstm_creator, context=_no_cudnn, **_CUDNN),
    _runner("jit", partial(_fn, layer_fn=L.lstm_layer, script=True), **_ONE_LAYER,
            compiled=True),
    _runner("py", partial(_fn, layer_fn=L.lstm_layer, script=False), **_ONE_LAYER),
    _runner("jit_premul", partial(_fn, layer_fn=L.lstm_layer_premul, script=True),
            **_ONE_LAYER, compiled=True),
    _runner("jit_premul_bias", partial(_fn, layer_fn=L.lstm_layer_premul_bias, script=True),
            **_ONE_LAYER, compiled=True),
    _runner("jit_simple",
            partial(_fn, layer_fn=L.lstm_layer_simple, script=True, flat_state=True),
            **_ONE_LAYER, reference_view=_last_step, compiled=True),
    _runner("jit_multilayer", multilayer_lstm_creator, **_CUDNN, compiled=True),
    _runner("jit_layernorm", layernorm_lstm_creator, **_EAGER_LN, compiled=True),
    _runner("jit_layernorm_decom", partial(layernorm_lstm_creator, decompose=True),
            **_EAGER_LN, compiled=True),
    _runner("jit_dropout", dropout_lstm_creator, **_CUDNN, compiled=True),
    _runner("vl_cudnn", varlen_native_creator),
    _runner("vl_jit", partial(varlen_lstm_creator, script=True), **_VL, compiled=True),
    _runner("vl_py", partial(varlen_lstm_creator, script=False), **_VL),
    _runner("resnet18", partial(resnet_creator, arch="resnet18", jit=False)),
    _runner("resnet18_jit", partial(resnet_creator, arch="resnet18", jit=True), compiled=True),
    _runner("resnet50", partial(resnet_creator, arch="resnet50", jit=False)),
    _runner("resnet50_jit", partial(resnet_creator, arch="resnet50", jit=True), compiled=True),
]
RUNNERS: dict[str, Runner] = {r.name: r for r in _RUNNERS}


def get_runner(name: str) -> Runner:
    try:
        return RUNNERS[name]
    except KeyError:
        raise UnknownRunnerError(
            f"unknown runner {name!r}; valid runners: {', '.join(RUNNERS)}"
        ) from None


def get_runners(names: Sequence[str]) -> list[Runner]:
    unknown = [n for n in names if n not in RUNNERS]
    if unknown:
        raise UnknownRunnerError(
            f"unknown runner(s) {', '.join(map(repr, unknown))}; "
            f"valid runners: {', '.join(RUNNERS)}"
        )
    return [RUNNERS[n] for n in names]


# --------------------------------------------------------------------------- workload


def _region(clock: RegionClock | None) -> AbstractContextManager[Any]:
    return clock.region() if clock is not None else nullcontext()


def _label(name: str, enabled: bool) -> AbstractContextManager[Any]:
    return torch.autograd.profiler.record_function(name) if enabled else nullcontext()


class Workload:
    """A runner built at a preset on a device, ready to be stepped and timed."""

    def __init__(self, runner: Runner, preset: Preset, device: str) -> None:
        self.runner = runner
        self.preset = preset
        self.device = device
        # label the passes "## forward ##" / "## backward ##" for torch.profiler (as upstream);
        # off by default so timed regions hold nothing but the model
        self.annotate = False
        if preset.num_threads is not None:
            torch.set_num_threads(preset.num_threads)  # process-wide, before anything runs
        self.model = runner.creator(preset, device)
        freeze_long_lived_objects()

    def forward(self, clock: RegionClock | None = None) -> None:
        """One forward pass (autograd recording on, as in training), timed on ``clock``."""
        md = self.model
        with self.runner.context():
            collect_garbage()
            with _region(clock):
                output = md.forward(*md.inputs)
        del output

    def step(
        self, forward_clock: RegionClock | None = None, backward_clock: RegionClock | None = None
    ) -> None:
        """One training iteration as upstream's trainbench: forward, then backward, then
        zeroed gradients; each pass is timed on its own clock. A forward-only runner stops
        after the forward pass (``backward_clock`` is never read)."""
        md = self.model
        with self.runner.context():
            collect_garbage()
            with _label("## forward ##", self.annotate), _region(forward_clock):
                output = md.forward(*md.inputs)
            if md.backward is None:
                return
            backward_input = md.backward_setup(output)
            collect_garbage()
            with _label("## backward ##", self.annotate), _region(backward_clock):
                md.backward(*backward_input)
        self._zero_grads()

    def _zero_grads(self, require: bool = True) -> None:
        with torch.no_grad():
            for param in self.model.params:
                if param.grad is None:
                    if require:
                        raise RuntimeError(
                            f"runner {self.runner.name}: a parameter got no gradient")
                    continue
                param.grad.zero_()

    # One pass at a time, for harnesses that time whole calls (pytest-benchmark): each
    # timed call ends synchronized, each untimed preparation leaves the device idle.
    # Callers enter ``runner.context()`` around them.

    def synchronize(self) -> None:
        if is_cuda(self.device):
            torch.cuda.synchronize(self.device)

    def prepare_forward(self) -> None:
        collect_garbage()
        self.synchronize()

    def forward_pass(self) -> None:
        md = self.model
        md.forward(*md.inputs)
        self.synchronize()

    def prepare_backward(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Untimed forward and backward_setup; returns pytest-benchmark's (args, kwargs)
        for backward_pass. Gradients are zeroed first so they never accumulate."""
        md = self.model
        if md.backward is None:
            raise ValueError(f"runner {self.runner.name} is forward only: no backward pass")
        self._zero_grads(require=False)
        backward_input = md.backward_setup(md.forward(*md.inputs))
        collect_garbage()
        self.synchronize()
        return (backward_input,), {}

    def backward_pass(self, backward_input: tuple[Tensor, Tensor]) -> None:
        self.model.backward(*backward_input)
        self.synchronize()

    def warm_up(
        self, iterations: int | None = None, progress: Callable[[], None] | None = None
    ) -> None:
        for _ in range(self.preset.warmup if iterations is None else iterations):
            self.step()
            if progress is not None:
                progress()

    def measure(
        self, nloops: int | None = None, warmup: int | None = None,
        progress: Callable[[], None] | None = None,
    ) -> tuple[Measurement, Measurement | None]:
        """Upstream's trainbench: warm-up steps, then ``nloops`` steps with forward and
        backward each timed per iteration (seconds; synchronized per region on CUDA; no
        backward for a forward-only runner). ``progress`` is called after every step,
        warm-up included."""
        self.warm_up(warmup, progress)
        forward_clock, backward_clock = RegionClock(self.device), RegionClock(self.device)
        forward, backward = [], []
        for _ in range(self.preset.nloops if nloops is None else nloops):
            f0, b0 = forward_clock(), backward_clock()
            self.step(forward_clock, backward_clock)
            forward.append(forward_clock() - f0)
            backward.append(backward_clock() - b0)
            if progress is not None:
                progress()
        return Measurement.of(forward), (None if self.model.backward is None
                                         else Measurement.of(backward))

    def close(self) -> None:
        """Drop the model and return its memory; the process may build another workload."""
        del self.model
        release_long_lived_objects()


def build_workload(name: str, preset: Preset, device: str) -> Workload:
    return Workload(get_runner(name), preset, device)
