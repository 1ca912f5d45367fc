"""Results of a compile-suite run: one ``ModelResult`` per model, the CSV rows the upstream
dynamo harness writes for them, and the summary printed at the end."""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scipy.stats import gmean

from torchpulse.files import write_text_atomically

# upstream's columns (benchmarks/dynamo/common.py): speedup_experiment with compilation
# metrics and dynamo stats, and the accuracy row
PERFORMANCE_HEADERS = ("dev", "name", "batch_size", "speedup", "abs_latency",
                       "compilation_latency", "compression_ratio", "eager_peak_mem",
                       "dynamo_peak_mem", "calls_captured", "unique_graphs", "graph_breaks",
                       "unique_graph_breaks")
ACCURACY_HEADERS = ("dev", "name", "batch_size", "accuracy", "calls_captured", "unique_graphs",
                    "graph_breaks", "unique_graph_breaks")
STATS = ("calls_captured", "unique_graphs", "graph_breaks", "unique_graph_breaks")


@dataclass(frozen=True)
class ModelResult:
    name: str
    status: str  # an accuracy status; "pass" for a performance run that measured
    batch_size: int = 0
    detail: str = ""
    speedup: float = 0.0
    abs_latency_ms: float = 0.0
    compilation_latency: float = 0.0
    compression_ratio: float = 0.0
    eager_peak_mem: float = 0.0  # GB
    dynamo_peak_mem: float = 0.0
    dynamo_stats: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # wall time the model took in the run

    @property
    def passed(self) -> bool:
        return self.status.startswith("pass")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def error_line(exc: BaseException, limit: int = 240) -> str:
    """One line for a failure: the exception and, when it wraps another (as dynamo's errors
    do), the root cause, which is usually what the user needs to see."""
    root = exc
    for _ in range(20):  # chains are short; a cycle must not hang us
        inner = root.__cause__ or root.__context__
        if inner is None:
            break
        root = inner
    line = _first_line(exc)
    if root is not exc:
        line += f" (caused by {_first_line(root)})"
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _cell(value: object) -> str:
    return f"{value:.6f}" if isinstance(value, float) else str(value)


def performance_row(device: str, r: ModelResult) -> list[str]:
    if not r.passed:  # upstream's failure row: zero speedup and latency, padded with "0"
        row = [device, r.name, 0, 0.0, 0.0]
        return [_cell(v) for v in row] + ["0"] * (len(PERFORMANCE_HEADERS) - len(row))
    row = [device, r.name, r.batch_size, r.speedup, r.abs_latency_ms, r.compilation_latency,
           r.compression_ratio, r.eager_peak_mem, r.dynamo_peak_mem]
    row += [r.dynamo_stats.get(k, 0) for k in STATS]
    return [_cell(v) for v in row]


def accuracy_row(device: str, r: ModelResult) -> list[str]:
    row = [device, r.name, r.batch_size, r.status] + [r.dynamo_stats.get(k, 0) for k in STATS]
    return [_cell(v) for v in row]


def to_csv(mode: str, device: str, results: Sequence[ModelResult]) -> str:
    headers, row = ((PERFORMANCE_HEADERS, performance_row) if mode == "performance"
                    else (ACCURACY_HEADERS, accuracy_row))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for r in results:
        writer.writerow(row(device, r))
    return out.getvalue()


def write_csv(path: Path, mode: str, device: str, results: Sequence[ModelResult]) -> None:
    """The whole file, replaced atomically: a reader never sees half a file."""
    write_text_atomically(path, to_csv(mode, device, results))


@dataclass(frozen=True)
class Summary:
    mode: str
    attempted: int
    passed: int
    statuses: dict[str, int]
    geomean_speedup: float | None  # over models that passed (performance)
    mean_compilation_latency: float | None
    mean_compression_ratio: float | None  # over models whose memory was measured

    @property
    def pass_rate(self) -> float:
        return self.passed / self.attempted if self.attempted else math.nan


def summarize(mode: str, results: Sequence[ModelResult]) -> Summary:
    passing = [r for r in results if r.passed]
    measured = passing if mode == "performance" else []
    speedups = [r.speedup for r in measured if r.speedup > 0]
    ratios = [r.compression_ratio for r in measured if r.compression_ratio > 0]
    return Summary(
        mode=mode, attempted=len(results), passed=len(passing),
        statuses=dict(Counter(r.status for r in results)),
        geomean_speedup=float(gmean(speedups)) if speedups else None,
        mean_compilation_latency=(sum(r.compilation_latency for r in measured) / len(measured)
                                  if measured else None),
        mean_compression_ratio=sum(ratios) / len(ratios) if ratios else None,
    )


def format_summary(s: Summary) -> list[str]:
    if not s.attempted:
        return ["no models run"]
    lines = [f"pass rate:              {s.passed}/{s.attempted} ({s.pass_rate:.0%})"]
    others = {k: v for k, v in sorted(s.statuses.items()) if k != "pass"}
    if others:
        lines.append("statuses:               " + ", ".join(f"{k} {v}" for k, v in
                                                            [("pass", s.statuses.get("pass", 0)),
                                                             *others.items()]))
    if s.mode == "performance":
        def show(value: float | None, fmt: str) -> str:
            return "n/a" if value is None else fmt.format(value)

        lines += [
            f"geomean speedup:        {show(s.geomean_speedup, '{:.3f}x')} (models that ran)",
            f"mean compile time:      {show(s.mean_compilation_latency, '{:.2f} s')}",
            f"mean compression ratio: {show(s.mean_compression_ratio, '{:.3f}')} "
            "(eager / compiled peak memory)",
        ]
    return lines
