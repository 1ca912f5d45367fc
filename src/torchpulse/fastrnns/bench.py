"""The fastrnns ``bench`` command's engine and its output formats.

Measuring is ``Workload.measure`` (the same trainbench the asv suites time); this module picks
the runners upstream's flags select, runs them one at a time, and renders the results as
upstream prints them: a stderr table, the one-line OSS JSON and the per-iteration PEP lines.
Every number printed is in milliseconds (upstream's CPU path printed seconds labelled ms).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchpulse.errors import TorchpulseError
from torchpulse.fastrnns.choices import (
    DEFAULT_CNNS,
    DEFAULT_RNNS,
    GROUP_TITLES,
    GROUPS,
    PEP_PREFIX,
    VL_RUNNERS,
)
from torchpulse.fastrnns.fuser import jit_settings
from torchpulse.fastrnns.runners import Runner, Workload, get_runners
from torchpulse.presets import Preset
from torchpulse.timing import Measurement

if TYPE_CHECKING:
    from tqdm import tqdm

COLUMNS = ("name", "avg_fwd", "std_fwd", "info_fwd", "avg_bwd", "std_bwd", "info_bwd")
# upstream flag -> Preset field, for the sizes bench takes on its command line
SIZE_FLAGS = {"seqLength": "seq_length", "numLayers": "num_layers", "inputSize": "input_size",
              "hiddenSize": "hidden_size", "miniBatch": "mini_batch", "seed": "seed",
              "warmup": "warmup", "nloops": "nloops", "imageBatch": "image_batch",
              "imageSize": "image_size"}
# the variable-length runners' length range [minLength, maxLength): upstream's is [30, 100)
LENGTH_FLAGS = ("minLength", "maxLength")


class SelectionError(TorchpulseError, ValueError):
    """Runner names given to the wrong flag."""


@dataclass(frozen=True)
class BenchResult:
    runner: str
    group: str
    forward: Measurement
    backward: Measurement | None  # None: a forward-only runner


@dataclass(frozen=True)
class BenchFailure:
    runner: str
    group: str
    error: str


Outcome = BenchResult | BenchFailure


def select_runners(
    rnns: Sequence[str] | None, cnns: Sequence[str] | None,
    groups: Sequence[str] = GROUPS, variable_lstms: bool = False,
) -> list[Runner]:
    """The runners upstream's flags select, in upstream's order. An empty or absent --rnns or
    --cnns means the defaults; --group decides which of the two lists run at all."""
    chosen: list[Runner] = []
    if variable_lstms:
        chosen += get_runners(VL_RUNNERS)
    if "rnns" in groups:
        runners = get_runners(rnns or DEFAULT_RNNS)
        _same_family(runners, "rnns", "--rnns")
        chosen += runners
    if "cnns" in groups:
        runners = get_runners(cnns or DEFAULT_CNNS)
        _same_family(runners, "cnns", "--cnns")
        chosen += runners
    unique = list({r.name: r for r in chosen}.values())
    order = list(GROUP_TITLES)
    return sorted(unique, key=lambda r: order.index(r.group))  # stable within a group


def _same_family(runners: Iterable[Runner], family: str, flag: str) -> None:
    wrong = [r.name for r in runners if r.family != family]
    if wrong:
        raise SelectionError(f"{', '.join(wrong)} cannot be given to {flag}; it takes "
                             f"{'LSTM' if family == 'rnns' else 'ResNet'} runners only")


def bench_runner(
    runner: Runner, preset: Preset, device: str, nloops: int, warmup: int,
    progress: Callable[[], None] | None = None,
) -> Outcome:
    """Build and time one runner; any exception becomes a BenchFailure naming it."""
    workload = None
    try:
        workload = Workload(runner, preset, device)
        forward, backward = workload.measure(nloops, warmup, progress)
    except Exception as exc:  # a broken runner must not hide the others' results
        return BenchFailure(runner.name, runner.group, describe_error(exc))
    finally:
        if workload is not None:
            workload.close()
    return BenchResult(runner.name, runner.group, forward, backward)


def describe_error(exc: BaseException) -> str:
    """One line: the exception type and the last line of its message (TorchScript errors
    carry a multi-line traceback whose last line is the cause)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1]}" if lines else type(exc).__name__


def with_sizes(preset: Preset, **sizes: int | None) -> Preset:
    """``preset`` with the sizes given on bench's command line (upstream's flag names,
    SIZE_FLAGS, and LENGTH_FLAGS; None: the preset's). SelectionError for a length range
    that is empty."""
    lengths = [sizes.pop(flag, None) for flag in LENGTH_FLAGS]
    changes: dict[str, object] = {SIZE_FLAGS[flag]: value for flag, value in sizes.items()
                                  if value is not None}
    if any(n is not None for n in lengths):
        low, high = (given if given is not None else bound
                     for given, bound in zip(lengths, preset.varlen_bounds, strict=True))
        if low >= high:
            raise SelectionError(f"--minLength {low} must be below --maxLength {high} (the "
                                 "lengths are drawn from [minLength, maxLength))")
        changes["varlen_range"] = (low, high)
    return preset.replace(**changes) if changes else preset


def settle_note(runners: Iterable[Runner], preset: Preset) -> str | None:
    """A note when the warm-up is too short for some runners' times to settle."""
    unsettled = [r.name for r in runners if preset.warmup < r.settle_iterations]
    if not unsettled:
        return None
    return (f"warmup {preset.warmup} is too short for {', '.join(unsettled)} to settle "
            "(measured: 4 iterations for TorchScript, 2 for eager): their first timed "
            "iterations include one-off costs")


