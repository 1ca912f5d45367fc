"""What crosses the boundary between a count (count.py, in torchpulse's process) and the
counted process (worker.py, under valgrind): one schema, written and checked here.

Down: ``prewarm.json`` (PrewarmRequest) and a ChildRequest a child in ``in/``. Up: a
ChildResult a child in ``out/`` (its pid, a WorkloadResult a workload, what it was made of)
and ``parent.json`` (what the children inherited), and a Progress record per child as it
exits, on a pipe of its own (process.run): stderr carries only words for a person
(valgrind's, Python's, the warm-up's). The counted process (worker.py) writes its side
through child_result, child_failure and progress_record; count.py reads it through
read_child, read_inputs and read_progress.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

# The counted process imports this module to write its side: nothing here may import more
# than the standard library at module level (a module more there moves every count).
# A child's result is a few kilobytes a workload; anything past this is not one of ours
RESULT_BYTES = 64 << 20


class PrewarmRequest(TypedDict):
    tables: dict
    helper: str | None


class ChildRequest(TypedDict):
    names: list[str]
    windows: int
    window: int
    tables: dict
    helper: str | None


def child_request(names: list[str], spec: dict) -> ChildRequest:
    """The request of a child counting ``names`` with ``spec``'s settings (count.py's spec
    of one workload: windows, window, tables, helper)."""
    return ChildRequest(names=list(names), windows=spec["windows"], window=spec["window"],
                        tables=spec["tables"], helper=spec["helper"])


@dataclass(frozen=True)
class WorkloadResult:
    """One workload of a child: its counted windows (dumps ``first`` .. ``first + windows -
    1`` of the child, ``calls`` calls each) and the seconds of each phase, or its error."""

    name: str
    first: int = 0
    windows: int = 0
    calls: int = 0
    seconds: dict[str, float] | None = None
    error: str | None = None


@dataclass(frozen=True)
class ChildResult:
    pid: int = 0
    workloads: tuple[WorkloadResult, ...] = ()
    inputs: dict | None = None  # worker.inputs(): what it was made of; None: unknown
    error: str | None = None  # the child failed as a whole


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def child_result(pid: int, workloads: list[dict], inputs: dict) -> dict:
    """What a child that counted writes (read_child reads it): its pid, a record a workload
    (windows.count_group's: name, first, calls, windows, seconds; or name and error), what
    it was made of."""
    return {"pid": pid, "workloads": workloads, "inputs": inputs}


def child_failure(error: str) -> dict:
    """What a child that failed as a whole writes."""
    return {"error": error}


def read_child(path: Path) -> ChildResult:
    """The result a child wrote at ``path``; one with ``error`` set for a child that died
    before writing it, or wrote what is not this schema (never a KeyError mid-count)."""
    from torchpulse.files import read_regular  # not in the counted process, which writes

    try:
        data = json.loads(read_regular(path, RESULT_BYTES))
    except FileNotFoundError:
        return ChildResult(error="its counting process died before it wrote its result")
    except (OSError, ValueError) as exc:
        return ChildResult(error=f"its result could not be read ({exc})")
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return ChildResult(error=data["error"])
    if not (isinstance(data, dict) and _int(data.get("pid"))
            and isinstance(data.get("workloads"), list)):
        return ChildResult(error="its result is not a counted child's")
    workloads = []
    for one in data["workloads"]:
        parsed = _workload(one)
        if parsed is None:
            return ChildResult(error="its result is not a counted child's")
        workloads.append(parsed)
    inputs = data.get("inputs")
    return ChildResult(pid=data["pid"], workloads=tuple(workloads),
                       inputs=inputs if isinstance(inputs, dict) else None)


def _workload(one: object) -> WorkloadResult | None:
    if not isinstance(one, dict) or not isinstance(one.get("name"), str):
        return None
    if "error" in one:
        return WorkloadResult(one["name"], error=str(one["error"]))
    if not all(_int(one.get(k)) for k in ("first", "windows", "calls")):
        return None
    seconds = one.get("seconds")
    return WorkloadResult(one["name"], one["first"], one["windows"], one["calls"],
                          seconds if isinstance(seconds, dict) else None)


def read_inputs(path: Path) -> dict | None:
    """``parent.json``: what the children inherited; None when it is missing or not a
    mapping (the run's inputs are then unknown, and nothing of it is kept for reuse)."""
    from torchpulse.files import read_regular

    try:
        data = json.loads(read_regular(path, RESULT_BYTES))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class Progress:
    """A child's end, as the counted process says it: its index and exit status."""

    index: int
    exit_code: int = 0


def progress_record(index: int, exit_code: int) -> bytes:
    """The record the counted process writes on its progress pipe when child ``index``
    exits (worker.main): one line of JSON."""
    return json.dumps({"child": index, "exit": exit_code}).encode() + b"\n"


def read_progress(record: bytes, children: int) -> Progress | None:
    """``record`` as a child's end; None for anything else (not this schema, or not one of
    the ``children``)."""
    try:
        data = json.loads(record)
    except ValueError:
        return None
    if not (isinstance(data, dict) and _int(data.get("child")) and data["child"] < children
            and isinstance(data.get("exit"), int) and not isinstance(data["exit"], bool)):
        return None
    return Progress(data["child"], data["exit"])
