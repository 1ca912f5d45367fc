"""`torchpulse fleet run`: a range measured on Ray nodes (torchpulse.fleet)."""

from __future__ import annotations

import argparse
import sys

from torchpulse.cli.args import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_config,
    add_results_dir,
    note,
    project,
)


def cmd_fleet(args: argparse.Namespace) -> int:
    try:
        import ray  # noqa: F401
    except ImportError:
        raise UsageError("Ray is not installed: pip install 'torchpulse[fleet]'") from None
    from torchpulse.fleet import driver, plan
    from torchpulse.fleet.node import machine_name
    from torchpulse.results.store import check_name
    from torchpulse.text import printable

    if args.identical and not args.machine_class:
        raise UsageError("--identical needs --machine-class: only a class can say its "
                         "machines are the same")
    if args.machine_class is not None:
        check_name(args.machine_class, "--machine-class")
    proj = project(args)
    shards = plan.plan(proj, args.range, args.bench)
    commits = len(shards[0].commits)
    where = f"the Ray cluster at {args.address}" if args.address else \
        "an embedded Ray instance on this machine (one measurement slot)"
    note("fleet", f"{commits} commit(s) x {len(shards)} benchmark group(s) "
         f"({', '.join(s.group for s in shards)}) on {where}")
    local = machine_name({}, args.machine) if args.machine else None
    summary = driver.run(proj, shards, address=args.address, machine_class=args.machine_class,
                         identical=args.identical, local_machine=local,
                         say=lambda line: note("fleet", printable(line)))
    machines = ", ".join(sorted(summary.machines)) or "none"
    print(f"fleet: {summary.measured} measured, {summary.skipped} already stored, "
          f"{summary.empty} with nothing selected, {summary.requeued} re-queued after lost "
          f"nodes; machines: {machines}; results in {proj.results_dir}", flush=True)
    for line in summary.failed:
        print(f"torchpulse fleet: failed: {printable(line)}", file=sys.stderr)
    return EXIT_FAILED if summary.failed else EXIT_OK


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fleet", help="measure a range on a Ray cluster (or an embedded one) into results/",
        description="`torchpulse fleet run RANGE`: one shard per benchmark group (a module "
        "of the benchmark directory), each measured on one node over the whole range with "
        "asv, one measurement per node at a time; each commit's results are merged into the "
        "results tree as they arrive (all or nothing). A node lost mid-shard costs only its "
        "unfinished commits, which go to another node; a re-run skips what is stored. "
        "Exit 1 when a shard failed, 2 for bad input.",
    )
    actions = p.add_subparsers(dest="action", metavar="run", required=True)
    r = actions.add_parser("run", help="measure RANGE (asv's syntax: A..B, C^!, a branch)")
    r.add_argument("range", metavar="RANGE")
    r.add_argument("--address", metavar="ADDR", help="a Ray cluster to join (ray start "
                   "--head prints it; 'auto' for the one this machine belongs to); default: "
                   "an embedded Ray instance with one measurement slot")
    r.add_argument("--bench", metavar="RE", help="only benchmarks whose names match (asv's "
                   "--bench); default: every group but the imported results' stubs")
    r.add_argument("--machine-class", metavar="NAME", help="only nodes started with the "
                   "resource torchpulse_class_NAME (a GPU model, say)")
    r.add_argument("--identical", action="store_true", help="the class's nodes are the same "
                   "machine: stored as one machine named after the class, commits spread "
                   "over them (needs --machine-class)")
    r.add_argument("--machine", metavar="NAME", help="embedded instance: this machine's "
                   "name in results/ (default: the host name, as asv's)")
    add_config(r, "the repository, its branches and the results directory")
    add_results_dir(r)
    r.set_defaults(func=cmd_fleet)
