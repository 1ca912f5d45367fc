"""What a name in a results tree may be, wherever the tree came from: asv's pages put
benchmark names, parameter names and values into the page as they are (names also form file
paths and URLs, so they cannot be escaped there), so a name that could act as markup is refused
at every door (merge) and again when publishing. Also what a stored value may not be: an
infinity, on which asv's step detection at publish time grows without bound."""

from __future__ import annotations

import math
import re

from torchpulse.errors import TorchpulseError

# asv's benchmark names are module.Class.method paths of Python identifiers
BENCHMARK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# parameter names and values (asv's repr strings such as 'cudnn' or (1, 2)): printable, no
# character that opens markup or ends an attribute
PARAM_TEXT = re.compile(r"[^<>&\"`\x00-\x1f\x7f-\x9f]{0,200}")


class UnsafeNameError(TorchpulseError, ValueError):
    """A name that would be markup on the site."""


def check_benchmark(name: object, entry: object, where: str) -> None:
    """UnsafeNameError unless a benchmark's name, parameter names and values (its
    benchmarks.json ``entry``) are safe to put into a page as they are."""
    if not isinstance(name, str) or not BENCHMARK_NAME.fullmatch(name) or len(name) > 300:
        raise UnsafeNameError(f"{where}: benchmark name {str(name)[:80]!r} is not a dotted "
                              "Python name")
    if not isinstance(entry, dict):
        raise UnsafeNameError(f"{where}: {name}: not an object")
    if entry.get("name", name) != name:  # asv's pages use the entry's own name
        check_benchmark(entry["name"], {}, where)
    names = entry.get("param_names") or []
    values = entry.get("params") or []
    if not isinstance(names, list) or not isinstance(values, list) or any(
            not isinstance(axis, list) for axis in values):
        raise UnsafeNameError(f"{where}: {name}: param_names and params must be lists")
    for text in [*names, *(v for axis in values for v in axis)]:
        check_param_text(text, f"{where}: {name}")
    if entry.get("unit") is not None:  # asv labels graph axes with it
        check_param_text(entry["unit"], f"{where}: {name}: unit")


def check_param_text(text: object, where: str) -> None:
    if not isinstance(text, str) or not PARAM_TEXT.fullmatch(text):
        raise UnsafeNameError(f"{where}: parameter {str(text)[:80]!r} holds characters that "
                              "are markup on a page (< > & \" ` or control characters) or is "
                              "over 200 characters")


def has_infinite(value: object) -> bool:
    """Whether parsed JSON holds an infinite number anywhere (NaN is asv's mark of a skipped
    combination and fine)."""
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, dict):
        return any(has_infinite(v) for v in value.values())
    if isinstance(value, list):
        return any(has_infinite(v) for v in value)
    return False
