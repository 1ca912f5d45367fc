"""`torchpulse compare | bisect`: finding the culprit (torchpulse.culprit)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from torchpulse.analysis.defaults import FORMATS, MIN_ROUNDS
from torchpulse.cli.args import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_config,
    add_machine,
    add_output,
    add_thresholds,
    alert_settings,
    check_outputs,
    fraction,
    non_negative_float,
    note,
    positive_int,
    project,
    regular_expression,
    write_output,
)
from torchpulse.results.external import MEASURED

DEFAULT_ALPHA = 0.05
DEFAULT_MAX_RUNS = 20
# two environments: a round times every undecided workload in both (90-105 s for the 72
# on 2 cores), after a first round that also counts them (about 5 minutes): up to 8 rounds,
# as many as fit in 15 minutes (docs/pytorch-builds.md)
DEFAULT_MAX_RUNS_ENVIRONMENTS = 8
DEFAULT_MINUTES_ENVIRONMENTS = 15.0


@contextmanager
def _scratch(args: argparse.Namespace, command: str) -> Iterator[Path]:
    """A scratch folder for asv's runs, removed however the command ends unless
    --keep-scratch; an error from asv then names its log, or how to keep it."""
    from torchpulse.culprit.runs import RunError

    workdir = Path(tempfile.mkdtemp(prefix=f"torchpulse-{command}-"))
    try:
        yield workdir
    except RunError as exc:
        if exc.log is None:
            raise
        where = (f"asv's log: {exc.log}" if args.keep_scratch
                 else "--keep-scratch keeps asv's log")
        raise RunError(f"{exc} ({where})", log=exc.log) from None
    finally:
        if args.keep_scratch:
            note(command, f"scratch results and log kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _runs(args: argparse.Namespace, command: str, bench: str, workdir: Path):
    from torchpulse.culprit.runs import AsvRuns

    if args.max_runs is None:
        args.max_runs = DEFAULT_MAX_RUNS
    if args.max_runs < MIN_ROUNDS:
        raise UsageError(f"--max-runs must be at least {MIN_ROUNDS}, got {args.max_runs}")
    proj = project(args)
    return proj, AsvRuns(proj, bench, workdir, machine=args.machine)


def _triage_notes(proj, found, base: str, head: str, command: str) -> None:  # noqa: ANN001
    """Say what the repository's triage file (``found``, read) says of changes between
    ``base`` (excluded) and ``head``: the comparison itself measures, whatever it says."""
    from torchpulse.reports.phrases import triage_text
    from torchpulse.results import triage

    entries = found.entries
    if not entries:
        return
    position = proj.history().position
    lo, hi = position.get(base), position.get(head)
    if lo is None or hi is None:
        return
    for e in entries:
        if lo < position.get(e.commit, -1) <= hi:
            note(command, f"{triage.FILE}: {e.series} at {e.commit[:12]}: {triage_text(e)}")


def _prepare(runs, command: str) -> None:
    """After the arguments are checked (revisions resolved): asv's scratch config."""
    note(command, "preparing asv")
    runs.prepare()


def cmd_compare(args: argparse.Namespace) -> int:
    if args.gpu and not args.python:
        raise UsageError("--gpu measures two environments on CUDA: give it two --python "
                         "options (a commit's GPU series come from bench_gpu)")
    if args.stored:
        return _compare_stored(args)
    if args.python:  # no asv project of --config: the current folder's is still guarded
        check_outputs(argparse.Namespace(output=args.output), files=("output",))
        return _compare_environments(args)
    check_outputs(args, files=("output",))
    if args.base is None or args.head is None:
        raise UsageError("compare needs BASE and HEAD, or two environments: "
                         "--python A/bin/python --python B/bin/python")
    with _scratch(args, "compare") as workdir:
        return _compare(args, workdir)


