"""Your own model as a torchpulse workload, measured as the built-in runners are.

Subclass ``ModelBenchmark`` in an asv benchmark file and write one method, ``build``, that
returns the model and its example inputs::

    import torch
    from torchpulse.harness import ModelBenchmark

    import mypackage


    class MyNet(ModelBenchmark):
        params = [[8, 32]]
        param_names = ["batch"]

        def build(self, device, generator, batch):
            model = mypackage.Net()
            return model, (torch.randn(batch, 64, generator=generator),)

asv then finds ``time_forward`` (one forward pass, autograd on, as in training),
``time_backward`` (the backward pass alone: the forward runs outside the timed region) and
``peakmem_step`` (the peak memory of a process that built the model and ran a step). The
semantics are the fastrnns runners' (``torchpulse.fastrnns.runners.Workload``): the model is
built once per process from fixed seeds (torch's, and ``generator``, made on the CPU), garbage
is collected before each timed region, regions are timed with CUDA events and a synchronize
on the GPU and ``perf_counter`` on the CPU, and each process warms up only what it measures.
The device is cuda when available (``TORCHPULSE_DEVICE`` overrides it) and the thread count
the preset's (one on the cpu preset).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from torchpulse.fastrnns.runners import ModelDef, Runner, Workload
from torchpulse.presets import Preset, default_device, resolve_preset
from torchpulse.timing import RegionClock

Built = tuple[Callable[..., Any], Sequence[Any]]  # (the model, its example inputs)


def _loss_input(output: Any) -> Tensor:
    """The tensor whose backward pass is timed: the output itself, or the mean of every
    floating tensor in a tuple, list or dict of outputs."""
    if isinstance(output, Tensor) and output.is_floating_point():
        return output
    values = output.values() if isinstance(output, dict) else \
        [output] if isinstance(output, Tensor) else output
    floats = [t for t in values if isinstance(t, Tensor) and t.is_floating_point()]
    if not floats:
        raise TypeError("the model returned no floating-point tensor to take a backward of")
    return sum(t.float().mean() for t in floats)


def _backward_setup(output: Any) -> tuple[Tensor, Tensor]:
    out = _loss_input(output)
    return out, torch.randn_like(out)  # a fixed-shape upstream gradient, as the runners do


def _backward(output: Tensor, grad: Tensor) -> None:
    output.backward(grad)


def model_def(built: Built) -> ModelDef:
    """The runners' description of a user's (model, inputs)."""
    model, inputs = built
    params = [p for p in model.parameters() if p.requires_grad] \
        if isinstance(model, nn.Module) else []
    return ModelDef(inputs=tuple(inputs), params=params, forward=model,
                    backward_setup=_backward_setup, backward=_backward,
                    modules=(model,) if isinstance(model, nn.Module) else ())


def workload(name: str, build: Callable[[str, torch.Generator], Built],
             device: str | None = None, preset: Preset | None = None) -> Workload:
    """``build`` (device, generator) -> (model, inputs) as a Workload: seeded, on ``device``
    (default: the default device) at ``preset``'s threads and warm-up."""
    device = device or default_device()
    preset = preset or resolve_preset(device=device)

    def create(p: Preset, dev: str) -> ModelDef:
        torch.manual_seed(p.seed)
        generator = torch.Generator().manual_seed(p.seed)
        model, inputs = build(dev, generator)
        if isinstance(model, nn.Module):
            model = model.to(dev)
        inputs = tuple(v.to(dev) if isinstance(v, Tensor) else v for v in inputs)
        return model_def((model, inputs))

    return _UserWorkload(Runner(name, "custom", "custom", create, f"{name} (harness)"),
                         preset, device)


class _UserWorkload(Workload):
    # a user's model may hold parameters a step does not reach (a frozen or unused head):
    # zero what got a gradient instead of failing as the built-in runners' check does
    def _zero_grads(self, require: bool = True) -> None:
        super()._zero_grads(require=False)


_built: dict[tuple[type, tuple[Any, ...]], Workload] = {}
_warm: set[tuple[int, str]] = set()


class ModelBenchmark:
    """asv benchmarks of the model ``build`` returns (see the module docstring)."""

    # one process per benchmark, warmed up here: no asv warm-up, one call per sample, 8-20
    # samples within 0.3 s (the built-in suites' sampling)
    rounds = 1
    number = 1
    warmup_time = 0.0
    repeat = (8, 20, 0.3)

    def build(self, device: str, generator: torch.Generator, *params: Any) -> Built:
        raise NotImplementedError(f"{type(self).__name__} must define build()")

    @staticmethod
    def timer() -> float:
        return _clock()()

    def setup(self, *params: Any) -> None:
        key = (type(self), params)
        if key not in _built:  # asv runs setup before every sample: build once per process
            name = type(self).__name__ + (f"{list(params)}" if params else "")
            _built[key] = workload(name, lambda dev, gen: self.build(dev, gen, *params))
        self.workload = _built[key]

    def _warm_up(self, kind: str) -> None:
        if (id(self.workload), kind) in _warm:
            return
        run = self.workload.forward if kind == "forward" else self.workload.step
        for _ in range(min(self.workload.runner.settle_iterations,
                           self.workload.preset.warmup)):
            run()
        _warm.add((id(self.workload), kind))

    def time_forward(self, *params: Any) -> None:
        self._warm_up("forward")
        self.workload.forward(_clock())

    def time_backward(self, *params: Any) -> None:
        self._warm_up("step")
        self.workload.step(backward_clock=_clock())

    def peakmem_step(self, *params: Any) -> None:
        self.workload.step()


_clocks: dict[str, RegionClock] = {}


def _clock() -> RegionClock:
    """The clock asv reads: it advances only inside timed regions."""
    device = default_device()
    if device not in _clocks:
        _clocks[device] = RegionClock(device)
    return _clocks[device]
