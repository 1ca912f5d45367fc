"""``torchpulse dynamo``: run the selected models one by one in a worker process, print a line
per model as it finishes, keep the CSV up to date after each, and end with the summary."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchpulse.compile import config
from torchpulse.compile.providers import available_models
from torchpulse.compile.report import ModelResult, format_summary, summarize, write_csv
from torchpulse.compile.run import make_job, select
from torchpulse.compile.worker import Worker
from torchpulse.errors import TorchpulseError


@dataclass(frozen=True)
class Options:
    mode: str  # performance | accuracy
    training: bool
    backend: str
    device: str
    size: str
    output: Path
    filters: Sequence[str] = ()
    excludes: Sequence[str] = ()
    repeat: int = 30
    batch_size: int | None = None
    timeout: float = 600.0
    zoo_config: Path | None = None
    skip_slow: bool = False
    no_skip: bool = False
    models_from: Sequence[str] = ()
    threads: int | None = None


class OutputError(TorchpulseError, ValueError):
    """An output path that cannot take the CSV."""


def default_output(mode: str, training: bool, backend: str, device: str) -> Path:
    kind = "training" if training else "inference"
    return Path(f"torchpulse_{backend}_{kind}_{device}_{mode}.csv")


def output_for(output: Path | None, mode: str, training: bool, backend: str,
               device: str) -> Path:
    """``output``, else the default name, checked to be a file in an existing directory."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    path = output or default_output(mode, training, backend, kind)
    if path.is_dir() or not path.parent.is_dir():
        raise OutputError(f"--output {path}: not a file in an existing directory")
    return path


def list_models(zoo_config: Path | None = None, models_from: Sequence[str] = ()) -> list[str]:
    """A line per model (zoo, providers, ``models_from``): its source, description and what
    the config says of it."""
    cfg = config.load(zoo_config)
    models = available_models(models_from)
    cfg.check_names(models)
    lines = []
    for name, spec in models.items():
        notes = [reason for device in ("cpu", "cuda")
                 if (reason := cfg.skip_reason(name, device, skip_slow=True))]
        if name in cfg.non_deterministic:
            notes.append("non_deterministic")
        extra = f"  [{'; '.join(dict.fromkeys(notes))}]" if notes else ""
        lines.append(f"{name:24s} {spec.source:12s} {spec.description}{extra}")
    return lines


def _line(device: str, kind: str, r: ModelResult, mode: str, place: str) -> str:
    head = f"{place} {device:4s} {kind:5s} {r.name:24s}"
    if mode == "performance" and r.passed:
        return (f"{head} {r.speedup:7.3f}x  {r.abs_latency_ms:9.3f} ms  compile "
                f"{r.compilation_latency:6.2f} s  memory {r.compression_ratio:.2f}x")
    detail = f"  ({r.detail})" if r.detail and not r.passed else ""
    return f"{head} {r.status}{detail}"


def run(options: Options, out: Callable[[str], None] = print) -> list[ModelResult]:
    """Run the models, writing ``options.output`` after each; the results in run order.
    Bad input (config, models file, filters) raises TorchpulseError before anything
    runs or is written."""
    cfg = config.load(options.zoo_config)
    models = available_models(options.models_from)
    cfg.check_names(models)
    chosen, skipped = select(models, cfg, options.device, options.filters, options.excludes,
                             options.skip_slow, options.no_skip)
    kind = "train" if options.training else "eval"
    out(f"== {options.mode}, {'training' if options.training else 'inference'}, backend "
        f"{options.backend}, {options.device}, size {options.size}: {len(chosen)} model(s)"
        + (f", {len(skipped)} left out" if skipped else ""))
    for name, reason in skipped:
        out(f"   left out {name}: {reason}")
    results: list[ModelResult] = []
    with Worker(options.models_from, options.threads) as worker:
        for i, name in enumerate(chosen, 1):
            job = make_job(models[name], cfg, options.mode, options.training, options.backend,
                           options.device, options.size, options.repeat, options.batch_size)
            result = worker.run(job, options.timeout)
            results.append(result)
            place = f"[{i}/{len(chosen)}]".rjust(2 * len(str(len(chosen))) + 3)
            out(_line(options.device, kind, result, options.mode, place))
            write_csv(options.output, options.mode, options.device, results)
    out(f"== summary ({options.output})")
    for line in format_summary(summarize(options.mode, results)):
        out("   " + line)
    return results
