"""Eager vs compiled performance of one prepared model, as the upstream harness measures it.

- Compile time: five compiled iterations from a cold cache (compilation included) minus five
  eager ones. "Cold" means an empty inductor/triton cache directory and cleared in-memory
  caches (``cold_cache``), in a process where the compiler has already compiled something
  (``warm_up_compiler``), so imports and worker start-up are not charged to the model.
- Speed: ``repeat`` rounds, each timing one eager then one compiled iteration (interleaved, so
  frequency scaling and load hit both alike), the device synchronised around each;
  speedup = median eager / median compiled; abs_latency = median compiled, in ms.
- Memory: one warm step of each under the profiler (``memory.py``), after the timings.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from torchpulse.compile import memory
from torchpulse.compile.choices import BACKENDS
from torchpulse.compile.steps import IterFn, Prepared, synchronize

WARMUP_ITERATIONS = 5  # upstream's warm-up: the compile happens in the first one
GB = 1e9


@contextlib.contextmanager
def cold_cache() -> Iterator[None]:
    """An empty inductor (and triton) cache directory and no in-memory compiled code,
    removed afterwards (torch's own ``fresh_cache``, which the upstream harness uses too)."""
    from torch._inductor.utils import fresh_cache

    with fresh_cache():
        yield


def compiler(backend: str) -> Callable[[IterFn], IterFn]:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}")
    return lambda fn: torch.compile(fn, backend=backend)


_warmed: set[tuple[str, str]] = set()


def warm_up_compiler(backend: str, device: str) -> None:
    """Compile and run a tiny function once per process and backend, outside any timing."""
    if (backend, device) in _warmed:
        return

    def tiny(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ w).sum(0)

    x = torch.randn(4, 4, device=device, requires_grad=True)
    w = torch.randn(4, 4, device=device)
    if backend == "inductor" and device == "cpu":
        _probe_cpu_isa()
    with cold_cache():
        compiled = compiler(backend)(tiny)
        compiled(x, w).sum().backward()
    torch._dynamo.reset()
    _warmed.add((backend, device))


def _probe_cpu_isa() -> None:
    """Inductor's probe of the CPU's vector instructions, outside the empty cache: it
    compiles a small C++ file per instruction set (about 6 s on 2 cores) into the cache it
    is run with, and remembers its answer for the process. Run in inductor's own cache
    directory, the next process (the next commit's zoo) loads those files instead. The
    cold compiles timed later use the remembered answer either way, so they are unchanged."""
    from torch._inductor import cpu_vec_isa

    probe = getattr(cpu_vec_isa, "valid_vec_isa_list", None)  # absent in other torch versions
    if probe is not None:
        probe()


class EagerError(RuntimeError):
    """The eager model failed: the compiled one was never tried."""


def dynamo_counts() -> dict[str, int]:
    """Dynamo's counters since they were last cleared, as the harness's CSV columns, and
    the frames dynamo was handed but ran eagerly (it failed to convert them: frames total -
    frames ok)."""
    counters = torch._dynamo.utils.counters
    return {"calls_captured": counters["stats"]["calls_captured"],
            "unique_graphs": counters["stats"]["unique_graphs"],
            "graph_breaks": sum(counters["graph_break"].values()),
            "unique_graph_breaks": len(counters["graph_break"]),
            "eager_frames": counters["frames"]["total"] - counters["frames"]["ok"]}


@dataclass(frozen=True)
class Performance:
    eager_times: tuple[float, ...]  # seconds, one per round
    compiled_times: tuple[float, ...]
    compilation_latency: float  # seconds
    eager_peak_mem: float | None  # GB
    dynamo_peak_mem: float | None
    dynamo_stats: dict[str, int] = field(default_factory=dict)

    @property
    def speedup(self) -> float:
        return float(np.median(self.eager_times) / np.median(self.compiled_times))

    @property
    def abs_latency_ms(self) -> float:
        return float(np.median(self.compiled_times) * 1e3)

    @property
    def latency_ratio(self) -> float:
        """compiled / eager median time (lower is better)."""
        return 1.0 / self.speedup

    @property
    def compression_ratio(self) -> float:
        """eager / compiled peak memory; 0 where it could not be measured (as upstream)."""
        if not self.eager_peak_mem or not self.dynamo_peak_mem:
            return 0.0
        return self.eager_peak_mem / self.dynamo_peak_mem


def _timed(prepared: Prepared, fn: IterFn, model) -> float:
    synchronize(prepared.device)
    start = time.perf_counter()
    prepared.run(fn, model)
    synchronize(prepared.device)
    return time.perf_counter() - start


def _warm_up(prepared: Prepared, fn: IterFn, model) -> float:
    synchronize(prepared.device)
    start = time.perf_counter()
    for _ in range(WARMUP_ITERATIONS):
        prepared.run(fn, model)
    synchronize(prepared.device)
    return time.perf_counter() - start


def _peak(prepared: Prepared, fn: IterFn, model) -> float:
    transient = memory.transient_peak(lambda: prepared.run(fn, model), prepared.device)
    return (memory.state_bytes(model, prepared.inputs) + transient) / GB


def measure(prepared: Prepared, backend: str, repeat: int = 30,
            fresh_cache: bool = True) -> Performance:
    """Compile ``prepared``'s iteration with ``backend`` and measure it. The compile starts
    from a cold cache; with ``fresh_cache=False`` the caller has just provided one (to reuse
    it afterwards). EagerError when eager fails; other exceptions mean the compiled run
    failed."""
    return measure_compiled(prepared, backend, repeat, fresh_cache)[0]


def measure_compiled(prepared: Prepared, backend: str, repeat: int = 30,
                     fresh_cache: bool = True) -> tuple[Performance, IterFn]:
    """``measure``, and the compiled iteration it timed (compiled for ``prepared.model``; a
    copy of the model runs it without a recompile), for an accuracy check of that very
    code."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    warm_up_compiler(backend, prepared.device)
    eager_model = prepared.copy()
    try:
        eager_warmup = _warm_up(prepared, prepared.iter_fn, eager_model)
    except Exception as exc:
        raise EagerError(str(exc)) from exc
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    with cold_cache() if fresh_cache else contextlib.nullcontext():
        compiled = compiler(backend)(prepared.iter_fn)
        compiled_warmup = _warm_up(prepared, compiled, prepared.model)
    stats = dynamo_counts()
    eager_times, compiled_times = [], []
    for _ in range(repeat):
        eager_times.append(_timed(prepared, prepared.iter_fn, eager_model))
        compiled_times.append(_timed(prepared, compiled, prepared.model))
    eager_peak = _peak(prepared, prepared.iter_fn, eager_model)
    compiled_peak = _peak(prepared, compiled, prepared.model)
    return Performance(tuple(eager_times), tuple(compiled_times),
                       max(0.0, compiled_warmup - eager_warmup), eager_peak, compiled_peak,
                       stats), compiled