def _compare_environments(args: argparse.Namespace) -> int:
    """Two installed environments (two torch builds), workload by workload."""
    import os

    from torchpulse import sizes
    from torchpulse.autograd import choices as autograd_choices
    from torchpulse.culprit.compare import compare
    from torchpulse.culprit.environments import EnvironmentRuns
    from torchpulse.culprit.report import render_environments
    from torchpulse.fastrnns import choices as fastrnns_choices
    from torchpulse.instructions import count, normalised
    from torchpulse.workloads import registry

    if len(args.python) != 2 or args.base is not None:
        raise UsageError("compare two environments with exactly two --python options "
                         "(A, the reference, then B) and no BASE or HEAD")
    if args.max_runs is None:
        args.max_runs = DEFAULT_MAX_RUNS_ENVIRONMENTS
    if args.max_runs < MIN_ROUNDS:
        raise UsageError(f"--max-runs must be at least {MIN_ROUNDS}, got {args.max_runs}")
    for python in args.python:
        if not (os.path.isfile(python) and os.access(python, os.X_OK)):
            raise UsageError(f"--python {python}: not an executable file")
    try:
        workloads = registry.selected(fastrnns_choices, autograd_choices, args.workloads)
    except ValueError as exc:
        raise UsageError(f"--workloads: {str(exc).split(': ', 1)[-1]}") from None
    for python in args.python:  # before any work: each must import torch
        normalised.target(python)
    reuse_in = None if args.no_instructions else count.reuse_folder()
    # on CUDA too: the workloads bench_gpu measures (not the variable-length Python loops,
    # unless asked for by name), at its sizes
    on_gpu = registry.gpu_selected(workloads, None if args.workloads == "default" else "all") \
        if args.gpu else []
    with EnvironmentRuns(dict(zip(("A", "B"), args.python, strict=True)), workloads,
                         sizes.counting(), instructions=not args.no_instructions,
                         log=lambda line: note("compare", line), reuse_in=reuse_in,
                         gpu=on_gpu, gpu_tables=sizes.by_preset()) as runs:
        note("compare", f"{len(workloads)} workloads, B against A, interleaved, up to "
             f"{args.max_runs} runs of each")
        minutes = DEFAULT_MINUTES_ENVIRONMENTS if args.minutes is None else args.minutes
        result = compare(runs, "A", "B", alert_settings(args), max_rounds=args.max_runs,
                         progress=lambda line: note("compare", line),
                         budget=minutes * 60 if minutes else None)
        write_output(render_environments(result, runs, args.format), args.output)
        if args.output and args.format != "text":
            write_output(render_environments(result, runs, "text"), None)
        if args.annotate:
            write_output(render_environments(result, runs, "github"), None)
    return EXIT_FAILED if result.slower else EXIT_OK


def _compare_stored(args: argparse.Namespace) -> int:
    """Two commits from the results stored for them (two recorded torch builds)."""
    from torchpulse.culprit.report import render_stored
    from torchpulse.culprit.stored import compare_stored

    check_outputs(args, files=("output",))
    if args.python or args.base is None or args.head is None:
        raise UsageError("compare --stored needs BASE and HEAD (two recorded commits) and no "
                         "--python")
    if args.max_runs is not None or args.keep_scratch or args.minutes is not None:
        raise UsageError("compare --stored measures nothing: --max-runs, --minutes and "
                         "--keep-scratch do not apply")
    bench = None if args.bench == MEASURED else args.bench
    proj = project(args)
    result = compare_stored(proj, args.base, args.head, machine=args.machine,
                            bench=bench, settings=alert_settings(args))
    _triage_notes(proj, result.triage, result.comparison.base, result.comparison.head,
                  "compare")
    write_output(render_stored(result, args.format), args.output)
    if args.output and args.format != "text":
        write_output(render_stored(result, "text"), None)
    if args.annotate:
        write_output(render_stored(result, "github"), None)
    return EXIT_FAILED if result.comparison.slower else EXIT_OK


