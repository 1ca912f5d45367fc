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

``CompiledModelBenchmark`` adds the eager-vs-compiled metrics of the same ``build``.
"""

from __future__ import annotations

import abc
import itertools
import math
import types
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from torchpulse import suite
from torchpulse.allocation import keep_freed_memory
from torchpulse.fastrnns.runners import ModelDef, Runner, Workload
from torchpulse.presets import Preset, default_device, resolve_preset

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


class ModelBenchmark(abc.ABC):
    """asv benchmarks of the model ``build`` returns (see the module docstring). Abstract
    until ``build`` is defined: asv skips abstract classes, so importing this class into a
    benchmark module adds no benchmarks of its own."""

    # one process per benchmark, warmed up here: no asv warm-up, one call per sample, 8-20
    # samples within 0.3 s (the built-in suites' sampling)
    rounds = 1
    number = 1
    warmup_time = 0.0
    repeat = (8, 20, 0.3)

    @abc.abstractmethod
    def build(self, device: str, generator: torch.Generator, *params: Any) -> Built:
        """The model (a module or any callable) and its example inputs, made with
        ``generator`` (seeded, on the CPU) for ``device``; the harness moves them there."""

    # the built-in suites' clock: it advances only inside timed regions
    timer = staticmethod(suite.read_clock)

    def setup(self, *params: Any) -> None:
        key = (type(self), params)
        if key not in _built:  # asv runs setup before every sample: build once per process
            keep_freed_memory()  # as the built-in suites measure (torchpulse/allocation.py)
            name = type(self).__name__ + (f"{list(params)}" if params else "")
            _built[key] = workload(name, lambda dev, gen: self.build(dev, gen, *params))
        self.workload = _built[key]

    # each process warms up only what it measures, as the built-in suites (torchpulse.suite)
    def time_forward(self, *params: Any) -> None:
        suite.warm_up(self.workload, "forward")
        self.workload.forward(suite.clock())

    def time_backward(self, *params: Any) -> None:
        suite.warm_up(self.workload, "step")
        self.workload.step(backward_clock=suite.clock())

    def peakmem_step(self, *params: Any) -> None:
        self.workload.step()


# --------------------------------------------------------------------------- compiled metrics


def _measure_compiled(self: CompiledModelBenchmark) -> dict[str, dict[str, float]]:
    """Every parameter combination under every backend, in one process (asv's setup_cache,
    once per commit): the compile suite's measurement of ``build``'s model in inference, plain
    floats, nan where compiling or running failed."""
    from torchpulse.compile import performance
    from torchpulse.compile.steps import prepare
    from torchpulse.compile.zoo import ModelSpec

    keep_freed_memory()
    device = default_device()
    preset = resolve_preset(device=device)
    if preset.num_threads:
        torch.set_num_threads(preset.num_threads)
    found: dict[str, dict[str, float]] = {}
    for combo in itertools.product(*_param_lists(type(self))):
        def make(size: str, batch: int, gen: torch.Generator, combo=combo):
            model, inputs = self.build(device, gen, *combo)
            return model, tuple(inputs)

        spec = ModelSpec(type(self).__name__, make, {})
        for backend in self.backends:
            try:
                prepared = prepare(spec, preset.name, 1, False, device, seed=preset.seed)
                with performance.cold_cache():
                    perf = performance.measure(prepared, backend, self.compile_repeat,
                                               fresh_cache=False)
                value = {"compile_time": perf.compilation_latency,
                         "latency_ratio": perf.latency_ratio,
                         "step_time": perf.abs_latency_ms / 1e3}
            except Exception:  # a model that fails to compile is a missing point
                value = dict.fromkeys(_COMPILED_METRICS, math.nan)
            found[_key(combo, backend)] = value
    return found


_COMPILED_METRICS = {"compile_time": "seconds", "latency_ratio": "compiled/eager",
                     "step_time": "seconds"}


def _key(combo: tuple[Any, ...], backend: str) -> str:
    return repr((tuple(combo), backend))


def _param_lists(cls: type) -> list[list[Any]]:
    params = list(getattr(cls, "params", None) or [])
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]  # asv's shorthand for one parameter
    return [list(p) for p in params]


_compiled_modules: dict[str, str] = {}


class CompiledModelBenchmark(ModelBenchmark):
    """ModelBenchmark plus the compile suite's metrics of the same ``build``, per backend in
    ``backends``: ``track_compile_time`` (a cold compile, seconds), ``track_latency_ratio``
    (compiled / eager forward in inference, lower is better) and ``track_step_time`` (the
    compiled forward, seconds). They are measured once per commit for every parameter
    combination (asv's setup_cache), each compile from an empty inductor cache. One such
    class per benchmark module: asv keys setup caches by module and line."""

    backends: Sequence[str] = ("inductor",)
    compile_repeat = 20

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        other = _compiled_modules.setdefault(cls.__module__, cls.__qualname__)
        if other != cls.__qualname__:
            raise TypeError(f"{cls.__module__}: {other} and {cls.__qualname__} are both "
                            "CompiledModelBenchmark classes; put each in its own module")
        # a setup_cache of this module's own (asv shares a cache between functions of one
        # module and line), and track_* functions with a backend parameter of their own
        cache = types.FunctionType(_measure_compiled.__code__, _measure_compiled.__globals__,
                                   "setup_cache")
        cache.__module__ = cls.__module__
        cache.timeout = 1800
        cls.setup_cache = cache
        params, names = _param_lists(cls), list(getattr(cls, "param_names", None) or [])
        names = (names + [f"param{i + 1}" for i in range(len(names), len(params))])[
            :len(params)]
        for metric, unit in _COMPILED_METRICS.items():
            track = _tracker(metric)
            track.params = [*params, list(cls.backends)]
            track.param_names = [*names, "backend"]
            track.unit = unit
            setattr(cls, f"track_{metric}", track)

    def setup(self, compiled: dict, *args: Any) -> None:
        # asv passes setup_cache's value first; the track_* benchmarks add a backend last
        self.compiled = compiled
        if len(args) == len(_param_lists(type(self))):
            super().setup(*args)

    def time_forward(self, compiled: dict, *params: Any) -> None:
        super().time_forward(*params)

    def time_backward(self, compiled: dict, *params: Any) -> None:
        super().time_backward(*params)

    def peakmem_step(self, compiled: dict, *params: Any) -> None:
        super().peakmem_step(*params)


def _tracker(metric: str) -> Callable[..., float]:
    def track(self: CompiledModelBenchmark, compiled: dict, *args: Any) -> float:
        return compiled[_key(args[:-1], args[-1])][metric]

    track.__name__ = f"track_{metric}"
    return track
