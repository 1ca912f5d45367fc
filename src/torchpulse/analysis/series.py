"""asv results -> benchmark series: one per (benchmark, parameters, machine, environment),
points in the first-parent commit order of a branch, with the samples asv recorded."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from torchpulse.analysis.columns import PointColumns
from torchpulse.analysis.detector import Point
from torchpulse.errors import TorchpulseError
from torchpulse.kinds import KINDS, UNIT_BY_PREFIX, kind_of
from torchpulse.kinds import unit_of as unit_row
from torchpulse.results import asv_results
from torchpulse.results import index as results_index
from torchpulse.results.gitrepo import History


class SeriesError(TorchpulseError, ValueError):
    """Results or a configuration that cannot be read into series."""


@dataclass(frozen=True, order=True)
class SeriesKey:
    benchmark: str
    params: tuple[str, ...]  # asv's repr strings, () for an unparameterised benchmark
    machine: str
    env: str

    @property
    def name(self) -> str:
        """The series' name as asv shows it: 'bench.Class.time_x(p1, p2)'."""
        return self.benchmark + (f"({', '.join(self.params)})" if self.params else "")

    def label(self) -> str:
        """Its name with where it was measured: 'bench.Class.time_x(p) [machine/env]'."""
        return f"{self.name} [{self.machine}/{self.env}]"


@dataclass
class Series:
    key: SeriesKey
    unit: str
    points: Sequence[Point] = field(default_factory=list)  # a list, or PointColumns
    # the results files' machine and environment fields (asv's graph parameters)
    params: dict[str, str] = field(default_factory=dict)
    # a drop is the regression: judged on the values turned over (analysis/direction.py)
    # and shown as measured; from its unit's row (torchpulse.kinds) or the triage file
    higher_is_better: bool = False

    @property
    def load_independent(self) -> bool:
        """Whether what else runs on the machine leaves this series' values alone (counts,
        counters, kernel time): the machine canary never marks their points disturbed, and
        a step in them is not measured again to confirm it. (A GPU shared with another job
        moves kernel time; the canary, a host's, would not see that either.)"""
        return KINDS[self.rule].load_independent

    @property
    def rule(self) -> str:
        """How its verdict is reached: TIME, COUNT, DEVICE or EXACT, its unit's kind
        (torchpulse.kinds)."""
        return rule_of(self.unit)


def rule_of(unit: str) -> str:
    """TIME, COUNT, DEVICE or EXACT: how a series in ``unit`` is judged (its kind)."""
    return kind_of(unit).name


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


def load_series(results_dir: Path, history: History, machine: str | None = None,
                index: Path | None = None) -> tuple[list[Series], int]:
    """Every series in ``results_dir`` with points on ``history``; also the number of
    results files whose commit is not on it (other branches, rewritten history). With
    ``index`` (torchpulse.results.index), the files are read through it: parsed only when
    new or changed since the last command; an index that cannot be written is skipped.

    A point is a row whose commit is on the history, whose value is finite and not
    negative (zero is a value: a failure rate; a failed or skipped row is none) and whose
    benchmark version is the declared one (as asv's graphs); its samples are those finite
    and not negative. Points are in history order (rows of one commit: by file path)."""
    asv_results.check_tree(results_dir)  # no FIFO, device or link out: one line, exit 2
    declared = declared_benchmarks(results_dir)
    units = {name: str(b.get("unit") or "unit") for name, b in declared.items()}
    versions = {name: str(b["version"]) for name, b in declared.items() if b.get("version")}
    table = _table(results_dir, _machines(results_dir, machine), index)
    position = history.position
    file_pos = np.array([position.get(commit, -1) for _, commit, _, _ in table.files],
                        dtype=np.int64)
    keys, rows, kid = _point_rows(table, file_pos, versions)
    flat, kept, ends = _usable_samples(table)
    counts = kept[rows]
    offsets = (ends - kept)[rows]
    files = table.files
    commits = [commit for _, commit, _, _ in files]
    commit_ids = table.file[rows]
    values, started, seconds = table.value[rows], table.started[rows], table.seconds[rows]
    del table, kept, ends  # the points hold what they need: the rest goes now
    bounds = np.flatnonzero(np.diff(kid)) + 1
    starts = np.concatenate(([0], bounds)) if len(rows) else np.zeros(0, dtype=np.int64)
    stops = np.concatenate((bounds, [len(rows)])) if len(rows) else starts
    by_id = list(keys)
    found = []
    unit_of: dict[str, str] = {}
    for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
        key = by_id[kid[a]]
        bench = key.benchmark
        if bench not in unit_of:
            unit_of[bench] = _unit(bench, units)
        # the fields of the file of the series' first row in path order
        first = commit_ids[a + int(np.argmin(rows[a:b]))]
        points = PointColumns(commits, commit_ids[a:b], values[a:b], offsets[a:b],
                              counts[a:b], flat, started[a:b], seconds[a:b])
        found.append(Series(key, unit_of[bench], points, params=dict(files[first][3]),
                            higher_is_better=unit_row(unit_of[bench]).higher_is_better))
    off_branch = int((file_pos < 0).sum())
    return sorted(found, key=lambda s: s.key), off_branch


def _table(results_dir: Path, machines: list[str], index: Path | None) -> results_index.Table:
    """Every row of the machines' files: through the index where there is one that can be
    used, else read from the files."""
    if index is not None:
        try:
            return results_index.load(index, results_dir, machines)
        except (sqlite3.Error, OSError):  # read-only, or another process's lock held long
            pass
    return results_index.read_files(results_dir, machines)


def _point_rows(table: results_index.Table, file_pos: np.ndarray, versions: dict[str, str]
                ) -> tuple[dict[SeriesKey, int], np.ndarray, np.ndarray]:
    """The series' keys (numbered as met), and the rows that are points with their series'
    numbers: by series, then history position, then file path (files are in path order)."""
    # one key a series entry: entries of other versions of a benchmark share it
    keys: dict[SeriesKey, int] = {}
    key_of = np.empty(len(table.series), dtype=np.int64)
    version_ok = np.empty(len(table.series), dtype=bool)
    for i, (mach, env, bench, combo, version) in enumerate(table.series):
        key_of[i] = keys.setdefault(SeriesKey(bench, combo, mach, env), len(keys))
        version_ok[i] = bench not in versions or version in (None, versions[bench])
    pos = file_pos[table.file]
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero((pos >= 0) & np.isfinite(table.value) & (table.value >= 0)
                              & version_ok[table.sid])
    kid = key_of[table.sid[rows]]
    order = np.lexsort((table.file[rows], pos[rows], kid))
    return keys, rows[order], kid[order]


def _usable_samples(table: results_index.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The samples that are finite and not negative (of every row: a row's stay together),
    each row's count of them, and where each row's end among them."""
    with np.errstate(invalid="ignore"):
        sample_ok = (table.samples >= 0) & (table.samples < np.inf)
    ends = np.cumsum(table.nsamples)
    if sample_ok.all():
        return table.samples, table.nsamples, ends
    before = np.concatenate(([0], np.cumsum(sample_ok)))
    kept = before[ends] - before[ends - table.nsamples]
    return table.samples[sample_ok], kept, np.cumsum(kept)
