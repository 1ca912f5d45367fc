"""``torchpulse import``: foreign files into a results tree, all or nothing. Every file is read
and parsed, the commit resolved on the config's branches and the names checked before the
store writes anything."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchpulse.results import importers, store
from torchpulse.results.external import DEFAULT_SOURCE
from torchpulse.results.importers import InputError, Record
from torchpulse.results.project import Project


@dataclass(frozen=True)
class Imported:
    summary: store.ImportSummary
    files: int
    notes: list[str]  # what the parsers skipped on purpose, one line each


def read_machine_info(machine: str, path: Path) -> dict[str, object]:
    """asv machine fields for a new machine, from a JSON file."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(f"{path}: cannot read machine info ({exc})") from None
    return store.validate_machine_info(machine, raw, str(path))


def parse_files(fmt: str, files: Sequence[Path], unit: str | None = None,
                device: str | None = None) -> tuple[list[Record], list[str]]:
    """Every record of ``files`` in format ``fmt``, and the parsers' notes; ``device`` is
    for dynamo CSVs without a dev column."""
    if fmt not in importers.FORMAT_NAMES:
        raise InputError(f"unknown format {fmt!r}; one of: {', '.join(importers.FORMAT_NAMES)}")
    if unit is not None and fmt not in importers.SCALABLE:
        raise InputError(f"--unit applies to oss and pep only; {fmt} files carry their own "
                         "units")
    if device is not None and fmt != "dynamo-csv":
        raise InputError(f"--device applies to dynamo-csv only; {fmt} files carry no device")
    scale = importers.UNITS[unit] if unit else None
    parse = importers.formats()[fmt]
    if device is not None:
        importers.param(device, "--device", "device")
        parse = functools.partial(parse, device=device)
    records: list[Record] = []
    notes: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None
        parsed = parse(path, text, scale, notes)
        importers.check_records(parsed, str(path))
        records += parsed
    return records, notes


def import_files(project: Project, fmt: str, files: Sequence[Path], *, commit: str,
                 machine: str, env_name: str = DEFAULT_SOURCE,
                 machine_info: Path | None = None, unit: str | None = None,
                 replace: bool = False, device: str | None = None) -> Imported:
    """Parse ``files`` and merge them into ``project``'s results tree as results of
    ``commit`` on ``machine``; nothing is written unless everything checks out."""
    store.check_name(machine, "--machine")
    store.check_name(env_name, "--env-name")
    info = read_machine_info(machine, machine_info) if machine_info else None
    sha = project.commit_on_branches(commit)
    records, notes = parse_files(fmt, files, unit, device)
    target = store.Target(project.results_dir, machine, sha, project.commit_date_ms(sha),
                          env_name)
    summary = store.import_records(target, records, replace, info)
    return Imported(summary, len(files), notes)
