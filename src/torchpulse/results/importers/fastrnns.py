"""fastrnns ``bench --print-json oss`` (one line of means) and ``pep`` (a line per iteration)."""

from __future__ import annotations

import statistics
from pathlib import Path

from torchpulse.fastrnns.choices import GROUP_TITLES, PEP_PREFIX
from torchpulse.results.importers import InputError, Record, number, param, parse_json, where

GROUPS = tuple(GROUP_TITLES)  # upstream's JSON groups


def _metric(group_key: str) -> tuple[str, str] | None:
    """'lstm-backward' -> ('lstm', 'time_backward'); None for an unknown group."""
    for group in GROUPS:
        if group_key == group:
            return group, "time_forward"
        if group_key == f"{group}-backward":
            return group, "time_backward"
    return None


def _groups() -> str:
    return ", ".join(g + s for g in GROUPS for s in ("", "-backward"))


def parse_oss(path: Path, text: str, unit_scale: float | None,
              notes: list[str] | None = None) -> list[Record]:
    scale = 1e-3 if unit_scale is None else unit_scale
    lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise InputError(f"{path}: empty file; expected one line of JSON")
    if len(lines) > 1:
        raise InputError(f"{where(path, lines[1][0])}: more than one line; the OSS format is "
                         "exactly one line of JSON")
    lineno, line = lines[0]
    place = where(path, lineno)
    data = parse_json(line, place)
    if not isinstance(data, dict) or not data:
        raise InputError(f"{place}: expected a non-empty object {{group: {{runner: ms}}}}")
    records: list[Record] = []
    seen: dict[tuple[str, str], str] = {}
    for group_key, runners in data.items():
        metric = _metric(group_key)
        if metric is None:
            raise InputError(f"{place}: unknown group {group_key!r}; expected one of {_groups()}")
        if not isinstance(runners, dict):
            raise InputError(f"{place}: group {group_key!r} is not an object of runner: ms")
        for runner, value in runners.items():
            name = param(runner, place, "runner")
            ms = number(value, place, f"{group_key}/{name}")
            key = (name, metric[1])
            if key in seen:
                raise InputError(f"{place}: runner {name!r} appears in {seen[key]!r} and "
                                 f"{group_key!r}")
            seen[key] = group_key
            records.append(Record("fastrnns", metric[1], (name,), ms * scale))
    if not records:
        raise InputError(f"{place}: no runner results in any group")
    return records


def parse_pep(path: Path, text: str, unit_scale: float | None,
              notes: list[str] | None = None) -> list[Record]:
    scale = 1e-3 if unit_scale is None else unit_scale
    samples: dict[tuple[str, str], list[float]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith(PEP_PREFIX):
            continue  # other log output
        place = where(path, lineno)
        record = parse_json(line[len(PEP_PREFIX):], place,
                            f"JSON after {PEP_PREFIX.strip()}")
        if not isinstance(record, dict):
            raise InputError(f"{place}: expected a JSON object after {PEP_PREFIX.strip()}")
        missing = [k for k in ("type", "metric", "unit", "value") if k not in record]
        if missing:
            raise InputError(f"{place}: missing {', '.join(missing)}")
        if record["type"] != "NET":
            raise InputError(f"{place}: type {record['type']!r}, expected 'NET'")
        if record["unit"] != "ms":
            raise InputError(f"{place}: unit {record['unit']!r}, expected 'ms' (use --unit s "
                             "for upstream CPU files, which print seconds labelled ms)")
        metric_name = record["metric"]
        if not isinstance(metric_name, str):
            raise InputError(f"{place}: metric is not a string")
        group_key, runner = _split_metric(metric_name, place)
        metric = _metric(group_key)
        assert metric is not None
        name = param(runner, place, "runner")
        value = number(record["value"], place, f"value of {metric_name}", from_string=True)
        samples.setdefault((name, metric[1]), []).append(value * scale)
    if not samples:
        raise InputError(f"{path}: no '{PEP_PREFIX.strip()} {{...}}' lines")
    return [Record("fastrnns", method, (runner,), statistics.median(values), tuple(values))
            for (runner, method), values in samples.items()]


def _split_metric(metric: str, place: str) -> tuple[str, str]:
    # longest group first: "lstm-backward-cudnn" is lstm-backward's, not lstm's
    for group in sorted((g + s for g in GROUPS for s in ("-backward", "")), key=len,
                        reverse=True):
        if metric.startswith(group + "-") and len(metric) > len(group) + 1:
            return group, metric[len(group) + 1:]
    raise InputError(f"{place}: metric {metric!r} is not <group>-<runner> with group one of "
                     f"{_groups()}")
