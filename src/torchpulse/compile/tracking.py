"""What the asv suite (benchmarks/bench_compile.py) tracks per commit: every zoo model under
every backend, measured once in one process (asv's ``setup_cache``), then read by many
``track_*`` benchmarks.

Per model and backend, inside one cold cache (an empty inductor cache directory and cleared
in-memory caches, opened just for it): the performance measurement, whose compile is therefore
cold, then the accuracy check of the compiled code it timed (no second compile: that took
8 s of the zoo's minute).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from torchpulse.compile import accuracy, performance
from torchpulse.compile.config import ZooConfig
from torchpulse.compile.config import load as load_config
from torchpulse.compile.steps import prepare
from torchpulse.compile.zoo import ZOO

NAN = math.nan
_COUNTERS = ("graph_breaks", "unique_graphs", "calls_captured", "eager_frames")


@dataclass(frozen=True)
class Tracked:
    status: str  # an accuracy status; the measurement's failure when it had one
    step_seconds: float = NAN  # median compiled step
    latency_ratio: float = NAN  # compiled / eager, lower is better
    compile_seconds: float = NAN  # cold compile
    memory_ratio: float = NAN  # compiled / eager peak memory, lower is better
    # dynamo's counters over the compile and warm-up (performance.dynamo_counts): exact
    graph_breaks: float = NAN
    unique_graphs: float = NAN
    calls_captured: float = NAN
    eager_frames: float = NAN


def _one(name: str, backend: str, size: str, device: str, repeat: int,
         cfg: ZooConfig) -> Tracked:
    spec = next(m for m in ZOO if m.name == name)
    try:
        prepared = prepare(spec, size, cfg.batch_size_for(name, False)
                           or spec.default_batch_size(size), False, device)
    except Exception:
        return Tracked(accuracy.MODEL_FAIL_TO_LOAD)
    with performance.cold_cache():
        try:
            perf, compiled = performance.measure_compiled(prepared, backend, repeat,
                                                          fresh_cache=False)
        except performance.EagerError:
            return Tracked(accuracy.EAGER_FAIL_TO_RUN)
        except Exception:
            return Tracked(accuracy.FAIL_TO_RUN)
        tol, cosine = cfg.tolerance_for(name, False)
        checked = accuracy.check(prepared, performance.compiler(backend), tol, cosine,
                                 name in cfg.non_deterministic, compiled=compiled)
    ratio = perf.compression_ratio
    stats = {k: float(perf.dynamo_stats[k]) for k in _COUNTERS if k in perf.dynamo_stats}
    return Tracked(checked.status, perf.abs_latency_ms / 1e3, perf.latency_ratio,
                   perf.compilation_latency,
                   1.0 / ratio if ratio else NAN, **stats)


def measure_zoo(models: Sequence[str], backends: Sequence[str], size: str, device: str,
                repeat: int = 20, threads: int | None = None) -> dict:
    """{"models": {(model, backend): Tracked}, "failure_rate": {backend: fraction}} for the
    zoo models named (unknown names are left out: the suite may be newer than the package)."""
    if threads:
        torch.set_num_threads(threads)
    cfg = load_config()
    known = [m for m in models if any(s.name == m for s in ZOO)]
    results: dict[tuple[str, str], Tracked] = {}
    for backend in backends:
        performance.warm_up_compiler(backend, device)
        for name in known:
            results[(name, backend)] = _one(name, backend, size, device, repeat, cfg)
    failure_rate = {
        b: sum(not results[(m, b)].status.startswith("pass") for m in known) / len(known)
        for b in backends} if known else {}
    return {"models": results, "failure_rate": failure_rate}