def _compare(args: argparse.Namespace, workdir: Path) -> int:
    from torchpulse.culprit.compare import compare
    from torchpulse.culprit.report import render_comparison
    from torchpulse.results import triage

    proj, runs = _runs(args, "compare", args.bench, workdir)
    base, head = runs.resolve(args.base), runs.resolve(args.head)
    said = triage.read(proj.root)
    _triage_notes(proj, said, base, head, "compare")
    _prepare(runs, "compare")
    note("compare", f"{head[:12]} against {base[:12]}, interleaved, up to {args.max_runs} runs "
         "of each (asv builds each commit on its first run)")
    result = compare(runs, base, head, alert_settings(args), max_rounds=args.max_runs,
                     progress=lambda line: note("compare", line),
                     budget=args.minutes * 60 if args.minutes else None,
                     higher_is_better=said.higher_is_better)
    write_output(render_comparison(result, args.format), args.output)
    if args.output and args.format != "text":
        write_output(render_comparison(result, "text"), None)
    if args.annotate:
        write_output(render_comparison(result, "github"), None)
    return EXIT_FAILED if result.slower else EXIT_OK


def cmd_bisect(args: argparse.Namespace) -> int:
    with _scratch(args, "bisect") as workdir:
        return _bisect(args, workdir)


def _bisect(args: argparse.Namespace, workdir: Path) -> int:
    from torchpulse.culprit import probes
    from torchpulse.culprit.bisect import bisect
    from torchpulse.culprit.report import bisection_text
    from torchpulse.culprit.runs import selection
    from torchpulse.results import gitrepo, triage

    proj, runs = _runs(args, "bisect", selection([args.bench]), workdir)
    good, bad = runs.resolve(args.good), runs.resolve(args.bad)
    _triage_notes(proj, triage.read(proj.root), good, bad, "bisect")
    repo = proj.local_repo()
    candidates = gitrepo.first_parent_range(repo, good, bad)
    _prepare(runs, "bisect")

    def filed(probe) -> None:
        if not args.no_store:
            said = probes.store(proj, probe.runs, args.bench, runs.results_dir, runs.workdir)
            note("bisect", f"{probe.commit[:12]}: {said}")

    result = bisect(runs, good, candidates, args.bench, alert_settings(args),
                    max_rounds=args.max_runs, progress=lambda line: note("bisect", line),
                    on_probe=filed)
    subjects = {c: gitrepo.subject(repo, c) for c in result.suspects}
    write_output(bisection_text(result, subjects), None)
    return EXIT_OK if result.found else EXIT_FAILED


