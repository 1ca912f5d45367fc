"""One model of a compile-suite run, in the current process: build it, then run the accuracy
check or the performance measurement, and turn whatever happens into a ``ModelResult``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch

from torchpulse.compile import accuracy, performance
from torchpulse.compile.config import ZooConfig
from torchpulse.compile.report import ModelResult, error_line
from torchpulse.compile.steps import prepare
from torchpulse.compile.zoo import ModelSpec
from torchpulse.errors import TorchpulseError


class SelectionError(TorchpulseError, ValueError):
    """Filters that are not regular expressions, or that leave nothing to run."""


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to run one model (plain values: it crosses processes)."""

    model: str
    mode: str  # performance | accuracy
    training: bool
    backend: str
    device: str
    size: str
    batch_size: int
    repeat: int = 30
    tolerance: float = 1e-4
    cosine: bool = False
    non_deterministic: bool = False
    seed: int = 1337


def run_job(job: Job, models: Mapping[str, ModelSpec]) -> ModelResult:
    start = time.perf_counter()

    def result(status: str, **fields) -> ModelResult:
        return ModelResult(job.model, status, job.batch_size,
                           seconds=time.perf_counter() - start, **fields)

    try:
        prepared = prepare(models[job.model], job.size, job.batch_size, job.training, job.device,
                           job.seed)
    except Exception as exc:
        return result(accuracy.MODEL_FAIL_TO_LOAD, detail=error_line(exc))
    if job.mode == "accuracy":
        try:  # e.g. no C++ compiler for inductor: every model fails to run, with the reason
            performance.warm_up_compiler(job.backend, job.device)
        except Exception as exc:
            return result(accuracy.FAIL_TO_RUN, detail=error_line(exc))
        torch._dynamo.utils.counters.clear()
        checked = accuracy.check(prepared, performance.compiler(job.backend), job.tolerance,
                                 job.cosine, job.non_deterministic)
        return result(checked.status, detail=checked.detail,
                      dynamo_stats=performance.dynamo_counts())
    try:
        measured = performance.measure(prepared, job.backend, job.repeat)
    except performance.EagerError as exc:
        return result(accuracy.EAGER_FAIL_TO_RUN, detail=error_line(exc.__cause__ or exc))
    except Exception as exc:
        return result(accuracy.FAIL_TO_RUN, detail=error_line(exc))
    return result(accuracy.PASS, speedup=measured.speedup,
                  abs_latency_ms=measured.abs_latency_ms,
                  compilation_latency=measured.compilation_latency,
                  compression_ratio=measured.compression_ratio,
                  eager_peak_mem=measured.eager_peak_mem or 0.0,
                  dynamo_peak_mem=measured.dynamo_peak_mem or 0.0,
                  dynamo_stats=measured.dynamo_stats)


def select(models: Iterable[str], config: ZooConfig, device: str,
           filters: Iterable[str] = (), excludes: Iterable[str] = (),
           skip_slow: bool = False, no_skip: bool = False
           ) -> tuple[list[str], list[tuple[str, str]]]:
    """(models to run, [(model, why it is left out)]): names matching any ``filters`` regex
    (all when none) and no ``excludes`` one, minus the config's skip lists."""
    try:
        wanted = [re.compile(f) for f in filters]
        unwanted = [re.compile(x) for x in excludes]
    except re.error as exc:
        raise SelectionError(f"bad --filter/--exclude pattern {exc.pattern!r}: {exc}") from None
    chosen, skipped = [], []
    for name in models:
        if wanted and not any(p.search(name) for p in wanted):
            continue
        if any(p.search(name) for p in unwanted):
            continue
        reason = None if no_skip else config.skip_reason(name, device, skip_slow)
        if reason:
            skipped.append((name, reason))
        else:
            chosen.append(name)
    if not chosen:
        left = f" ({len(skipped)} left out by the config)" if skipped else ""
        raise SelectionError(f"no model to run: nothing matches the filters{left}")
    return chosen, skipped


def make_job(spec: ModelSpec, config: ZooConfig, mode: str, training: bool, backend: str,
             device: str, size: str, repeat: int = 30, batch_size: int | None = None) -> Job:
    tol, cosine = config.tolerance_for(spec.name, training)
    batch = batch_size or config.batch_size_for(spec.name, training) or \
        spec.default_batch_size(size)
    return Job(spec.name, mode, training, backend, device, size, batch, repeat, tol, cosine,
               spec.name in config.non_deterministic)
