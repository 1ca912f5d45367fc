"""pytest-benchmark ``--benchmark-json`` files: one record per benchmark, in seconds."""

from __future__ import annotations

import statistics
from pathlib import Path

from torchpulse.results.importers import InputError, Record, number, param, parse_json


def parse(path: Path, text: str, unit_scale: float | None,
          notes: list[str] | None = None) -> list[Record]:
    if not text.strip():
        raise InputError(f"{path}: empty file")
    data = parse_json(text, str(path))
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise InputError(f"{path}: expected an object with a 'benchmarks' list")
    if not data["benchmarks"]:
        raise InputError(f"{path}: 'benchmarks' is empty")
    records: list[Record] = []
    seen: set[str] = set()
    for i, bench in enumerate(data["benchmarks"]):
        place = f"{path}: benchmarks[{i}]"
        if not isinstance(bench, dict):
            raise InputError(f"{place}: not an object")
        # fullname (file::test[param]) tells tests of the same name in two files apart
        name = bench.get("fullname", bench.get("name"))
        test = param(name, place, "test name")
        if test in seen:
            raise InputError(f"{place}: test {test!r} appears twice")
        seen.add(test)
        stats = bench.get("stats")
        if not isinstance(stats, dict):
            raise InputError(f"{place}: missing 'stats' object")
        data_points = stats.get("data")
        if data_points is not None:
            if not isinstance(data_points, list) or not data_points:
                raise InputError(f"{place}: stats.data is not a non-empty list")
            samples = tuple(number(v, place, "a stats.data value") for v in data_points)
            records.append(Record("pytest", "time_test", (test,), statistics.median(samples),
                                  samples))
        else:
            if "median" not in stats:
                raise InputError(f"{place}: stats has neither 'data' nor 'median'")
            value = number(stats["median"], place, "stats.median")
            records.append(Record("pytest", "time_test", (test,), value))
    return records
