"""`torchpulse triage`: the repository's word on its alerts, kept in torchpulse.toml beside
asv.conf.json (torchpulse.results.triage), which every view honours (the alert, the site,
the dashboard's gate): mark a change accepted, invalid, infrastructure, investigating or
fixed; list and remove entries; count the false alarms users marked. It writes that one
file, all or nothing, and never touches results."""

from __future__ import annotations

import argparse
import sys

from torchpulse.cli.args import (
    EXIT_OK,
    UsageError,
    add_alert_settings,
    add_config,
    add_results_dir,
    alert_settings,
    note,
    positive_int,
    project,
)

MARKING = ("accepted", "invalid", "infrastructure", "investigating", "fixed")
VERBS = {"accept": "accepted", "invalid": "invalid", "infrastructure": "infrastructure",
         "investigating": "investigating", "fixed": "fixed"}


def _series_names(proj, history) -> set[tuple[str, str]]:  # noqa: ANN001 (Project, History)
    """(name, machine) of every series stored for the branch's ``history``."""
    from torchpulse.analysis.series import load_series
    from torchpulse.results import index as results_index

    where = results_index.location(proj.root, proj.results_dir)
    series, _ = load_series(proj.results_dir, history, None, index=where)
    return {(s.key.name, s.key.machine) for s in series}


def _commit(proj, history, rev: str, option: str) -> str:  # noqa: ANN001
    from torchpulse.results.gitrepo import GitError

    try:
        sha = proj.resolve(rev)
    except GitError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if sha not in history.position:
        raise UsageError(f"{option}: commit {sha[:12]} is not on the first-parent history of "
                         f"{proj.default_branch}: no series has a point there")
    return sha


def cmd_mark(args: argparse.Namespace) -> int:
    from torchpulse.results import triage

    proj = project(args)
    history = proj.history()  # the branch's whole first-parent history: read once
    state = VERBS[args.action]
    sha = _commit(proj, history, args.commit, "COMMIT")
    fixed_by = _commit(proj, history, args.fixed_by, "--fixed-by") if args.fixed_by else ""
    through = _commit(proj, history, args.through, "--through") if args.through else ""
    if through and history.position[through] <= history.position[sha]:
        raise UsageError(f"--through: {through[:12]} is not after {sha[:12]} on the "
                         "first-parent history")
    new = triage.entry(args.series, sha, state, args.note, args.machine, fixed_by,
                       "torchpulse triage", through)
    covered = sum(new.covers(name, machine)
                  for name, machine in _series_names(proj, history))
    if not covered:
        raise UsageError(f"{args.series!r} (machine {args.machine!r}) matches no stored "
                         "series: give a series as `torchpulse alert` names it, or a glob "
                         "such as 'bench_rnns.*'")
    with triage.editing(proj.root, lambda: note("triage", "waiting for another edit of "
                                                f"{triage.FILE}")) as editor:
        done = editor.put(new)
    note("triage", f"{done} {state} for {covered} series at {sha[:12]} in "
                   f"{triage.path_of(proj.root)}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from torchpulse.reports import triage as words
    from torchpulse.results import triage

    proj = project(args)
    found = triage.read(proj.root)
    sys.stdout.write(words.entries_json(found) if args.format == "json"
                     else words.entries_text(found, str(triage.path_of(proj.root))))
    return EXIT_OK


def cmd_remove(args: argparse.Namespace) -> int:
    from torchpulse.results import triage

    proj = project(args)
    with triage.editing(proj.root, lambda: note("triage", "waiting for another edit of "
                                                f"{triage.FILE}")) as editor:
        gone = editor.remove(args.number)
    note("triage", f"removed entry {args.number}: {gone.state} {gone.series} at "
                   f"{gone.commit[:12]}")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    from torchpulse.analysis import pipeline
    from torchpulse.analysis import triage as applied
    from torchpulse.reports import triage as words

    settings = alert_settings(args)
    report = pipeline.run(project(args), machine=args.machine, settings=settings)
    thresholds = {rule: settings.threshold_for(rule)
                  for rule in ("time", "count", "device", "exact")}
    marks = list(report.marks)
    render = words.stats_json if args.format == "json" else words.stats_text
    sys.stdout.write(render(marks, applied.tally(marks), applied.suggest(marks), thresholds))
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "triage", help="mark changes accepted, invalid, infrastructure, investigating or "
        "fixed (torchpulse.toml); list, remove, count false alarms",
        description="Keep the team's word on its alerts in torchpulse.toml beside the asv "
        "config, where pull requests review it: an accepted change's new level is the "
        "baseline from its commit on (the same step never alerts again, a further rise "
        "does); an invalid or infrastructure one is taken out of every series it covers; "
        "investigating is shown and still gates; fixed is shown once the level is back. "
        "The file also holds per-benchmark thresholds ([[benchmark]] match, threshold, "
        "ignore). Writes that one file, all or nothing; never touches results.")
    verbs = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for verb, state in VERBS.items():
        m = verbs.add_parser(verb, help=f"mark a change {state}",
                             description=f"Mark the change at COMMIT in the series SERIES "
                             f"covers as {state}.")
        m.add_argument("series", metavar="SERIES", help="a series as `torchpulse alert` names "
                       "it ('bench_rnns.LSTM.time_forward(...)'), or a glob over those names "
                       "('bench_rnns.*', '*' for every series of --machine)")
        m.add_argument("commit", metavar="COMMIT", help="the commit the change is at (the "
                       "alert's 'at'; any revision git resolves)")
        m.add_argument("--machine", default="*", metavar="GLOB",
                       help="only series measured on these asv machines (default: every one)")
        m.add_argument("--note", default="", help="why: shown beside the change everywhere")
        m.add_argument("--through", metavar="COMMIT", help="every change from COMMIT through "
                       "this one (an alert that names several culprits)")
        m.add_argument("--fixed-by", metavar="COMMIT", required=verb == "fixed",
                       help="the commit that fixed it" + (" (required)" if verb == "fixed"
                                                          else " (only with fixed)"))
        add_config(m, "the project whose torchpulse.toml is edited")
        add_results_dir(m)
        m.set_defaults(func=cmd_mark)
    m = verbs.add_parser("list", help="print the entries and benchmark rules")
    m.add_argument("--format", choices=("text", "json"), default="text")
    add_config(m, "the project whose torchpulse.toml is read")
    m.set_defaults(func=cmd_list)
    m = verbs.add_parser("remove", help="remove one entry (its number in `triage list`)")
    m.add_argument("number", type=positive_int, metavar="N")
    add_config(m, "the project whose torchpulse.toml is edited")
    m.set_defaults(func=cmd_remove)
    m = verbs.add_parser(
        "stats", help="false alarms users marked, per kind and machine, and the threshold "
        "that would have kept them quiet",
        description="Count the rises the detector reported that the triage file marks, by "
        "state, per kind of series and machine (invalid and infrastructure: false alarms as "
        "users judged them), and suggest per kind the threshold just above the largest "
        "false alarm when it stays below the smallest accepted, investigating or fixed "
        "change.")
    m.add_argument("--machine", metavar="NAME", help="only this asv machine")
    m.add_argument("--format", choices=("text", "json"), default="text")
    add_config(m, "the project whose results and torchpulse.toml are read")
    add_results_dir(m)
    add_alert_settings(m)
    m.set_defaults(func=cmd_stats)
