"""SIGTERM and SIGHUP read as Ctrl-C: a CI runner cancelling a job sends SIGTERM, a closed
terminal SIGHUP, and the long commands must stop the way an interrupt stops them (their
child processes stopped, their half-done writes rolled back, exit 130). Standard library
only."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

STOPPING = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def as_interrupts() -> Iterator[None]:
    """Inside the block SIGTERM and SIGHUP raise KeyboardInterrupt, as SIGINT does; the
    handlers before it come back after."""
    before = {s: signal.signal(s, _interrupt) for s in STOPPING}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
