"""Callgrind's client requests, from inside the counted process.

Collection is toggled and dumped through torch's own requests (``torch._C._valgrind_toggle``
and ``_valgrind_toggle_and_dump_stats``, what torch.utils.benchmark's callgrind uses); a
window of several calls is collected with collection off between them and dumped once.
Instrumentation is switched on once, after ``import torch``: instrumented, that import costs
44 s under callgrind instead of 12 s (docs/instructions.md). torch has no request for it, so a
two-line C helper issuing CALLGRIND_START_INSTRUMENTATION is compiled with the system's C
compiler and valgrind's headers into torchpulse's cache the first time it is needed; where
either is missing the process is started instrumented instead (``helper()`` is None).
Switching instrumentation discards valgrind's translations, so it is switched once and only
collection is toggled around each region. The same helper discards the translations of the
parent's imports before it forks (``discard_translations``): each child's switch then walks a
table a third the size (0.17-0.23 s instead of 0.44-0.62 s a child, docs/instructions.md).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from pathlib import Path

from torchpulse.instructions import native

HELPER_SOURCE = """\
#include <valgrind/callgrind.h>
void torchpulse_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }
void torchpulse_discard_translations(void) { VALGRIND_DISCARD_TRANSLATIONS(0x1000, ~0xfffUL); }
"""


def helper() -> Path | None:
    """The compiled helper (built once into torchpulse's cache), or None where no C compiler
    or no valgrind headers are found."""
    return native.library(HELPER_SOURCE, "callgrind-helper")


def start_instrumentation(helper_path: str | None) -> None:
    """Switch instrumentation on (once, after the imports); nothing when started
    instrumented (``helper_path`` None)."""
    if helper_path:
        ctypes.CDLL(helper_path).torchpulse_start_instrumentation()


def discard_translations(helper_path: str | None) -> None:
    """Drop every translation valgrind has made so far (what runs next is translated again
    when it runs); nothing without the helper. The guest's instructions are the same
    either way: what this saves is time in each later switch, which deletes the
    translations one by one (callgrind's ``set_instrument_state``)."""
    if helper_path:
        ctypes.CDLL(helper_path).torchpulse_discard_translations()


class CountedRegion:
    """A stand-in for timing.RegionClock whose regions are counted: collection is on inside
    each ``region()``, and every ``calls_per_dump`` regions end in a dump (callgrind numbers
    a process's dumps from 1, in order; ``dumps`` is the number of the last one written,
    ``dumps`` at the start when this process wrote some before)."""

    def __init__(self, calls_per_dump: int = 1, dumps: int = 0) -> None:
        self.calls_per_dump = calls_per_dump
        self.regions = 0
        self.dumps = dumps

    @contextlib.contextmanager
    def region(self) -> Iterator[None]:
        import torch

        torch._C._valgrind_toggle()
        try:
            yield
        finally:
            self.regions += 1
            if self.regions % self.calls_per_dump == 0:
                torch._C._valgrind_toggle_and_dump_stats()
                self.dumps += 1
            else:
                torch._C._valgrind_toggle()
