"""TorchScript fuser and executor switches, as upstream fastrnns' ``--fuser``/``--executor``.

The settings are process-wide torch switches. ``jit_settings`` applies them, proves that torch
can honour them by running a small fusible function on the target device (a CPU build without
LLVM accepts the NNC switch and fails only at the first fused call), and restores the previous
switches on exit. Differences from upstream: ``te`` on a CPU device asks for NNC fusion on the
CPU (upstream silently turned CPU fusion off, so "te" on CPU measured no fuser at all), and the
default is ``default``: torch's own settings, which is what the asv suites measure.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from torchpulse.errors import TorchpulseError
from torchpulse.fastrnns.choices import EXECUTORS, FUSERS

# a fresh compilation unit per probe: torch.jit.script caches functions (and their graph
# executors) process-wide, so a cached probe would not see changed switches
_PROBE_SOURCE = """
def probe(x, y):
    return (x * y + x).tanh() * 2.0
"""
# the profiling executor fuses after two profiling runs; one more to run the fused graph
_PROBE_CALLS = 4


class FuserError(TorchpulseError, RuntimeError):
    """The requested fuser/executor is unknown or cannot run with this torch build."""


@dataclass(frozen=True)
class JitSwitches:
    profiling_executor: bool
    optimize: bool
    fuse_on_cpu: bool
    fuse_on_gpu: bool
    texpr: bool

    @classmethod
    def current(cls) -> JitSwitches:
        C = torch._C
        profiling = C._jit_set_profiling_executor(True)  # returns the previous value
        C._jit_set_profiling_executor(profiling)
        return cls(
            profiling_executor=profiling,
            optimize=C._get_graph_executor_optimize(),
            fuse_on_cpu=C._jit_can_fuse_on_cpu(),
            fuse_on_gpu=C._jit_can_fuse_on_gpu(),
            texpr=C._jit_texpr_fuser_enabled(),
        )

    def apply(self) -> None:
        C = torch._C
        C._jit_set_profiling_executor(self.profiling_executor)
        C._get_graph_executor_optimize(self.optimize)
        C._jit_override_can_fuse_on_cpu(self.fuse_on_cpu)
        C._jit_override_can_fuse_on_gpu(self.fuse_on_gpu)
        C._jit_set_texpr_fuser_enabled(self.texpr)


def switches_for(fuser: str, executor: str, device: str, base: JitSwitches) -> JitSwitches:
    """The switches upstream's set_fuser sets, starting from ``base`` (torch's current)."""
    if fuser not in FUSERS:
        raise FuserError(f"unknown fuser {fuser!r}; choose one of: {', '.join(FUSERS)}")
    if executor not in EXECUTORS:
        raise FuserError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    s = base.__dict__.copy()
    on_cpu = torch.device(device).type == "cpu"
    if fuser == "te":
        s.update(profiling_executor=True, optimize=True, texpr=True,
                 fuse_on_cpu=on_cpu, fuse_on_gpu=not on_cpu)
    elif fuser == "old":
        s.update(profiling_executor=False, optimize=False, texpr=False, fuse_on_gpu=True)
    elif fuser == "none":
        s.update(profiling_executor=False, optimize=False, texpr=False,
                 fuse_on_cpu=False, fuse_on_gpu=False)
    # --executor overrides what --fuser set, as upstream
    if executor == "profiling":
        s.update(profiling_executor=True, optimize=True)
    elif executor == "simple":
        s.update(optimize=False)
    elif executor == "legacy":
        s.update(profiling_executor=False, optimize=True)
    return JitSwitches(**s)


def probe(device: str) -> None:
    """Run a fusible scripted function forward and backward a few times on ``device``."""
    fn = torch.jit.CompilationUnit(_PROBE_SOURCE).probe
    x = torch.randn(64, device=device, requires_grad=True)
    y = torch.randn(64, device=device)
    for _ in range(_PROBE_CALLS):
        fn(x, y).sum().backward()
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


@contextmanager
def jit_settings(fuser: str = "default", executor: str = "default",
                 device: str = "cpu") -> Iterator[JitSwitches]:
    """Apply a fuser/executor pair for the duration of the block, failing fast (FuserError)
    when this torch cannot run it on ``device``."""
    previous = JitSwitches.current()
    wanted = switches_for(fuser, executor, device, previous)
    wanted.apply()
    try:
        if (fuser, executor) != ("default", "default"):
            try:
                probe(device)
            except RuntimeError as exc:
                raise FuserError(
                    f"--fuser {fuser} --executor {executor} cannot run on {device} with this "
                    f"torch build ({_last_line(exc)}); try --fuser default or none"
                ) from None
        yield wanted
    finally:
        previous.apply()
