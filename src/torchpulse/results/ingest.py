"""``torchpulse import``: foreign files into a results tree, all or nothing. Every file is read
and parsed, the commit resolved on the config's branches and the names checked before the
store writes anything."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchpulse.files import INPUT_FILE_BYTES, FileTooLong, read_input
from torchpulse.results import importers, store
from torchpulse.results.external import DEFAULT_SOURCE
from torchpulse.results.importers import InputError, Record
from torchpulse.results.project import Project

MACHINE_INFO_BYTES = 2**20  # a few hundred bytes of asv machine fields


@dataclass(frozen=True)
class Imported:
    summary: store.ImportSummary
    files: int
    notes: list[str]  # what the parsers skipped on purpose, one line each


def read_machine_info(machine: str, path: Path) -> dict[str, object]:
    """asv machine fields for a new machine, from a JSON file."""
    try:
        raw = json.loads(read_input(path, MACHINE_INFO_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(f"{path}: cannot read machine info ({exc})") from None
    return store.validate_machine_info(machine, raw, str(path))


def parse_files(fmt: str, files: Sequence[Path], unit: str | None = None,
                device: str | None = None,
                higher: Sequence[str] = ()) -> tuple[list[Record], list[str]]:
    """Every record of ``files`` in format ``fmt``, and the parsers' notes; ``device`` is
    for dynamo CSVs without a dev column, ``higher`` names more higher-is-better metrics of
    PyTorch v3 records."""
    if fmt not in importers.FORMAT_NAMES:
        raise InputError(f"unknown format {fmt!r}; one of: {', '.join(importers.FORMAT_NAMES)}")
    if unit is not None and fmt not in importers.SCALABLE:
        raise InputError(f"--unit applies to oss and pep only; {fmt} files carry their own "
                         "units")
    if device is not None and fmt != "dynamo-csv":
        raise InputError(f"--device applies to dynamo-csv only; {fmt} files carry no device")
    if higher and fmt != "pytorch-v3":
        raise InputError(f"--higher-is-better applies to pytorch-v3 only, not {fmt}")
    scale = importers.UNITS[unit] if unit else None
    parse = importers.formats()[fmt]
    if device is not None:
        importers.param(device, "--device", "device")
        parse = functools.partial(parse, device=device)
    if higher:
        parse = functools.partial(parse, higher=tuple(higher))
    records: list[Record] = []
    notes: list[str] = []
    for path in files:
        try:
            text = read_input(path, INPUT_FILE_BYTES).decode("utf-8")
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except FileTooLong:
            bound = (f"{INPUT_FILE_BYTES >> 20} MiB" if INPUT_FILE_BYTES % 2**20 == 0
                     else f"{INPUT_FILE_BYTES} bytes")
            raise InputError(f"{path}: over {bound}, not imported (its records would take "
                             "ten times that in memory): split it") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None
        parsed = parse(path, text, scale, notes)
        importers.check_records(parsed, str(path))
        records += parsed
    return records, notes


def import_files(project: Project, fmt: str, files: Sequence[Path], *,
                 commit: str | None, machine: str | None, env_name: str = DEFAULT_SOURCE,
                 machine_info: Path | None = None, unit: str | None = None,
                 replace: bool = False, device: str | None = None,
                 higher: Sequence[str] = ()) -> Imported:
    """Parse ``files`` and merge them into ``project``'s results tree as results of
    ``commit`` on ``machine`` (given, they apply to every record; else a format that names
    them per record, PyTorch v3, says), all or nothing."""
    if machine is not None:
        store.check_name(machine, "--machine")
    store.check_name(env_name, "--env-name")
    if fmt != "pytorch-v3" and (commit is None or machine is None):
        raise InputError(f"{fmt} files name no commit or machine: give --commit and "
                         "--machine")
    info = read_machine_info(machine, machine_info) if machine_info and machine else None
    if machine_info and not machine:
        raise InputError("--machine-info needs --machine (the machine it describes)")
    records, notes = parse_files(fmt, files, unit, device, higher)
    shas: dict[str, str] = {}  # each revision resolved once
    groups: dict[tuple[str, str], list[Record]] = {}  # (full sha, machine): one file each
    for r in records:
        rev = commit or r.commit
        name = machine or r.machine
        if rev is None:
            raise InputError(f"a {r.stub} record of {r.params[0]!r} has no head_sha: give "
                             "--commit")
        if name is None:
            raise InputError(f"a {r.stub} record of {r.params[0]!r} names no single machine "
                             "(no runners, or runners of different types): give --machine")
        if rev not in shas:
            shas[rev] = project.commit_on_branches(rev)
        groups.setdefault((shas[rev], name), []).append(r)
    targets = []
    for (sha, name), group in groups.items():
        _refuse_twice(group, sha, name)
        targets.append((store.Target(project.results_dir, name, sha,
                                     project.commit_date_ms(sha), env_name), group))
    summaries = store.import_groups(targets, replace, info)
    return Imported(_total(summaries), len(files), notes)


def _refuse_twice(group: list[Record], sha: str, machine: str) -> None:
    """Two records of one series for one commit and machine would keep one value and lose
    the other: --commit or --machine can make records that differ in the file the same."""
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    for r in group:
        key = (r.stub, r.method, r.params)
        if key in seen:
            raise InputError(f"{' / '.join(r.params)}: two values for one series at commit "
                             f"{sha[:12]} on machine {machine!r} (the same record twice once "
                             "--commit or --machine applied); nothing imported")
        seen.add(key)


def _total(summaries: list[store.ImportSummary]) -> store.ImportSummary:
    """One summary of several results files (the paths joined)."""
    if len(summaries) == 1:
        return summaries[0]
    paths = sorted({str(s.path) for s in summaries})
    total = store.ImportSummary(Path(paths[0]) if len(paths) == 1 else
                                Path(f"{len(paths)} results files"))
    for s in summaries:
        total.added += s.added
        total.replaced += s.replaced
        total.unchanged += s.unchanged
        total.benchmarks += [b for b in s.benchmarks if b not in total.benchmarks]
    return total
