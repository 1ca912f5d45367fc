"""Parsers for results other harnesses print, turned into records for asv stub benchmarks.

Each format module has ``parse(path, text, unit_scale, notes) -> list[Record]`` and raises
``InputError`` ("FILE:LINE: what is wrong") for anything malformed; nothing is written
before every file has parsed. Values are converted to the stub metric's unit (seconds for
time_* metrics); ``unit_scale`` is the factor to seconds where a format's unit can vary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.results.external import PARAM_VALUE


class InputError(TorchpulseError, ValueError):
    """A malformed foreign file; the message names the file (and line)."""


# Every stored value that is not zero lies within this range, in its unit (seconds, bytes,
# ratios): beyond it a value is a unit mistake or a parse accident, and asv's step detection
# at publish time grows without bound on an infinite or denormal number.
MIN_VALUE = 1e-15
MAX_VALUE = 1e15


@dataclass(frozen=True)
class Record:
    stub: str  # key of torchpulse.external.STUBS
    method: str
    params: tuple[str, ...]  # raw values, validated against PARAM_VALUE
    value: float  # in the metric's unit; the median of ``samples`` when there are samples
    samples: tuple[float, ...] = ()
    # where the file itself says the record belongs (PyTorch v3: head_sha, the runner's
    # type); None: the import's --commit / --machine
    commit: str | None = None
    machine: str | None = None


def where(path: Path, line: int | None = None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def number(value: object, place: str, what: str, allow_zero: bool = False,
           from_string: bool = False) -> float:
    """A finite, positive (or with ``allow_zero`` non-negative) number; JSON booleans and,
    unless ``from_string``, strings are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{place}: {what} is not a number: {value!r}")
    if isinstance(value, str):
        if not from_string:
            raise InputError(f"{place}: {what} is a string, not a number: {value!r}")
        try:
            value = float(value.strip())
        except ValueError:
            raise InputError(f"{place}: {what} is not a number: {value!r}") from None
    try:
        value = float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise InputError(f"{place}: {what} is out of range: {str(value)[:20]}...") from None
    if not math.isfinite(value):
        raise InputError(f"{place}: {what} is not finite: {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = "negative" if value < 0 else "zero"
        raise InputError(f"{place}: {what} is {bound}: {value!r}")
    in_range(value, place, what)
    return value


def in_range(value: float, place: str, what: str) -> float:
    """``value`` when it is zero or within MIN_VALUE..MAX_VALUE; InputError otherwise."""
    if value != 0 and not MIN_VALUE <= abs(value) <= MAX_VALUE:
        raise InputError(f"{place}: {what} {value!r} is out of range (non-zero values lie "
                         f"between {MIN_VALUE:g} and {MAX_VALUE:g} in their unit)")
    return value


def check_records(records: list[Record], place: str) -> None:
    """Every value a parser derived (reciprocals, unit conversions) is in range too."""
    for r in records:
        for v in (r.value, *r.samples):
            if not math.isfinite(v) or v < 0:
                raise InputError(f"{place}: {r.stub}.{r.method}{list(r.params)} would be "
                                 f"stored as {v!r}")
            in_range(v, place, f"{r.stub}.{r.method}{list(r.params)} (as stored)")


def parse_json(text: str, place: str, what: str = "JSON") -> object:
    """``text`` parsed; InputError naming ``place`` when it is not JSON or nests deeper than
    Python's parser can follow (100,000 nested arrays)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = f":{exc.lineno}" if "\n" in text else ""
        raise InputError(f"{place}{line}: not {what} ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{place}: not {what} (nested too deeply)") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(f"{place}: not {what} ({str(exc)[:80]})") from None


def param(value: object, place: str, what: str) -> str:
    if not isinstance(value, str) or not PARAM_VALUE.fullmatch(value):
        raise InputError(f"{place}: {what} {value!r} has characters outside "
                         f"{PARAM_VALUE.pattern} (or is empty or too long)")
    return value


# (path, text, unit_scale, notes): notes collects what was skipped on purpose
Parser = Callable[[Path, str, float | None, list[str]], list[Record]]


def formats() -> dict[str, Parser]:
    from torchpulse.results.importers import (
        autograd,
        dynamo,
        fastrnns,
        pytest_benchmark,
        pytorch_v3,
    )

    return {
        "pytorch-v3": pytorch_v3.parse,
        "oss": fastrnns.parse_oss,
        "pep": fastrnns.parse_pep,
        "pytest-benchmark": pytest_benchmark.parse,
        "dynamo-csv": dynamo.parse,
        "autograd-md": autograd.parse,
    }


# formats whose values come in a unit the file does not state (fastrnns: ms, or seconds
# labelled ms from upstream's CPU path); the others have fixed units
SCALABLE = {"oss", "pep"}
UNITS = {"ms": 1e-3, "s": 1.0}
FORMAT_NAMES = ("oss", "pep", "pytest-benchmark", "dynamo-csv", "autograd-md", "pytorch-v3")
