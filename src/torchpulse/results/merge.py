"""``torchpulse merge``: combine asv results trees from several machines or sharded runs.

asv has no command for it. Machine directories are combined; a results file present in more
than one tree (the same machine, commit and environment, e.g. shards of one run) is merged
benchmark by benchmark; benchmarks.json becomes the union. Anything contradictory (two
machine.json for one name, a benchmark with two different results, one benchmark at two
versions) is reported and nothing is written. Every source's names are checked first: a
tree whose names or machine details would be markup on the site is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.files import RESULTS_FILE_BYTES, write_json_atomically
from torchpulse.results import asv_results, names
from torchpulse.results.gitrepo import FULL_SHA
from torchpulse.results.store import (
    BENCHMARKS_JSON,
    StoreError,
    check_name,
    locked,
    read_json_object,
    validate_machine_info,
)

# top-level fields of a results file that must agree for two files to merge
_IDENTITY = ("commit_hash", "env_name", "params", "requirements", "python", "result_columns")


@dataclass
class MergeSummary:
    machines: set[str] = field(default_factory=set)
    files_written: int = 0
    benchmarks_added: int = 0
    conflicts: list[str] = field(default_factory=list)


def _trees(sources: list[Path]) -> None:
    for src in sources:
        if not src.is_dir():
            raise StoreError(f"{src}: not a directory")
        if not (src / BENCHMARKS_JSON).is_file() and not any(src.glob("*/machine.json")):
            raise StoreError(f"{src}: not an asv results tree (no benchmarks.json, no "
                             "<machine>/machine.json)")




def _check_source(tree: Path) -> None:
    """A foreign tree's names are checked at the door: what reaches the site's pages (machine
    names and details, environment names, benchmark names, parameter names and values) must
    be text, not markup (``torchpulse.results.names``); StoreError or UnsafeNameError."""
    for path in sorted(tree.glob("*/machine.json")):
        name = check_name(path.parent.name, f"{path.parent}: machine name")
        validate_machine_info(name, read_json_object(path), str(path))
    for rel, path in _result_files(tree).items():
        asv_results.load(path)  # a file every reader takes: its columns, values, versions
        data = read_json_object(path)
        commit = data.get("commit_hash")
        if not (isinstance(commit, str) and FULL_SHA.fullmatch(commit)):
            raise StoreError(f"{path}: its commit_hash is not a commit's 40 hex digits")
        if names.has_infinite(data.get("results")):
            raise StoreError(f"{path}: holds an infinite value (asv's publish cannot handle "
                             "one)")
        names.check_param_text(str(data.get("env_name", "")), f"{path}: env_name")
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise StoreError(f"{path}: params must be an object")
        for value in params.values():
            names.check_param_text(str(value), str(path))
        results = data.get("results", {})
        if not isinstance(results, dict):
            raise StoreError(f"{path}: results must be an object")
        columns = data.get("result_columns", [])
        for bench, row in results.items():
            row = dict(zip(columns, row, strict=False)) if isinstance(row, list) else {}
            names.check_benchmark(bench, {"params": row.get("params") or []}, rel)
    benchmarks = tree / BENCHMARKS_JSON
    if benchmarks.is_file():
        for bench, entry in read_json_object(benchmarks).items():
            if bench != "version":
                names.check_benchmark(bench, entry, str(benchmarks))


def _result_files(tree: Path) -> dict[str, Path]:
    files = {}
    for machine_json in sorted(tree.glob("*/machine.json")):
        for path in sorted(machine_json.parent.glob("*.json")):
            if path.name != "machine.json" and not path.name.startswith("."):
                files[f"{path.parent.name}/{path.name}"] = path
    return files


def _merge_params(a: list[list[str]], b: list[list[str]]) -> list[list[str]]:
    return [list(x) + [v for v in y if v not in x] for x, y in zip(a, b, strict=True)]


def merge_trees(sources: list[Path], into: Path) -> MergeSummary:
    """Merge every tree in ``sources`` into ``into`` (which may already hold results)."""
    _trees(sources)
    if into.resolve() in {s.resolve() for s in sources}:
        raise StoreError(f"{into} is both a source and the destination")
    if into.exists() and not into.is_dir():
        raise StoreError(f"--into {into}: exists and is not a directory")
    for src in sources:  # no FIFO, device, oversized file or link out of the tree
        asv_results.check_tree(src)
        _check_source(src)
    summary = MergeSummary()
    created = not into.exists()
    with locked(into):
        asv_results.check_tree(into)
        trees = [into, *sources]
        machines: dict[str, tuple[dict, Path]] = {}
        for tree in trees:
            for path in sorted(tree.glob("*/machine.json")):
                info, name = read_json_object(path), path.parent.name
                if name in machines and machines[name][0] != info:
                    summary.conflicts.append(f"machine {name}: {machines[name][1]} and {path} "
                                             "differ")
                machines.setdefault(name, (info, path))
        merged: dict[str, dict] = {}
        origin: dict[str, Path] = {}
        changed: set[str] = set()
        for tree in trees:
            for rel, path in _result_files(tree).items():
                data = read_json_object(path)
                if rel not in merged:
                    merged[rel], origin[rel] = data, path
                    if tree != into:
                        changed.add(rel)
                    continue
                base = merged[rel]
                different = [k for k in _IDENTITY if base.get(k) != data.get(k)]
                if different:
                    summary.conflicts.append(f"{rel}: {origin[rel]} and {path} differ in "
                                             f"{', '.join(different)}")
                    continue
                for name, row in data.get("results", {}).items():
                    mine = base["results"].get(name)
                    if mine is None:
                        base["results"][name] = row
                        changed.add(rel)
                    elif mine != row:
                        summary.conflicts.append(f"{rel}: {name} differs between "
                                                 f"{origin[rel]} and {path}")
        benchmarks: dict[str, object] = {}
        for tree in trees:
            path = tree / BENCHMARKS_JSON
            if not path.is_file():
                continue
            for name, entry in read_json_object(path).items():
                if name == "version":
                    benchmarks.setdefault("version", entry)
                    continue
                if name not in benchmarks:
                    benchmarks[name] = entry
                    summary.benchmarks_added += tree != into
                    continue
                mine = benchmarks[name]
                if not isinstance(mine, dict) or not isinstance(entry, dict):
                    summary.conflicts.append(f"{path}: {name} is not an object")
                elif mine.get("version") != entry.get("version"):
                    summary.conflicts.append(f"benchmark {name}: version {mine.get('version')!r}"
                                             f" vs {entry.get('version')!r} ({path})")
                elif mine.get("unit") != entry.get("unit"):  # one value read in two units
                    summary.conflicts.append(f"benchmark {name}: unit {mine.get('unit')!r} vs "
                                             f"{entry.get('unit')!r} ({path})")
                elif mine.get("params") != entry.get("params"):
                    try:
                        mine["params"] = _merge_params(mine["params"], entry["params"])
                    except (TypeError, ValueError):
                        summary.conflicts.append(f"benchmark {name}: parameters of different "
                                                 f"shapes ({path})")
        for rel in sorted(changed) if not summary.conflicts else ():
            # measured before anything is written (and not kept: a fleet's merge holds
            # thousands of them); one over the bound would leave every reader refusing the tree
            size = len(json.dumps(merged[rel], indent=4, sort_keys=True)) + 1
            if size > RESULTS_FILE_BYTES:
                summary.conflicts.append(f"{rel}: would be {size >> 20} MiB, over the "
                                         f"{RESULTS_FILE_BYTES >> 20} MiB every reader takes")
                break
        if summary.conflicts:
            if created:
                into.rmdir()  # it was made only to take the lock
            return summary
        for name, (info, _path) in machines.items():
            target = into / name / "machine.json"
            if not target.exists():
                write_json_atomically(target, info)
            summary.machines.add(name)
        for rel in sorted(changed):
            write_json_atomically(into / rel, merged[rel])
            summary.files_written += 1
        if benchmarks:
            write_json_atomically(into / BENCHMARKS_JSON, benchmarks)
    return summary
