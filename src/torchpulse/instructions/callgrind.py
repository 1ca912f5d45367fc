"""Reading callgrind's output files: the instructions of one dump, in all and per function.

A dump is callgrind's text format (valgrind's docs, "Callgrind Format Specification"): cost
lines ``<position> <Ir>`` belong to the function of the last ``fn=`` line; the cost line after
a ``calls=`` line is what that call cost (the callee's inclusive cost), not the caller's own.
Names are compressed: ``(12) name`` defines id 12, a later ``(12)`` refers to it.

Only own (self) costs are kept: they add up to the dump's total exactly, where inclusive
costs summed along recursive cycles count the same instructions more than once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.errors import TorchpulseError

JIT_CODE = "(code generated at run time)"
_NAMED = re.compile(r"\((\d+)\)(?: (.*))?$")


class CallgrindFormatError(TorchpulseError, ValueError):
    """A file that is not a callgrind dump, or one cut short."""


@dataclass
class Dump:
    """One callgrind dump: its total instructions and each function's own (self)
    instructions; a function is ``name [object]`` (symbols as callgrind demangles them, the
    object file's name only)."""

    total: int
    self_cost: dict[str, int] = field(default_factory=dict)
    trigger: str = ""


def _names() -> dict[str, dict[str, str]]:
    return {"ob": {}, "fn": {}, "fl": {}}


def _resolve(table: dict[str, str], text: str) -> str:
    m = _NAMED.match(text)
    if not m:
        return text
    key, name = m.groups()
    if name is not None:
        table[key] = name
        return name
    if key not in table:
        raise CallgrindFormatError(f"name id ({key}) used before it is defined")
    return table[key]


def _function(name: str, obj: str) -> str:
    if name.startswith("0x") and Path(obj).name in ("", "???"):
        # code generated at run time (oneDNN's kernels): its address differs between runs
        return JIT_CODE
    return f"{name} [{Path(obj).name}]" if obj else name


_TOTAL_LINES = ("summary:", "totals:")
TAIL = 64  # bytes read_total reads from a dump's end: its totals line and little before it


def _total(line: str) -> int:
    return int(line.split(":", 1)[1].split()[0])


def read_total(path: str | Path) -> int:
    """A dump's total alone, from its last line (callgrind writes ``totals:`` last): what
    the counted process reads of its own dump to size a window. It reads TAIL bytes and
    takes the number after the last ``totals:`` in them, splitting nothing before it: the
    order in which callgrind writes a dump's functions follows valgrind's own memory, which
    the pid's digits move, and the lines a parse of that order made laid the heap out
    otherwise for the next workload counted in the child (docs/instructions.md,
    "Determinism"). A string path: a Path would hold its file name, whose length varies,
    as a part."""
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL))
        tail = f.read()
    at = tail.rfind(b"\ntotals:")
    if at < 0:
        raise CallgrindFormatError(f"{path}: no totals line at its end")
    return int(tail[at + len(b"\ntotals:"):].split()[0])


def parse(text: str) -> Dump:
    """The costs of one dump (the first event, Ir, when several are collected)."""
    names = _names()
    obj = fn = ""
    in_call = False  # the next cost line is a call's (the callee's inclusive cost)
    self_cost: dict[str, int] = {}
    total: int | None = None
    trigger = ""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line[0].isdigit() or line[0] in "+-*":
            parts = line.split()
            ir = int(parts[1]) if len(parts) > 1 else 0
            if in_call:  # the callee's cost, counted where it ran
                in_call = False
            else:
                self_cost[fn] = self_cost.get(fn, 0) + ir
            continue
        key, _, value = line.partition("=")
        if key == "ob":
            obj = _resolve(names["ob"], value)
        elif key == "fn":
            fn = _function(_resolve(names["fn"], value), obj)
        elif key == "cob":
            _resolve(names["ob"], value)
        elif key == "cfn":
            _resolve(names["fn"], value)  # may define a name used later
        elif key == "calls":
            in_call = True
        elif key in ("fl", "fi", "fe", "cfi", "cfl"):
            _resolve(names["fl"], value)
        elif line.startswith(_TOTAL_LINES):
            total = _total(line)
        elif line.startswith("desc: Trigger:"):
            trigger = line.split(":", 2)[2].strip()
    if total is None:
        raise CallgrindFormatError("no summary or totals line: not a complete callgrind dump")
    return Dump(total, self_cost, trigger)


def read(path: Path) -> Dump:
    try:
        return parse(path.read_text(errors="replace"))
    except CallgrindFormatError as exc:
        raise CallgrindFormatError(f"{path}: {exc}") from None
