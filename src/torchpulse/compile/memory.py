"""Peak memory of one model step, the same way on CPU and CUDA.

Peak = the tensors the model keeps between steps (parameters, buffers, gradients, inputs)
plus the highest transient memory the step needs above what was live when it began:

- CUDA: the caching allocator's ``max_memory_allocated`` after a reset, minus what was
  allocated before the step.
- CPU (Linux): the kernel's resident-set high-water mark. Writing 5 to
  /proc/self/clear_refs resets VmHWM, and ``malloc_trim(0)`` first hands freed heap pages back,
  so memory glibc would silently reuse is counted when the step touches it again.

Upstream's CPU path reports the process's whole resident set, which is dominated by the
Python and torch libraries and puts every compression ratio near 1.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from torchpulse.compile.steps import _leaves, synchronize


def state_bytes(model: nn.Module, inputs: tuple[Any, ...]) -> int:
    """Bytes of the distinct storages behind parameters, gradients, buffers and inputs."""
    tensors = list(model.parameters()) + list(model.buffers()) + _leaves(list(inputs))
    tensors += [p.grad for p in model.parameters() if p.grad is not None]
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


@functools.cache
def _libc():  # -> ctypes.CDLL | None
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def _proc_status() -> dict[str, int]:
    values: dict[str, int] = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                values[key] = int(rest.split()[0]) * 1024
    return values


def _reset_high_water_mark() -> bool:
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def transient_peak(fn: Callable[[], Any], device: str) -> int | None:
    """Highest memory ``fn()`` needs above what was live when it started, in bytes; None where
    the platform cannot tell (no /proc/self/clear_refs)."""
    if device.startswith("cuda"):
        synchronize(device)
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        fn()
        synchronize(device)
        return max(0, torch.cuda.max_memory_allocated() - before)
    if not _reset_high_water_mark():
        return None
    before = _proc_status()["VmRSS"]
    fn()
    return max(0, _proc_status()["VmHWM"] - before)
