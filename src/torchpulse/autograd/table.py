"""The upstream markdown table (``| model | task | mean | var |``, seconds) and the
before/after comparison of two of them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from torchpulse.autograd.run import Timing
from torchpulse.errors import TorchpulseError
from torchpulse.files import read_input

HEADER = ("model", "task", "mean", "var")
TABLE_BYTES = 16 * 2**20  # a table is a line a (model, task)


class TableError(TorchpulseError, ValueError):
    """A file that is not such a table."""


def _line(*cells: object) -> str:
    return f"| {' | '.join(str(c) for c in cells)} |\n"


def to_markdown(timings: Iterable[Timing]) -> str:
    out = _line(*HEADER) + _line(*["--"] * len(HEADER))
    for t in timings:
        out += _line(t.model, t.task, t.mean, t.var)
    return out


def read(path: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(model, task) -> (mean, var) from a table file (nan allowed: a warm-up-only run): a
    regular file or a pipe, bounded."""
    try:
        lines = [ln.strip() for ln in read_input(path, TABLE_BYTES).decode("utf-8").splitlines()
                 if ln.strip()]
    except OSError as exc:
        raise TableError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise TableError(f"{path}: not a text file (not UTF-8)") from None
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    if not rows or tuple(rows[0]) != HEADER:
        raise TableError(f"{path}: no '| model | task | mean | var |' header line")
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for number, cells in enumerate(rows[1:], 2):
        if all(set(c) <= set("-: ") for c in cells):
            continue
        if len(cells) != 4:
            raise TableError(f"{path}:{number}: {len(cells)} cells, expected 4")
        try:
            out[(cells[0], cells[1])] = (float(cells[2]), float(cells[3]))
        except ValueError:
            raise TableError(f"{path}:{number}: mean and var must be numbers") from None
    return out


def compare(before: dict[tuple[str, str], tuple[float, float]],
            after: dict[tuple[str, str], tuple[float, float]]) -> str:
    """Every pair of either table: before and after means (s) and the speedup before/after
    (>1: faster after). A pair in one table only is listed with "-" for what the other
    lacks, as upstream's compare.py lists it (None there)."""
    out = _line("model", "task", "before (s)", "after (s)", "speedup")
    out += _line(*["--"] * 5)
    for key in [*before, *(k for k in after if k not in before)]:
        if key not in after or key not in before:
            b = f"{before[key][0]:.6g}" if key in before else "-"
            a = f"{after[key][0]:.6g}" if key in after else "-"
            out += _line(*key, b, a, "-")
            continue
        b, a = before[key][0], after[key][0]
        speedup = b / a if a > 0 and not math.isnan(a) else math.nan
        out += _line(*key, f"{b:.6g}", f"{a:.6g}", f"{speedup:.3f}x")
    return out
