"""`torchpulse dashboard`: the main job (torchpulse.dashboard)."""

from __future__ import annotations

import argparse

from torchpulse.analysis.defaults import DEFAULT_NEWEST, FORMATS, REMEASURE_PASSES
from torchpulse.cli.args import (
    add_alert_settings,
    add_config,
    add_machine,
    add_preset,
    alert_settings,
    check_outputs,
    positive_int,
    project,
)
from torchpulse.results.external import ON_CPU, ON_CUDA
from torchpulse.signals import as_interrupts


def cmd_dashboard(args: argparse.Namespace) -> int:
    from torchpulse import dashboard

    check_outputs(args, files=("output", "confirmed"))
    options = dashboard.Options(
        ranges=tuple(args.range), newest=args.newest, preset=args.preset, bench=args.bench,
        machine=args.machine, branch=args.branch, since=args.since,
        publish=not args.no_publish, assets=args.assets, alert_format=args.format,
        alert_output=args.output, ledger=args.confirmed, settings=alert_settings(args))
    with as_interrupts():  # a cancelled CI job (SIGTERM) stops as Ctrl-C does: exit 130
        return dashboard.run(project(args), options,
                             say=lambda line: print(line, flush=True)).exit_code


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dashboard", help="the main job: benchmark recent commits, measure again what was "
        "disturbed, publish the site, print the alert",
        description="Benchmark the newest commits of the project's branch (or RANGE) "
        "with asv, samples recorded and rounds interleaved, skipping commits already "
        f"measured in full; measure again, in at most {REMEASURE_PASSES} passes, the points "
        "the machine canary saw measured on a disturbed machine and the steps seen in one "
        "run only; publish the site; print the alert. Ctrl-C (or a killed asv) rolls back "
        "the results of the run in progress. Exit: 0 no regression, 1 regressions, 2 bad "
        "input, 3 no regression but a benchmark failed to run.",
    )
    p.add_argument("range", nargs="*", metavar="RANGE", help="git ranges to measure, as asv "
                   "run takes them (HEAD~5..HEAD, abc123^!); default: the newest -n commits")
    p.add_argument("-n", "--newest", type=positive_int, default=DEFAULT_NEWEST, metavar="N",
                   help=f"without RANGE, the N newest commits of the branch (default: "
                   f"{DEFAULT_NEWEST}, the fewest that give every series a verdict)")
    add_preset(p, what="size preset of the benchmarks")
    p.add_argument("--bench", metavar="RE", help="benchmarks to run, as asv's --bench "
                   f"(default: every suite that measures on this device: {ON_CPU} on the "
                   f"CPU, {ON_CUDA} on CUDA)")
    add_config(p, "the project to benchmark")
    add_machine(p, "asv machine name (default: this host's)")
    p.add_argument("--branch", help="the branch whose history is measured and judged "
                   "(default: the config's first branch)")
    p.add_argument("--since", metavar="REV", help="the alert reports changes after REV only")
    p.add_argument("--no-publish", action="store_true", help="leave the site as it is")
    p.add_argument("--assets", metavar="DIR", help="node_modules with the site's assets, as "
                   "for publish")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="format of the --output report (the terminal always gets text)")
    p.add_argument("--output", metavar="FILE", help="also write the alert report here")
    p.add_argument("--confirmed", metavar="LEDGER", help="the ledger of steps measured "
                   "twice, read and updated (default: .asv/confirmed.txt beside the config)")
    add_alert_settings(p)
    p.set_defaults(func=cmd_dashboard)
