"""Dynamo benchmark harness CSVs: performance (speedup, latencies, memory) or accuracy.

Stored lower-is-better: compiled/eager latency (1 / speedup), compiled/eager peak memory
(1 / compression_ratio), and 1 for a failed accuracy status.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from torchpulse.results.importers import InputError, Record, number, param

PERFORMANCE = ("dev", "name", "speedup", "abs_latency", "compilation_latency")
ACCURACY = ("dev", "name", "accuracy")
STATUSES = {"pass", "fail_accuracy", "fail_to_run", "eager_fail_to_run", "eager_two_runs_differ",
            "model_fail_to_load", "timeout", "eager_variation", "fail_to_compile",
            "pass_due_to_skip"}


def parse(path: Path, text: str, unit_scale: float | None,
          notes: list[str] | None = None) -> list[Record]:
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
    else:
        missing = [c for c in PERFORMANCE if c not in header]
        raise InputError(f"{path}:1: missing column(s) {', '.join(missing)} (performance) or "
                         "accuracy (accuracy mode); header: " + ",".join(header))
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
        short = [c for c in (ACCURACY if kind == "accuracy" else PERFORMANCE[:3])
                 if c not in cell]
        if short:
            raise InputError(f"{place}: {len(row)} fields, missing {', '.join(short)}")
        device = param(cell["dev"], place, "dev")
        model = param(cell["name"], place, "name")
        if (device, model) in seen:
            raise InputError(f"{place}: {device}/{model} appears twice")
        seen.add((device, model))
        key = (device, model)
        if kind == "accuracy":
            status = cell["accuracy"]
            if status not in STATUSES and not status.startswith("fail"):
                raise InputError(f"{place}: unknown accuracy status {status!r}")
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
