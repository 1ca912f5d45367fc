"""`torchpulse alert | disturbed | evaluate-detection`: regressions found in the results, and
what was measured on a disturbed machine (torchpulse.analysis)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchpulse.analysis.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    FORMATS,
)
from torchpulse.cli.args import (
    EXIT_FAILED,
    EXIT_OK,
    add_alert_settings,
    add_config,
    add_machine,
    add_output,
    add_results_dir,
    alert_settings,
    check_outputs,
    fraction,
    non_negative_int,
    note,
    positive_int,
    project,
    write_output,
)


def cmd_alert(args: argparse.Namespace) -> int:
    from torchpulse import reports
    from torchpulse.analysis import ledger, pipeline
    from torchpulse.reports.phrases import what_text

    check_outputs(args, files=("output",))
    found = pipeline.run(project(args), machine=args.machine, branch=args.branch,
                         since=args.since, settings=alert_settings(args),
                         history_mode=args.history,
                         confirmed=ledger.read_ledger(Path(args.confirmed))
                         if args.confirmed else None)
    write_output(reports.render(found, args.format), args.output)
    if args.output:
        note("alert", f"{len(found.alerts)} {what_text(found)} in {found.series_count} series; "
                      f"report written to {args.output}")
    return EXIT_FAILED if found.regressions and not args.history else EXIT_OK


def cmd_disturbed(args: argparse.Namespace) -> int:
    from torchpulse.analysis import ledger, remeasure

    check_outputs(args, files=("hashfile", "confirm"))
    done = ledger.read_ledger(Path(args.confirm)) if args.confirm else {}
    plan = remeasure.plan(project(args), done=done, confirm_steps=bool(args.confirm),
                          newest=args.newest, since=args.since, machine=args.machine,
                          branch=args.branch, settings=alert_settings(args))
    for line in plan.notes:
        note("disturbed", line)
    if args.hashfile:
        write_output("".join(f"{c}\n" for c in plan.remeasure.commits), args.hashfile,
                     "--hashfile")
    if plan.ledger_changed:
        # recorded before the re-run, so each step is measured again once even when the
        # re-run fails; the stamp (when the measurement it replaces started) keeps the
        # alert from calling a step measured twice unless the second one was stored
        write_output(ledger.ledger_text(plan.ledger), args.confirm, "--confirm")
    if not plan.empty:
        print(plan.remeasure.bench_regex())
    return EXIT_OK


def cmd_evaluate_detection(args: argparse.Namespace) -> int:
    from torchpulse.evaluation import run as evaluation

    check_outputs(args, files=("output",), folders=("keep",))
    options = evaluation.Options(
        commits=args.commits, per_cell=args.per_cell, noise_series=args.noise_series,
        seed=args.seed, alpha=args.alpha, threshold=args.threshold, use_asv=not args.no_asv,
        otava_venv=None if args.no_otava else Path(args.otava_venv),
        keep=Path(args.keep) if args.keep else None,
        families={"both": ("synthetic", "shapes"), "all": ("synthetic", "shapes", "moving")
                  }.get(args.family, (args.family,)),
        shape_commits=args.shape_commits)
    text, met = evaluation.evaluate(
        options, progress=lambda line: print(f"[evaluate-detection] {line}", file=sys.stderr,
                                             flush=True))
    sys.stdout.write(text)
    if args.output:
        write_output(text, args.output)
    return EXIT_OK if met else EXIT_FAILED


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "alert", help="report the regressions still present at the newest commit",
        description="Build one series per benchmark, parameters, machine and environment "
        "from the asv results, in first-parent commit order of the branch, find its change "
        "points and report the regressions still present at the newest commit (with "
        "--history: every change point). Exit 0: none, 1: at least one regression, 2: bad "
        "input. Record samples (asv run --record-samples) for the best detection.",
    )
    add_config(p, "the repository, its branches, the results directory")
    add_results_dir(p)
    add_machine(p, "only this asv machine (default: every machine)")
    p.add_argument("--branch", help="branch whose first-parent history orders the commits "
                   "(default: the config's first branch)")
    p.add_argument("--since", metavar="REV", help="report only changes at commits after REV "
                   "(the older history still sets each series' noise and baseline)")
    p.add_argument("--history", action="store_true",
                   help="list every change point, old and new, up and down (exit 0)")
    p.add_argument("--confirmed", metavar="LEDGER", help="the ledger `torchpulse disturbed "
                   "--confirm` wrote: its steps whose stored measurement is the second one are "
                   "reported as measured twice (default: .asv/confirmed.txt beside the "
                   "config, when it exists)")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default), "
                   "markdown, json or github (workflow annotations)")
    add_output(p, "write the report here (default: stdout)")
    add_alert_settings(p)
    p.set_defaults(func=cmd_alert)

    p = sub.add_parser(
        "disturbed", help="what to measure again: commits measured on a disturbed machine "
        "(and, with --confirm, steps seen in one run only)",
        description="Print the asv --bench expression that re-measures the benchmarks the "
        "machine canary marked disturbed (with the canaries around them), and write their "
        "commits to --hashfile for `asv run HASHFILE:FILE`. With --confirm, also the "
        "benchmarks whose regression rests on a single run, once each. Prints nothing, and "
        "writes an empty file, when there is nothing to measure again. make dashboard uses "
        "it to re-measure once.",
    )
    add_config(p, "the repository, its branches, the results directory")
    add_results_dir(p)
    add_machine(p, "only this asv machine (default: every machine)")
    p.add_argument("--branch", help="branch whose first-parent history orders the commits "
                   "(default: the config's first branch)")
    p.add_argument("--newest", type=positive_int, metavar="N",
                   help="only the newest N commits of the branch (default: all)")
    p.add_argument("--since", metavar="REV", help="only REV and the commits after it (its "
                   "disturbed points; a step, as with alert --since, only after REV)")
    p.add_argument("--hashfile", metavar="FILE", help="write the commits here, one full sha "
                   "a line")
    p.add_argument("--confirm", metavar="LEDGER", help="also the benchmarks whose active "
                   "regression rests on one run (the newest point of its series), to be "
                   "measured once more; LEDGER lists the (commit, benchmark) pairs chosen "
                   "already, which are left out, and the new ones are added to it, each with "
                   "the start of the measurement a second one is to replace")
    add_alert_settings(p)  # --confirm: the steps the alert would report with these
    p.set_defaults(func=cmd_disturbed)

    p = sub.add_parser(
        "evaluate-detection", help="measure how well alerts find planted regressions",
        description="Build a synthetic asv project (a git repository and results with "
        "planted steps, improvements, spikes and pure noise; several samples per commit, "
        "between-run jitter, outliers) in a temporary directory; run torchpulse alert, asv's "
        "publish-time detector and Apache Otava (defaults; in its own virtual environment) "
        "on it; print recall by step size and distance, location accuracy and false alarms "
        "side by side. Exit 1 when torchpulse misses one of its targets.",
    )
    p.add_argument("--commits", type=positive_int, default=60, help="commits per series "
                   "(default: 60)")
    p.add_argument("--per-cell", type=positive_int, default=40, help="series per step size,"
                   " distance and noise level; in the shapes family, per shape and planted "
                   "change (default: 40)")
    p.add_argument("--noise-series", type=positive_int, default=400,
                   help="pure-noise series per noise level (default: 400)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--alpha", type=fraction, default=DEFAULT_ALPHA,
                   help=f"torchpulse alert --alpha (default: {DEFAULT_ALPHA})")
    p.add_argument("--threshold", type=fraction, default=DEFAULT_THRESHOLD,
                   help=f"torchpulse alert --threshold (default: {DEFAULT_THRESHOLD})")
    p.add_argument("--otava-venv", default=".venv-otava", metavar="DIR", help="virtual "
                   "environment for Apache Otava, created when missing (default: .venv-otava)")
    p.add_argument("--no-otava", action="store_true", help="skip Otava")
    p.add_argument("--no-asv", action="store_true", help="skip asv's detector (asv publish)")
    p.add_argument("--family", choices=("both", "synthetic", "shapes", "moving", "all"),
                   default="both",
                   help="which series to judge: the synthetic generator's (steps, noise, "
                   "dips, toggles ...), the shapes it never makes (counts, constants, coarse "
                   "timers, heavy tails, bimodal runs, missing commits, drifts), both of "
                   "those (default), the series that move for other reasons (quotes, random "
                   "walks, smooth trends, AR(1) noise, seasons, outliers and excursions), or "
                   "all three")
    p.add_argument("--shape-commits", type=positive_int, default=100,
                   help="commits per series of the shapes and moving families (default: 100)")
    p.add_argument("--keep", metavar="DIR", help="build the projects in DIR and keep them")
    add_output(p, "also write the tables to FILE")
    p.set_defaults(func=cmd_evaluate_detection)
