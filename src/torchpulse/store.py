"""Writing into an asv results tree: imported records, machine.json, benchmarks.json.

Rules (DESIGN 3 and 4): every file is replaced atomically (temp file + rename); a commit's
existing results are merged, never clobbered (an existing value is replaced only when asked);
writers hold an exclusive lock on the results directory, so concurrent imports lose nothing;
and everything that can be refused is checked before the first byte is written.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from asv import util as asv_util
from asv.results import Results, get_filename
from asv.runner import BenchmarkResult

from torchpulse import external
from torchpulse.importers import Record

NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")
MACHINE_FIELDS = ("arch", "cpu", "machine", "num_cpu", "os", "ram")
BENCHMARKS_JSON = "benchmarks.json"
BENCHMARKS_API = 2  # the "version" asv writes into benchmarks.json
MACHINE_API = 1


class StoreError(ValueError):
    """A write that would lose or contradict stored data; nothing was written."""


def check_name(value: str, what: str) -> str:
    if not NAME.fullmatch(value) or value in {".", ".."}:
        raise StoreError(f"{what} {value!r} must be 1-100 characters of A-Z a-z 0-9 _ . -")
    return value


# --------------------------------------------------------------------------- files


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temp file beside ``path`` and rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomically(path: Path, data: object) -> None:
    write_text_atomically(path, json.dumps(data, indent=4, sort_keys=True) + "\n")


def save_results_atomically(results: Results, results_dir: Path) -> Path:
    """asv's own serialisation (so asv reads it back), written to a temp tree and renamed."""
    final = results_dir / results._filename
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=".import-"))
    try:
        results.save(str(staging))
        os.replace(staging / results._filename, final)
    finally:
        for leftover in sorted(staging.rglob("*"), reverse=True):
            leftover.rmdir() if leftover.is_dir() else leftover.unlink()
        staging.rmdir()
    return final


