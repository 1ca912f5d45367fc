"""asv results -> benchmark series: one per (benchmark, parameters, machine, environment),
points in the first-parent commit order of a branch, with the samples asv recorded."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.analysis.detect import Point
from torchpulse.errors import TorchpulseError
from torchpulse.results import index as results_index
from torchpulse.results.gitrepo import History

UNIT_BY_PREFIX = {"time_": "seconds", "mem_": "bytes", "peakmem_": "bytes"}
# How a series is judged, by its unit (analysis/alert.py):
# - counted work (callgrind's instructions): nearly deterministic, judged by the detector
#   with the smaller --count-threshold;
# - exact counters (dynamo's graph breaks, graphs, eager frames, 1/calls captured): no noise
#   to estimate, any increase is a regression at the commit it appears (analysis/exact.py);
# - everything else (times, memory, ratios): the detector with --threshold.
COUNT_UNITS = frozenset({"instructions"})
INVERSE_CALLS = "1/calls captured"  # dynamo's calls_captured, inverted: lower is better
EXACT_UNITS = frozenset({"graph breaks", "breaks", "graphs", "eager frames", INVERSE_CALLS})
TIME, COUNT, EXACT = "time", "count", "exact"


class SeriesError(TorchpulseError, ValueError):
    """Results or a configuration that cannot be read into series."""


@dataclass(frozen=True, order=True)
class SeriesKey:
    benchmark: str
    params: tuple[str, ...]  # asv's repr strings, () for an unparameterised benchmark
    machine: str
    env: str

    def label(self) -> str:
        shown = f"({', '.join(self.params)})" if self.params else ""
        return f"{self.benchmark}{shown} [{self.machine}/{self.env}]"


@dataclass
class Series:
    key: SeriesKey
    unit: str
    points: list[Point] = field(default_factory=list)
    # the results files' machine and environment fields (asv's graph parameters)
    params: dict[str, str] = field(default_factory=dict)

    @property
    def load_independent(self) -> bool:
        """Whether what else runs on the machine leaves this series' values alone (counts
        and counters): the machine canary never marks their points disturbed, and a step
        in them is not measured again to confirm it."""
        return self.rule != TIME

    @property
    def rule(self) -> str:
        """How its verdict is reached: TIME, COUNT or EXACT (see the units above)."""
        return rule_of(self.unit)


def rule_of(unit: str) -> str:
    """TIME, COUNT or EXACT: how a series in ``unit`` is judged."""
    return EXACT if unit in EXACT_UNITS else COUNT if unit in COUNT_UNITS else TIME


def _unit(name: str, declared: dict[str, str]) -> str:
    if name in declared:
        return declared[name]
    method = name.rsplit(".", 1)[-1]
    for prefix, unit in UNIT_BY_PREFIX.items():
        if method.startswith(prefix):
            return unit
    return "unit"


def declared_benchmarks(results_dir: Path) -> dict[str, dict]:
    """asv's benchmarks.json: each benchmark's declaration (unit, param_names ...)."""
    path = results_dir / "benchmarks.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise SeriesError(f"{path}: cannot read ({exc})") from None
    if not isinstance(data, dict):
        raise SeriesError(f"{path}: not a JSON object")
    return {name: b for name, b in data.items() if isinstance(b, dict)}


def _machines(results_dir: Path, only: str | None) -> list[str]:
    if not results_dir.is_dir():
        raise SeriesError(f"{results_dir}: no results directory (run asv first, or give "
                          "--results-dir)")
    names = sorted(d.name for d in results_dir.iterdir()
                   if d.is_dir() and (d / "machine.json").is_file())
    if only is not None:
        if only not in names:
            raise SeriesError(f"unknown machine {only!r} in {results_dir} (have: "
                              f"{', '.join(names) or 'none'})")
        return [only]
    return names


def _finite(value: object) -> bool:
    """A value asv measured: finite and not negative (zero is a value: a failure rate)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def load_series(results_dir: Path, history: History, machine: str | None = None,
                index: Path | None = None) -> tuple[list[Series], int]:
    """Every series in ``results_dir`` with points on ``history``; also the number of
    results files whose commit is not on it (other branches, rewritten history). With
    ``index`` (torchpulse.results.index), the files are read through it: parsed only when
    new or changed since the last command; an index that cannot be written is skipped."""
    declared = declared_benchmarks(results_dir)
    units = {name: str(b.get("unit") or "unit") for name, b in declared.items()}
    # as asv's graphs: a point measured at another version of its benchmark is left out
    versions = {name: str(b["version"]) for name, b in declared.items() if b.get("version")}
    machines = _machines(results_dir, machine)
    source = None
    if index is not None:
        try:
            source = results_index.read(results_index.update(index, results_dir, machines),
                                        machines)
        except (sqlite3.Error, OSError):  # read-only, or another process's lock held long
            source = None
    files, rows = source or results_index.read_files(results_dir, machines)
    found: dict[SeriesKey, Series] = {}
    unit_of: dict[str, str] = {}
    for row in rows:
        if row.commit not in history.position:
            continue
        bench = row.benchmark
        if bench in versions and row.version not in (None, versions[bench]):
            continue
        value = row.value
        if not _finite(value):
            continue  # failed or skipped at this commit: no point
        key = SeriesKey(bench, row.combo, row.machine, row.env)
        entry = found.get(key)
        if entry is None:
            if bench not in unit_of:
                unit_of[bench] = _unit(bench, units)
            entry = found[key] = Series(key, unit_of[bench], params=dict(row.params))
        # _finite inlined: a thousand commits of 400 series are millions of samples
        kept = tuple(x for x in row.samples or () if 0 <= x < math.inf)
        entry.points.append(Point(row.commit, float(value), kept, row.started, row.seconds))
    off_branch = sum(commit not in history.position for commit in files.values())
    series = sorted(found.values(), key=lambda s: s.key)
    for s in series:
        s.points.sort(key=lambda p: history.position[p.commit])
    return series, off_branch
