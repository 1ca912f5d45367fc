"""fastrnns ``bench --print-json oss`` (one line of means) and ``pep`` (a line per iteration).

Neither says its unit truthfully: upstream's CUDA path and torchpulse print milliseconds,
upstream's CPU path prints seconds under the same "ms" label. The unit comes from ``--unit``,
or from the values where only one unit is possible (see ``_scale``); otherwise the import
stops and asks, rather than store values 1000x off.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from torchpulse.fastrnns.choices import FORWARD_ONLY, GROUP_TITLES, PEP_PREFIX
from torchpulse.results.importers import InputError, Record, number, param, parse_json, where

GROUPS = tuple(GROUP_TITLES)  # upstream's JSON groups
# one iteration of these workloads never takes under 10 us (one operator call costs more)
# nor over a minute: a value outside either bound settles the unit
MIN_MS = 0.01
MAX_S = 60.0
HOW_TO_SAY = ("pass --unit ms (torchpulse bench, upstream on CUDA) or --unit s (upstream's "
              "CPU path, which prints seconds labelled ms)")


def _scale(path: Path, values: list[float], unit_scale: float | None,
           notes: list[str] | None) -> float:
    """The factor from the file's numbers to seconds: ``unit_scale`` when given, else the
    only unit the values allow, said in ``notes``; InputError when both (or neither) fit."""
    if unit_scale is not None or not values:
        return 1e-3 if unit_scale is None else unit_scale
    low, high = min(values), max(values)
    as_ms, as_s = low >= MIN_MS, high <= MAX_S
    if as_ms and not as_s:
        if notes is not None:
            notes.append(f"{path}: values read as ms (assumed: the largest, {high:g}, would "
                         "be over a minute per iteration in seconds; --unit overrides)")
        return 1e-3
    if as_s and not as_ms:
        if notes is not None:
            notes.append(f"{path}: values read as s (assumed: the smallest, {low:g}, would "
                         "be under 10 us per iteration in ms; --unit overrides)")
        return 1.0
    fits = "fit both ms and s" if as_ms else "fit neither ms nor s per iteration"
    raise InputError(f"{path}: the file does not say its unit and its values ({low:g} to "
                     f"{high:g}) {fits}; {HOW_TO_SAY}")


def _forward_only_backward(name: str, method: str, place: str,
                           notes: list[str] | None) -> bool:
    """Upstream writes a backward "time" for a forward-only runner (the gap between two
    timer reads with nothing between them): not a measurement, left out with a note."""
    if method != "time_backward" or name not in FORWARD_ONLY:
        return False
    if notes is not None and not any(n.startswith(place) and name in n for n in notes):
        notes.append(f"{place}: {name} backward left out: the runner is forward only, "
                     "upstream times nothing there")
    return True


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
    values: list[tuple[str, str, float]] = []
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
            if not _forward_only_backward(name, metric[1], place, notes):
                values.append((name, metric[1], ms))
    if not seen:
        raise InputError(f"{place}: no runner results in any group")
    if not values:
        raise InputError(f"{place}: only forward-only runners' backward values")
    scale = _scale(path, [v for _, _, v in values], unit_scale, notes)
    return [Record("fastrnns", method, (name,), v * scale) for name, method, v in values]


def parse_pep(path: Path, text: str, unit_scale: float | None,
              notes: list[str] | None = None) -> list[Record]:
    samples: dict[tuple[str, str], list[float]] = {}
    found = False  # a forward-only runner's backward line, left out
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
        if _forward_only_backward(name, metric[1], str(path), notes):
            found = True
            continue
        samples.setdefault((name, metric[1]), []).append(value)
    if not samples:
        if found:
            raise InputError(f"{path}: only forward-only runners' backward lines")
        raise InputError(f"{path}: no '{PEP_PREFIX.strip()} {{...}}' lines")
    # the unit is settled by each series' median, as one slow iteration proves nothing
    scale = _scale(path, [statistics.median(v) for v in samples.values()], unit_scale, notes)
    return [Record("fastrnns", method, (runner,), statistics.median(values) * scale,
                   tuple(v * scale for v in values))
            for (runner, method), values in samples.items()]


def _split_metric(metric: str, place: str) -> tuple[str, str]:
    # longest group first: "lstm-backward-cudnn" is lstm-backward's, not lstm's
    for group in sorted((g + s for g in GROUPS for s in ("-backward", "")), key=len,
                        reverse=True):
        if metric.startswith(group + "-") and len(metric) > len(group) + 1:
            return group, metric[len(group) + 1:]
    raise InputError(f"{place}: metric {metric!r} is not <group>-<runner> with group one of "
                     f"{_groups()}")