@contextmanager
def locked(results_dir: Path) -> Iterator[None]:
    """An exclusive lock on the results directory itself (flock on its descriptor: no lock
    file is left behind), held while reading, merging and writing."""
    results_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(results_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_json_object(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StoreError(f"{path}: cannot read ({exc})") from None
    if not isinstance(data, dict):
        raise StoreError(f"{path}: not a JSON object")
    return data


# --------------------------------------------------------------------------- machines


def placeholder_machine(name: str) -> dict[str, object]:
    """Fields for a machine known only by name: fixed, so every import lands on one graph."""
    info: dict[str, object] = dict.fromkeys(MACHINE_FIELDS, "unknown")
    info["machine"] = name
    info["version"] = MACHINE_API
    return info


def validate_machine_info(name: str, info: object, source: str) -> dict[str, object]:
    if not isinstance(info, dict):
        raise StoreError(f"{source}: machine info must be a JSON object")
    if "machine" in info and info["machine"] != name:
        raise StoreError(f"{source}: machine is {info['machine']!r}, --machine is {name!r}")
    unknown = sorted(set(info) - set(MACHINE_FIELDS) - {"version"})
    if unknown:
        raise StoreError(f"{source}: unknown machine field(s) {', '.join(unknown)}; asv's are "
                         f"{', '.join(MACHINE_FIELDS)}")
    result = placeholder_machine(name)
    for key in MACHINE_FIELDS:
        if key in info:
            value = info[key]
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise StoreError(f"{source}: machine field {key!r} must be a string")
            result[key] = str(value)
    return result


def machine_for_import(results_dir: Path, name: str,
                       given: dict[str, object] | None) -> tuple[dict[str, object], bool]:
    """(machine.json content, whether it must be written). An existing machine.json wins;
    different --machine-info for it is refused (it would split the graphs)."""
    path = results_dir / name / "machine.json"
    existing = read_json_object(path) if path.exists() else None
    if existing is not None:
        if given is not None and any(str(existing.get(k)) != str(given[k])
                                     for k in MACHINE_FIELDS):
            raise StoreError(f"{path} already describes machine {name!r} differently from "
                             "--machine-info; use another --machine name or the same info")
        return existing, False
    return (given if given is not None else placeholder_machine(name)), True


def result_params(machine: dict[str, object], source: str) -> dict[str, str]:
    """The graph-identifying params of imported results: the machine's fields, an empty
    python, and the source (env) name, so two sources never share a graph line."""
    params = {k: str(machine.get(k, "unknown")) for k in MACHINE_FIELDS}
    params["python"] = ""
    params["source"] = source
    return params


# --------------------------------------------------------------------------- imports


@dataclass
class ImportSummary:
    path: Path
    added: int = 0
    replaced: int = 0
    benchmarks: list[str] = field(default_factory=list)


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _grid(old: list[list[str]], new: list[set[str]]) -> list[list[str]]:
    return [list(o) + sorted(n - set(o)) for o, n in zip(old, new, strict=True)]


def _index(params: list[list[str]], combo: tuple[str, ...]) -> int:
    """Position of ``combo`` in itertools.product order over ``params``."""
    idx = 0
    for values, value in zip(params, combo, strict=True):
        idx = idx * len(values) + values.index(value)
    return idx


def _size(params: list[list[str]]) -> int:
    return math.prod(len(v) for v in params)


def merge_records(results: Results, records: Iterable[Record], replace: bool) -> ImportSummary:
    """Add ``records`` to ``results`` in memory; StoreError (and ``results`` unchanged) when
    a value is already stored and ``replace`` is false."""
    by_name: dict[str, dict[tuple[str, ...], Record]] = {}
    for r in records:
        stub = external.STUBS[r.stub]
        combo = tuple(external.param_repr(v) for v in r.params)
        by_name.setdefault(stub.name(r.method), {})[combo] = r
    plans = []
    conflicts: list[str] = []
    summary = ImportSummary(Path(results._filename))
    for name, new in sorted(by_name.items()):
        stub, _metric = external.stub_for(name)
        stored = name in results._results
        if stored and results._benchmark_version.get(name) != stub.version:
            raise StoreError(f"{results._filename}: {name} is stored with version "
                             f"{results._benchmark_version.get(name)!r}, the suite's is "
                             f"{stub.version!r}")
        old_params = results._benchmark_params.get(name) if stored else None
        old_params = old_params or [[] for _ in stub.param_names]
        params = _grid(old_params, [{c[i] for c in new} for i in range(len(stub.param_names))])
        old_values = (results.get_result_value(name, params) if stored
                      else [None] * _size(params))
        for combo in new:
            if not _is_missing(old_values[_index(params, combo)]):
                if not replace:
                    conflicts.append(f"{name}({', '.join(combo)})")
                summary.replaced += 1
            else:
                summary.added += 1
        plans.append((name, stub, params, new))
    if conflicts:
        shown = "; ".join(conflicts[:3]) + (f" and {len(conflicts) - 3} more"
                                            if len(conflicts) > 3 else "")
        raise StoreError(f"{results._filename} already has {shown}; pass --replace to "
                         "overwrite")
    for name, stub, params, new in plans:
        size = _size(params)
        values: list[float | None] = [None] * size
        samples: list[list[float] | None] = [None] * size
        number: list[int | None] = [None] * size
        selected = set()
        for combo, r in new.items():
            i = _index(params, combo)
            selected.add(i)
            values[i] = r.value
            if r.samples:
                samples[i] = list(r.samples)
                number[i] = 1  # asv then stores the median and its stats from the samples
        result = BenchmarkResult(result=values, samples=samples, number=number, errcode=0,
                                 stderr="", profile=None)
        bench = {"name": name, "version": stub.version, "params": params}
        results.add_result(bench, result, record_samples=True, selected_idx=selected)
        summary.benchmarks.append(name)
    return summary


def benchmark_entry(stub: external.Stub, metric: external.Metric,
                    params: list[list[str]]) -> dict[str, object]:
    """benchmarks.json's entry for a stub, as asv's discovery writes it for the same class."""
    entry: dict[str, object] = {
        "code": f"# imported results only: {metric.description}",
        "name": stub.name(metric.method),
        "param_names": list(stub.param_names),
        "params": params,
        "type": metric.type,
        "unit": metric.unit,
        "version": stub.version,
        "timeout": 60.0,
    }
    return entry


def update_benchmarks_json(results_dir: Path) -> None:
    """Add or refresh the stub entries (parameters: everything imported so far)."""
    path = results_dir / BENCHMARKS_JSON
    data = read_json_object(path) if path.exists() else {"version": BENCHMARKS_API}
    scanned = external.scan(results_dir)
    for stub in external.STUBS.values():
        params = external.stub_params(stub, results_dir, scanned)
        for metric in stub.metrics:
            data[stub.name(metric.method)] = benchmark_entry(stub, metric, params)
    write_json_atomically(path, data)


@dataclass(frozen=True)
class Target:
    results_dir: Path
    machine: str
    commit: str  # full sha
    date_ms: int
    source: str = external.DEFAULT_SOURCE


def import_records(target: Target, records: list[Record], replace: bool = False,
                   machine_info: dict[str, object] | None = None) -> ImportSummary:
    """Merge ``records`` into the target commit's results file, all or nothing."""
    check_name(target.machine, "machine name")
    check_name(target.source, "env name")
    if not records:
        raise StoreError("nothing to import")
    results_dir = target.results_dir
    with locked(results_dir):
        machine, write_machine = machine_for_import(results_dir, target.machine, machine_info)
        params = result_params(machine, target.source)
        filename = get_filename(target.machine, target.commit, target.source)
        path = results_dir / filename
        if path.exists():
            try:
                results = Results.load(str(path))
            except (asv_util.UserError, ValueError, KeyError) as exc:
                raise StoreError(f"{path}: cannot read ({exc})") from None
            if results.commit_hash != target.commit:
                raise StoreError(f"{path} holds commit {results.commit_hash}, not "
                                 f"{target.commit} (two commits share the prefix)")
            if results.params != params:
                raise StoreError(f"{path} was written for other machine params; use "
                                 "another --env-name")
        else:
            results = Results(params, {}, target.commit, target.date_ms, "", target.source, {})
        summary = merge_records(results, records, replace)
        if write_machine:
            write_json_atomically(results_dir / target.machine / "machine.json", machine)
        summary.path = save_results_atomically(results, results_dir)
        update_benchmarks_json(results_dir)
    return summary