def progress_bar(total: int, desc: str) -> tqdm:
    """A progress bar on stderr, drawn only when stderr is a terminal (logs stay clean)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", file=sys.stderr, leave=False,
                disable=None, dynamic_ncols=True)


def _heading(preset: Preset, device: str, fuser: str, executor: str) -> str:
    low, high = preset.varlen_bounds
    return (f"# preset {preset.name} on {device}: seqLength {preset.seq_length}, numLayers "
            f"{preset.num_layers}, inputSize {preset.input_size}, hiddenSize "
            f"{preset.hidden_size}, miniBatch {preset.mini_batch}, images "
            f"{preset.image_batch}x3x{preset.image_size}x{preset.image_size}, variable "
            f"lengths {low} to {high - 1}; fuser "
            f"{fuser}, executor {executor}; warmup {preset.warmup}, nloops "
            f"{preset.nloops}; times in ms per iteration")


def run(runners: Sequence[Runner], preset: Preset, device: str, *, fuser: str = "default",
        executor: str = "default", sep: str = " ",
        table: Callable[[str], None] | None = None,
        failed: Callable[[BenchFailure], None] | None = None) -> list[Outcome]:
    """Time every runner, group by group, under the fuser/executor (FuserError before any
    runner when this torch cannot run them). Upstream's table goes line by line to ``table``
    (None: no table); ``failed`` hears of each runner that failed, as it fails."""
    say = table or (lambda _line: None)
    outcomes: list[Outcome] = []
    with jit_settings(fuser, executor, device):
        say(_heading(preset, device, fuser, executor))
        for group in groups_of(runners):
            say(f"Benchmarking {GROUP_TITLES[group]}s...")
            say(table_header(sep))
            for runner in (r for r in runners if r.group == group):
                with progress_bar(preset.warmup + preset.nloops, runner.name) as bar:
                    outcome = bench_runner(runner, preset, device, preset.nloops,
                                           preset.warmup, bar.update)
                outcomes.append(outcome)
                say(table_row(outcome, sep))
                if isinstance(outcome, BenchFailure) and failed is not None:
                    failed(outcome)
            say("")
    return outcomes


def print_json(outcomes: Sequence[Outcome], runners: Sequence[Runner], kind: str) -> str:
    """What --print-json prints: ``oss`` (one line) or ``pep`` (a line per iteration)."""
    if kind == "oss":
        return format_oss(outcomes, groups_of(runners))
    return "\n".join(pep_lines(outcomes))


def groups_of(runners: Iterable[Runner]) -> list[str]:
    present = {r.group for r in runners}
    return [g for g in GROUP_TITLES if g in present]


# --------------------------------------------------------------------------- formats


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def oss_results(outcomes: Iterable[Outcome], groups: Sequence[str]) -> dict[str, dict[str, float]]:
    """``{group: {runner: mean ms}}`` plus ``<group>-backward``, for every group asked for
    (a group whose runners all failed stays, empty)."""
    results: dict[str, dict[str, float]] = {}
    for group in groups:
        results[group] = {}
        results[f"{group}-backward"] = {}
    for o in outcomes:
        if isinstance(o, BenchResult):
            results[o.group][o.runner] = _ms(o.forward.mean)
            if o.backward is not None:  # upstream prints ~0 for a forward-only runner
                results[f"{o.group}-backward"][o.runner] = _ms(o.backward.mean)
    return results


def format_oss(outcomes: Iterable[Outcome], groups: Sequence[str]) -> str:
    return json.dumps(oss_results(outcomes, groups))


def pep_lines(outcomes: Iterable[Outcome]) -> list[str]:
    """One ``Caffe2Observer {json}`` line per timed iteration, forward groups first."""
    done = [o for o in outcomes if isinstance(o, BenchResult)]
    lines = []
    for group in GROUP_TITLES:
        for suffix, pick in (("", _forward), ("-backward", _backward)):
            for o in (o for o in done if o.group == group and pick(o) is not None):
                metric = f"{group}{suffix}-{o.runner}"
                for sample in pick(o).samples:
                    record = {"type": "NET", "metric": metric, "unit": "ms",
                              "value": str(_ms(sample))}
                    lines.append(PEP_PREFIX + json.dumps(record))
    return lines


def _forward(o: BenchResult) -> Measurement:
    return o.forward


def _backward(o: BenchResult) -> Measurement | None:
    return o.backward


def _fit(text: str, width: int) -> str:
    return text.rjust(width) if len(text) < width else text[:width]


def _num(value: float) -> str:
    return f"{value:.4g}"


def table_header(sep: str = " ", width: int = 16) -> str:
    return sep.join(_fit(c, width) for c in COLUMNS)


def table_row(outcome: Outcome, sep: str = " ", width: int = 16) -> str:
    """Upstream's row; ``info`` holds the median (upstream printed "None" there)."""
    if isinstance(outcome, BenchFailure):
        cells = [outcome.runner, *(["failed"] * (len(COLUMNS) - 1))]
    else:
        f, b = outcome.forward, outcome.backward
        cells = [outcome.runner, _num(_ms(f.mean)), _num(_ms(f.std)), f"med={_num(_ms(f.median))}"]
        if b is None:  # forward only
            cells += ["-", "-", "forward only"]
        else:
            cells += [_num(_ms(b.mean)), _num(_ms(b.std)), f"med={_num(_ms(b.median))}"]
    return sep.join(_fit(c, width) for c in cells)