def _common(p: argparse.ArgumentParser) -> None:
    add_thresholds(p)
    p.add_argument("--alpha", type=fraction, default=DEFAULT_ALPHA,
                   help=f"chance of a wrong decision, per benchmark (default: {DEFAULT_ALPHA})")
    p.add_argument("--max-runs", type=positive_int, default=None, metavar="N",
                   help=f"runs of each commit before a test gives up as undecided (at least "
                   f"3; default: {DEFAULT_MAX_RUNS}, {DEFAULT_MAX_RUNS_ENVIRONMENTS} for two "
                   "environments)")
    add_machine(p, "asv machine name (default: asv's, the host name)")
    add_config(p, "the repository, its environments and suites")
    p.add_argument("--keep-scratch", action="store_true",
                   help="keep the scratch folder (asv's results of the runs and its log), "
                   "which is otherwise removed however the command ends")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="is HEAD slower than BASE? interleaved runs until each benchmark is "
        "decided",
        description="Build and install both commits with asv and run the selected benchmarks "
        "interleaved (BASE, HEAD, HEAD, BASE, ..., each run in fresh processes), adding runs "
        "until a sequential test decides each benchmark: slower or faster beyond the "
        "threshold, equivalent within it, or undecided at --max-runs. Prints the ratio "
        "head/base with its interval and the runs used. Exit 1 when a benchmark is decided "
        "slower, 0 otherwise, 2 for bad input. Needs no stored history. With two --python "
        "options instead of BASE and HEAD, compares two installed environments (two torch "
        "builds) on this machine: every workload's instructions counted in each, its wall "
        "time timed in fresh processes of each, alternating, and its peak memory "
        "(docs/pytorch-builds.md).",
    )
    p.add_argument("base", metavar="BASE", nargs="?",
                   help="the reference commit (any git revision)")
    p.add_argument("head", metavar="HEAD", nargs="?", help="the commit under test")
    p.add_argument("--python", action="append", metavar="PYTHON",
                   help="an environment's interpreter, twice: A (the reference), then B; "
                   "each must import torch (this torchpulse's workloads run in both)")
    p.add_argument("--stored", action="store_true",
                   help="compare BASE and HEAD from the results already stored for them "
                   "(two `torchpulse record`ed builds), measuring nothing: counts decide from "
                   "one value a side, timed series from their stored samples; no five-commit "
                   "wait as in the alert")
    p.add_argument("--workloads", metavar="WHICH", default="default",
                   help="with --python: default (74 of the 80 CPU workloads), all, core, or "
                   "comma-separated patterns of workload names (rnns/*,autograd/resnet18/*)")
    p.add_argument("--gpu", action="store_true",
                   help="with --python, on a CUDA machine: measure the workloads on the GPU "
                   "too, as bench_gpu does (kernel time, decided by --device-threshold; the "
                   "kernels and host synchronizations a call makes, exact; GPU memory), and "
                   "name the kernels behind a moved kernel time")
    p.add_argument("--no-instructions", action="store_true",
                   help="with --python: time the workloads only (counting needs valgrind "
                   "and a C compiler; it takes about 3 minutes an environment on 2 cores)")
    p.add_argument("--bench", default=MEASURED, metavar="RE", type=regular_expression,
                   help="asv --bench regular expression (default: every suite but the stubs "
                   "of imported results)")
    p.add_argument("--minutes", type=non_negative_float, default=None, metavar="M",
                   help="a time budget: after the second round, --max-runs is lowered to the "
                   "rounds that fit in M minutes (from how long that round took; never below "
                   f"3); 0 for none (default: {DEFAULT_MINUTES_ENVIRONMENTS:g} with --python, "
                   "none otherwise)")
    _common(p)
    p.add_argument("--format", choices=FORMATS, default="text",
                   help=f"report format: {', '.join(FORMATS)} (default: text)")
    add_output(p, "write the report to FILE (the text report still goes to stdout)")
    p.add_argument("--annotate", action="store_true",
                   help="also print GitHub annotations (for Actions) after the report")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "bisect", help="find the first commit between GOOD and BAD that changed a benchmark",
        description="Binary search over the first-parent commits after GOOD up to BAD. Each "
        "probe is measured interleaved with GOOD and BAD until a sequential test puts it on "
        "one side; the error budget --alpha is split over the expected probes. A probe "
        "still undecided at --max-runs ends the search with the range that holds the "
        "culprit: never a guess. Probe measurements are filed in the results tree (commits "
        "on a configured branch, never replacing a stored value). Exit 0 when the commit "
        "is found, 1 when not (no step between GOOD and BAD, or undecided), 2 for bad input.",
    )
    p.add_argument("good", metavar="GOOD", help="a commit with the old performance")
    p.add_argument("bad", metavar="BAD", help="a later commit with the new performance")
    p.add_argument("--bench", required=True, metavar="NAME",
                   help="one benchmark, with its parameters for a parameterised one, as asv "
                   "names it: bench_lstm.LSTM.time_forward('cpu', 'aten')")
    _common(p)
    p.add_argument("--no-store", action="store_true",
                   help="do not file the probes' measurements in the results tree")
    p.set_defaults(func=cmd_bisect)
