"""PyTorch's benchmark database records, "v3" (pytorch/test-infra's
``benchmark.oss_ci_benchmark_v3`` table; what its upload-benchmark-results action takes).

A file is a JSON list of records or one record per line (JSONEachRow). A record is one
metric: ``benchmark {name, mode, dtype, extra_info}``, ``model {name, type, backend,
extra_info}``, ``metric {name, benchmark_values, target_value}``, ``runners [{name, type,
gpu_count, ...}]``, and, once uploaded, ``head_sha``, ``repo``, ``timestamp`` ...

Each record becomes one point of the series (benchmark, model, backend, mode, dtype, device)
x metric, at ``head_sha`` (else ``--commit``) on the machine named by the runner's type (else
``--machine``), with every value of ``benchmark_values`` as a sample. The device is the
record's ``extra_info.device`` (benchmark's, then model's), else cuda when its runner has a
GPU, else cpu. Higher-is-better metrics (``higher_is_better``) are stored as 1/value under
``track_inverse``, so that every series here is lower-is-better; the metric keeps its name.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable
from pathlib import Path

from torchpulse.results.external import PARAM_VALUE
from torchpulse.results.gitrepo import FULL_SHA
from torchpulse.results.importers import InputError, Record, number, param, parse_json

STUB = "pytorch"
# the series' fields, in the order the series parameter names them
FIELDS = ("benchmark", "model", "backend", "mode", "dtype", "device")
# higher is better where the metric's name (lower case, runs of other characters as "_")
# is one of these or contains one of HIGHER_PARTS
HIGHER_NAMES = frozenset({
    "speedup", "pass_rate", "passrate", "accuracy", "throughput", "tps", "qps",
    "compression_ratio", "tokens_per_second", "tokens_per_sec", "token_per_sec",
    "samples_per_second", "samples_per_sec", "images_per_second", "flops", "tflops",
    "gflops", "bandwidth", "memory_bandwidth", "mfu", "hfu",
})
HIGHER_PARTS = ("speedup", "throughput", "_per_second", "_per_sec", "tflops",
                "bandwidth", "pass_rate")


def normalised(metric: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", metric.lower()).strip("_")


def higher_is_better(metric: str, extra: Iterable[str] = ()) -> bool:
    """Whether a larger value of ``metric`` is an improvement (the documented list, plus the
    names given with --higher-is-better)."""
    name = normalised(metric)
    if name in HIGHER_NAMES or name in {normalised(e) for e in extra}:
        return True
    return any(part in name for part in HIGHER_PARTS)


def series_name(fields: dict[str, str]) -> str:
    """The series parameter: ``benchmark=..., model=..., ...`` (empty fields left out)."""
    return ", ".join(f"{k}={fields[k]}" for k in FIELDS if fields.get(k))


def series_fields(series: str) -> dict[str, str]:
    """The inverse of ``series_name``."""
    out = {}
    for part in series.split(", "):
        key, _, value = part.partition("=")
        out[key] = value
    return out


def records_of(path: Path, text: str) -> list[tuple[str, dict]]:
    """(place, record) for each record of a list file or a JSONEachRow file."""
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{path}: empty file")
    if stripped.startswith("["):
        data = parse_json(stripped, str(path))
        if not isinstance(data, list):
            raise InputError(f"{path}: not a JSON list of records")
        return [(f"{path}: record {i + 1}", r) for i, r in enumerate(data)]
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            found.append((f"{path}:{lineno}", parse_json(line, f"{path}:{lineno}")))
    return found


def _object(value: object, place: str, what: str, required: bool = True) -> dict:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{place}: {what} is not an object")
    return value


def _name(value: object, place: str, what: str, required: bool = True) -> str:
    if value is None or value == "":
        if required:
            raise InputError(f"{place}: no {what}")
        return ""
    if not isinstance(value, str) or not PARAM_VALUE.fullmatch(value):
        raise InputError(f"{place}: {what} {str(value)[:60]!r} has characters outside "
                         f"{PARAM_VALUE.pattern} (or is too long)")
    if ", " in value or "=" in value:
        raise InputError(f"{place}: {what} {value!r} holds ', ' or '=', which name the "
                         "parts of a series")
    return value


def _machine(record: dict, place: str) -> str | None:
    runners = record.get("runners")
    if runners is None or runners == []:
        return None
    if not isinstance(runners, list) or not all(isinstance(r, dict) for r in runners):
        raise InputError(f"{place}: runners is not a list of objects")
    kinds = [r.get("type") or r.get("name") for r in runners]
    for kind in kinds:
        if kind is not None and not isinstance(kind, str):
            raise InputError(f"{place}: a runner's type is {type(kind).__name__}, not text")
    types = set(kinds)
    if len(types) != 1:
        return None  # runners of different types: --machine names the one machine
    (kind,) = types
    if not isinstance(kind, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]{1,100}", kind):
        raise InputError(f"{place}: runner type {str(kind)[:60]!r} is no machine name; give "
                         "--machine")
    return kind


def _device(record: dict, place: str) -> str:
    for part in ("benchmark", "model"):
        extra = _object(record.get(part, {}), place, part).get("extra_info")
        if isinstance(extra, dict) and extra.get("device"):
            return _name(extra["device"], place, f"{part}.extra_info.device")
    runners = record.get("runners") or []
    if isinstance(runners, list) and runners:
        gpus = [r.get("gpu_count") for r in runners if isinstance(r, dict)]
        return "cuda" if any(isinstance(g, int) and g > 0 for g in gpus) else "cpu"
    raise InputError(f"{place}: no device (benchmark.extra_info.device, or runners)")


def parse(path: Path, text: str, unit_scale: float | None, notes: list[str] | None = None,
          higher: Iterable[str] = ()) -> list[Record]:
    records: list[Record] = []
    seen: dict[tuple, str] = {}
    for place, raw in records_of(path, text):
        record = _object(raw, place, "the record")
        benchmark = _object(record.get("benchmark"), place, "benchmark")
        model = _object(record.get("model"), place, "model")
        metric = _object(record.get("metric"), place, "metric")
        fields = {
            "benchmark": _name(benchmark.get("name"), place, "benchmark.name"),
            "model": _name(model.get("name"), place, "model.name"),
            "backend": _name(model.get("backend"), place, "model.backend", required=False),
            "mode": _name(benchmark.get("mode"), place, "benchmark.mode", required=False),
            "dtype": _name(benchmark.get("dtype"), place, "benchmark.dtype", required=False),
            "device": _device(record, place),
        }
        name = _name(metric.get("name"), place, "metric.name")
        values = metric.get("benchmark_values")
        if not isinstance(values, list) or not values:
            raise InputError(f"{place}: metric.benchmark_values is not a non-empty list")
        samples = [number(v, place, f"a value of {name}", allow_zero=True) for v in values]
        inverse = higher_is_better(name, higher)
        if inverse:
            if any(v == 0 for v in samples):
                raise InputError(f"{place}: {name} is higher-is-better and has a value of 0, "
                                 "which has no inverse to store")
            samples = [1.0 / v for v in samples]
        sha = record.get("head_sha")
        if sha is not None and (not isinstance(sha, str) or not FULL_SHA.fullmatch(sha)):
            raise InputError(f"{place}: head_sha {str(sha)[:60]!r} is not a full commit sha")
        machine = _machine(record, place)
        series = param(series_name(fields), place, "the series")
        key = (sha, machine, series, name)
        if key in seen:
            raise InputError(f"{place}: {series} / {name} again (first at {seen[key]})")
        seen[key] = place
        value = statistics.median(samples)
        if not math.isfinite(value):
            raise InputError(f"{place}: {name} has no finite value")
        records.append(Record(STUB, "track_inverse" if inverse else "track_value",
                              (series, name), value, tuple(samples), commit=sha,
                              machine=machine))
    if not records:
        raise InputError(f"{path}: no records")
    return records
