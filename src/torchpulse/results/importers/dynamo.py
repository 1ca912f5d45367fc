"""Dynamo benchmark harness CSVs: performance (speedup, latencies, memory) or accuracy, as
the harness writes them and as PyTorch's CI keeps them (``ci_expected_accuracy/*.csv``:
``name,accuracy,graph_breaks``, the device implied by the file: give ``--device``).

Stored lower-is-better: compiled/eager latency (1 / speedup), compiled/eager peak memory
(1 / compression_ratio), 1 for an accuracy status that is not a pass, and the number of graph
breaks where the file has that column.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from torchpulse.results.importers import InputError, Record, number, param

# columns each kind needs; "dev" may be missing when --device says which device it was
PERFORMANCE = ("name", "speedup", "abs_latency", "compilation_latency")
ACCURACY = ("name", "accuracy")
# every status the harness (benchmarks/dynamo/common.py) records; "pass*" is a pass
STATUSES = {"pass", "pass_due_to_skip", "fail_accuracy", "fail_to_run", "fail_to_compile",
            "eager_fail_to_run", "eager_two_runs_differ", "eager_variation",
            "eager_1st_run_fail", "eager_2nd_run_fail", "eager_1st_run_OOM",
            "eager_2nd_run_OOM", "OOM", "model_fail_to_load", "timeout", "infra_error"}


def parse(path: Path, text: str, unit_scale: float | None,
          notes: list[str] | None = None, device: str | None = None) -> list[Record]:
    """The file's records; ``device`` (``--device``) is the device of a file without a
    ``dev`` column, and must agree with one that has it."""
    if not text.strip():
        raise InputError(f"{path}: empty file")
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except csv.Error as exc:
        raise InputError(f"{path}:1: not CSV ({exc})") from None
    if all(c in header for c in PERFORMANCE):
        kind = "performance"
    elif all(c in header for c in ACCURACY):
        kind = "accuracy"
    else:  # name what the file's own kind lacks
        wanted = ACCURACY if "accuracy" in header else PERFORMANCE
        missing = [c for c in wanted if c not in header]
        what = "an accuracy" if "accuracy" in header else "a performance"
        raise InputError(f"{path}:1: missing column(s) {', '.join(missing)} for {what} CSV; "
                         "header: " + ",".join(header)[:200])
    if "dev" not in header and device is None:
        raise InputError(f"{path}:1: no dev column; give --device (cpu, cuda ...) for the "
                         "device the file is for")
    col = {name: header.index(name) for name in header}
    records: list[Record] = []
    seen: set[tuple[str, str]] = set()
    try:
        rows = list(enumerate(reader, 2))
    except csv.Error as exc:
        raise InputError(f"{path}: not CSV ({exc})") from None
    for lineno, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        place = f"{path}:{lineno}"
        if len(row) > len(header):
            raise InputError(f"{place}: {len(row)} fields, the header has {len(header)}")
        # the harness appends failure rows with fewer fields (dev,name,batch_size,0.0,0.0)
        cell = {name: row[i].strip() for name, i in col.items() if i < len(row)}
        short = [c for c in (ACCURACY if kind == "accuracy" else PERFORMANCE[:2])
                 if c not in cell]
        if short:
            raise InputError(f"{place}: {len(row)} fields, missing {', '.join(short)}")
        dev = param(cell["dev"], place, "dev") if "dev" in cell else device
        if device is not None and dev != device:
            raise InputError(f"{place}: dev is {dev!r}, --device says {device!r}")
        model = param(cell["name"], place, "name")
        if (dev, model) in seen:
            raise InputError(f"{place}: {dev}/{model} appears twice")
        seen.add((dev, model))
        key = (dev, model)
        if cell.get("graph_breaks"):
            records.append(Record("dynamo", "track_graph_breaks", key, number(
                cell["graph_breaks"], place, "graph_breaks", allow_zero=True,
                from_string=True)))
        if kind == "accuracy":
            status = cell["accuracy"]
            if status not in STATUSES and not status.startswith("fail"):
                raise InputError(f"{place}: unknown accuracy status {status[:40]!r} (known: "
                                 "pass, pass_due_to_skip, fail_*, eager_*, OOM, timeout, "
                                 "model_fail_to_load, infra_error)")
            records.append(Record("dynamo", "track_accuracy_failure", key,
                                  0.0 if status.startswith("pass") else 1.0))
            continue
        speedup = number(cell["speedup"], place, "speedup", allow_zero=True, from_string=True)
        if speedup == 0.0:  # the harness's mark of a model that failed to run
            if notes is not None:
                notes.append(f"{place}: {device}/{model} failed to run (speedup 0): skipped")
            continue
        if len(row) != len(header):
            raise InputError(f"{place}: {len(row)} fields, the header has {len(header)}")
        records.append(Record("dynamo", "track_latency_ratio", key, 1.0 / speedup))
        latency_ms = number(cell["abs_latency"], place, "abs_latency", from_string=True)
        records.append(Record("dynamo", "time_latency", key, latency_ms * 1e-3))
        compile_s = number(cell["compilation_latency"], place, "compilation_latency",
                           allow_zero=True, from_string=True)
        records.append(Record("dynamo", "time_compilation", key, compile_s))
        if "compression_ratio" in cell and cell["compression_ratio"]:
            ratio = number(cell["compression_ratio"], place, "compression_ratio",
                           from_string=True)
            records.append(Record("dynamo", "track_memory_ratio", key, 1.0 / ratio))
    if not records:
        raise InputError(f"{path}: no data rows")
    return records
