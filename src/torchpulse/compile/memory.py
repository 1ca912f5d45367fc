"""Peak memory of one model step, the same way on CPU and CUDA.

Peak = the tensors the model keeps between steps (parameters, buffers, gradients, inputs)
plus the highest transient tensor memory the step allocates above what was live when it
began:

- CUDA: the caching allocator's ``max_memory_allocated`` after a reset, minus what was
  allocated before the step.
- CPU: the allocator's own accounting. The step runs once under ``torch.profiler`` with
  ``profile_memory``; every allocation and free of the CPU allocator (eager kernels and
  inductor's generated code alike) is an event with its size, and the peak is the highest
  running sum. Exact and repeatable, unlike the process's resident set, which glibc's reuse
  of freed pages makes vary by megabytes from process to process at these sizes.

Upstream's CPU path reports the process's whole resident set, which is dominated by the
Python and torch libraries and puts every compression ratio near 1.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from torchpulse.compile.steps import leaves, synchronize


def state_bytes(model: nn.Module, inputs: tuple[Any, ...]) -> int:
    """Bytes of the distinct storages behind parameters, gradients, buffers and inputs."""
    tensors = list(model.parameters()) + list(model.buffers()) + leaves(list(inputs))
    tensors += [p.grad for p in model.parameters() if p.grad is not None]
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Kineto prints "USDT: profiler_start/stop" lines straight to fd 2, at any
    KINETO_LOG_LEVEL: keep them out of the user's terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _cpu_peak(fn: Callable[[], Any]) -> int:
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        fn()
    cpu = torch._C._autograd.DeviceType.CPU
    events = sorted((e.start_ns(), e.nbytes()) for e in p.profiler.kineto_results.events()
                    if e.name() == "[memory]" and e.device_type() == cpu)
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def transient_peak(fn: Callable[[], Any], device: str) -> int:
    """Highest tensor memory ``fn()`` allocates above what was live when it started, in
    bytes."""
    if device.startswith("cuda"):
        synchronize(device)
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        fn()
        synchronize(device)
        return max(0, torch.cuda.max_memory_allocated() - before)
    return _cpu_peak(fn)
