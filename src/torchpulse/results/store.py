"""Writing into an asv results tree: imported records, machine.json, benchmarks.json.

Rules: every file is replaced atomically (temp file + rename); a commit's
existing results are merged, never clobbered (an existing value is replaced only when asked);
writers hold an exclusive lock on the results directory, so concurrent imports lose nothing;
and everything that can be refused is checked before the first byte is written.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.files import (
    locked_folder,
    remove_leftovers,
    restore,
    snapshot,
    write_json_atomically,
)
from torchpulse.results import asv_results, external
from torchpulse.results.importers import Record
from torchpulse.text import printable

NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")
MACHINE_FIELDS = ("arch", "cpu", "machine", "num_cpu", "os", "ram")
BENCHMARKS_JSON = "benchmarks.json"
BENCHMARKS_API = 2  # the "version" asv writes into benchmarks.json
MACHINE_API = 1


class StoreError(TorchpulseError, ValueError):
    """A write that would lose or contradict stored data; nothing was written."""


def check_name(value: str, what: str) -> str:
    if not NAME.fullmatch(value) or value in {".", ".."}:
        raise StoreError(f"{what} {value!r} must be 1-100 characters of A-Z a-z 0-9 _ . -")
    return value


# --------------------------------------------------------------------------- files


@contextmanager
def locked(results_dir: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """An exclusive lock on the results directory itself (files.locked_folder), held while
    reading, merging and writing by every command that writes results: import, merge,
    record and the dashboard's asv run (whose roll-back on an interrupt may then undo only
    its own writes). ``waiting`` is called once when another writer holds it (default: a
    line on stderr), before waiting for it. Taking it removes the scratch files of writers
    killed before (``files.remove_leftovers``)."""
    with locked_folder(results_dir, waiting or _say_waiting(results_dir)):
        remove_leftovers(results_dir)  # of writers killed before: none can be live now
        yield


def _say_waiting(results_dir: Path) -> Callable[[], None]:
    def say() -> None:
        print(f"torchpulse: waiting for another command writing {printable(str(results_dir))} "
              "(a dashboard, import, merge or record) to finish", file=sys.stderr, flush=True)
    return say


def read_json_object(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
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


# what a machine field may hold: asv renders machine details as HTML (on hover in its
# graphs), and publish reads them on every run
MACHINE_VALUE_MAX = 200
MACHINE_VALUE = re.compile(rf"[^<>&\"'`\x00-\x1f\x7f-\x9f]{{0,{MACHINE_VALUE_MAX}}}")


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
            text = value if isinstance(value, str) else _short_int(value, source, key)
            if not MACHINE_VALUE.fullmatch(text):
                raise StoreError(f"{source}: machine field {key!r} must be at most "
                                 f"{MACHINE_VALUE_MAX} printable characters without "
                                 "< > & \" ' ` (asv shows them as HTML)")
            result[key] = text
    return result


def _short_int(value: int, source: str, key: str) -> str:
    if not -10**MACHINE_VALUE_MAX < value < 10**MACHINE_VALUE_MAX:
        raise StoreError(f"{source}: machine field {key!r} is a number of more than "
                         f"{MACHINE_VALUE_MAX} digits")
    return str(value)


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
    unchanged: int = 0  # already stored with the same value (a retried import)
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


def merge_records(results: asv_results.Results, records: Iterable[Record], replace: bool,
                  where: str = "the results file") -> ImportSummary:
    """Add ``records`` to ``results`` in memory; StoreError (and ``results`` unchanged) when
    a different value is already stored and ``replace`` is false. The same value stored
    again is no conflict: an import that was interrupted can simply be run again.
    ``where`` names the file in errors."""
    by_name: dict[str, dict[tuple[str, ...], Record]] = {}
    for r in records:
        stub = external.STUBS[r.stub]
        combo = tuple(external.param_repr(v) for v in r.params)
        by_name.setdefault(stub.name(r.method), {})[combo] = r
    plans = []
    conflicts: list[str] = []
    summary = ImportSummary(Path(where))
    stored_names = set(asv_results.benchmarks(results))
    for name, new in sorted(by_name.items()):
        stub, _metric = external.stub_for(name)
        stored = name in stored_names
        if stored and asv_results.version(results, name) != stub.version:
            raise StoreError(f"{where}: {name} is stored with version "
                             f"{asv_results.version(results, name)!r}, the suite's is "
                             f"{stub.version!r}")
        old_params = asv_results.params(results, name) if stored else None
        old_params = old_params or [[] for _ in stub.param_names]
        params = _grid(old_params, [{c[i] for c in new} for i in range(len(stub.param_names))])
        old_values = (asv_results.values(results, name, params) if stored
                      else [None] * _size(params))
        for combo, record in new.items():
            old = old_values[_index(params, combo)]
            if _is_missing(old):
                summary.added += 1
            elif old == record.value:
                summary.unchanged += 1
            else:
                if not replace:
                    conflicts.append(f"{name}({', '.join(combo)})")
                summary.replaced += 1
        plans.append((name, stub, params, new))
    if conflicts:
        shown = "; ".join(conflicts[:3]) + (f" and {len(conflicts) - 3} more"
                                            if len(conflicts) > 3 else "")
        raise StoreError(f"{where} already has {shown}; pass --replace to overwrite")
    for name, stub, params, new in plans:
        size = _size(params)
        values: list[float | None] = [None] * size
        samples: list[tuple[float, ...] | None] = [None] * size
        selected = set()
        for combo, r in new.items():
            i = _index(params, combo)
            selected.add(i)
            values[i] = r.value
            samples[i] = r.samples or None  # asv then stores their median and stats
        asv_results.add(results, name, stub.version, params, values, samples, selected)
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
    """Add or refresh the entries of the stubs with imported results (parameters: everything
    imported so far), as asv's discovery of benchmarks/external/ declares them; a stub with
    nothing imported has no entry (asv would show empty tiles)."""
    path = results_dir / BENCHMARKS_JSON
    data = read_json_object(path) if path.exists() else {"version": BENCHMARKS_API}
    scanned = external.scan(results_dir)
    for stub in external.STUBS.values():
        declared = external.has_imports(stub, results_dir, scanned)
        params = external.stub_params(stub, results_dir, scanned)
        for metric in stub.metrics:
            if declared:
                data[stub.name(metric.method)] = benchmark_entry(stub, metric, params)
            else:
                data.pop(stub.name(metric.method), None)
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
    return import_groups([(target, records)], replace, machine_info)[0]


def import_groups(groups: list[tuple[Target, list[Record]]], replace: bool = False,
                  machine_info: dict[str, object] | None = None) -> list[ImportSummary]:
    """Merge each group's records into its target's results file (targets of one results
    tree, each a different file: a file of records for several commits or machines), all or
    nothing across every file it touches."""
    if not groups or not any(records for _, records in groups):
        raise StoreError("nothing to import")
    (results_dir,) = {target.results_dir for target, _ in groups}
    with locked(results_dir):
        asv_results.check_tree(results_dir)  # never written through a link out of it
        machines: dict[str, dict[str, object]] = {}
        new_machines: set[str] = set()
        staged = []
        for target, records in groups:
            check_name(target.machine, "machine name")
            check_name(target.source, "env name")
            if target.machine not in machines:
                machine, write = machine_for_import(results_dir, target.machine, machine_info)
                machines[target.machine] = machine
                if write:
                    new_machines.add(target.machine)
            params = result_params(machines[target.machine], target.source)
            relative = asv_results.filename(target.machine, target.commit, target.source)
            path = results_dir / relative
            if path.exists():
                try:
                    results = asv_results.load(path)
                except asv_results.ResultsFileError as exc:
                    raise StoreError(f"{path}: cannot read ({exc})") from None
                if results.commit_hash != target.commit:
                    raise StoreError(f"{path} holds commit {results.commit_hash}, not "
                                     f"{target.commit} (two commits share the prefix)")
                if results.params != params:
                    raise StoreError(f"{path} was written for other machine params; use "
                                     "another --env-name")
            else:
                results = asv_results.new(params, target.commit, target.date_ms, "",
                                          target.source)
            summary = merge_records(results, records, replace, where=relative)
            staged.append((relative, results, summary))
        touched = [results_dir / m / "machine.json" for m in sorted(new_machines)]
        touched += [results_dir / rel for rel, _, _ in staged]
        try:
            with _undo_on_failure([*touched, results_dir / BENCHMARKS_JSON]):
                for name in sorted(new_machines):
                    write_json_atomically(results_dir / name / "machine.json", machines[name])
                for relative, results, summary in staged:  # a retry changed nothing: kept
                    summary.path = (asv_results.save(results, results_dir, relative)
                                    if summary.added or summary.replaced
                                    else results_dir / relative)
                update_benchmarks_json(results_dir)  # also completes an interrupted import
        except OSError as exc:  # a full disk, a read-only folder: nothing was changed
            raise StoreError(f"{results_dir}: cannot write ({exc.strerror or exc}); nothing "
                             "was imported") from None
    return [summary for _, _, summary in staged]


@contextmanager
def _undo_on_failure(paths: list[Path]) -> Iterator[None]:
    """Put ``paths`` back as they were (their bytes, or absent) when the block fails, so
    the files an import touches change together or not at all. (Each is written atomically;
    a kill between two of them leaves a state that running the import again completes.)"""
    before = snapshot(paths)
    try:
        yield
    except BaseException:
        # the disk that failed the write may fail this too: keep the first error
        restore(before, keep_going=True)
        raise
