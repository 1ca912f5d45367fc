"""functional_autograd_benchmark output: ``| model | task | mean | var |`` in seconds."""

from __future__ import annotations

from pathlib import Path

from torchpulse.results.importers import InputError, Record, number, param

HEADER = ["model", "task", "mean", "var"]


def _cells(line: str) -> list[str] | None:
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")) or len(line) < 2:
        return None
    return [c.strip() for c in line[1:-1].split("|")]


def parse(path: Path, text: str, unit_scale: float | None,
          notes: list[str] | None = None) -> list[Record]:
    lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise InputError(f"{path}: empty file")
    start = next((n for n, (_, line) in enumerate(lines) if _cells(line) == HEADER), None)
    if start is None:
        raise InputError(f"{path}: no '| model | task | mean | var |' header line")
    records: list[Record] = []
    seen: set[tuple[str, str]] = set()
    for lineno, line in lines[start + 1:]:
        place = f"{path}:{lineno}"
        cells = _cells(line)
        if cells is None:
            raise InputError(f"{place}: not a table row: {line.strip()[:60]!r}")
        if len(cells) != len(HEADER):
            raise InputError(f"{place}: {len(cells)} cells, expected {len(HEADER)}")
        if all(set(c) <= set("-: ") and c for c in cells):
            continue  # the separator row
        model = param(cells[0], place, "model")
        task = param(cells[1], place, "task")
        if (model, task) in seen:
            raise InputError(f"{place}: {model}/{task} appears twice")
        seen.add((model, task))
        mean = number(cells[2], place, "mean", from_string=True)
        if cells[3].lower() != "nan":  # upstream writes nan for one timed call (--num-iters 1)
            number(cells[3], place, "var", allow_zero=True, from_string=True)
        records.append(Record("autograd", "time_task", (model, task), mean))
    if not records:
        raise InputError(f"{path}: the table has no rows")
    return records
