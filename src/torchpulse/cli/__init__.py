"""The ``torchpulse`` command line: one module per command group, each a thin layer that
parses, calls one library function, prints and returns an exit code.

    dashboard  dashboard: the main job               (torchpulse.dashboard)
    fastrnns   check, runners, bench, profile         (torchpulse.fastrnns)
    results    import, export, merge, init, record    (torchpulse.results)
    alerts     alert, disturbed, evaluate-detection   (torchpulse.analysis)
    triage     triage accept|invalid|...|list|stats   (torchpulse.results.triage)
    culprit    compare, bisect                        (torchpulse.culprit)
    fleet      fleet run                              (torchpulse.fleet)
    site       publish, serve                         (torchpulse.site)
    autograd   autograd [compare]                     (torchpulse.autograd)
    dynamo     dynamo                                 (torchpulse.compile)

Exit codes (args.py; a contract CI scripts rely on): 0 success, 1 the measured thing failed
or regressed, 2 bad input or usage, always with a one-line message on stderr and never a
traceback: every error a user can cause is a TorchpulseError, caught here. Building the
parser imports neither torch nor scipy, so `--help` is fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from torchpulse import __version__
from torchpulse.cli import (
    alerts,
    autograd,
    culprit,
    dashboard,
    dynamo,
    fastrnns,
    fleet,
    results,
    site,
    triage,
)
from torchpulse.cli.args import EXIT_USAGE, Parser
from torchpulse.errors import TorchpulseError
from torchpulse.text import one_line

GROUPS = (dashboard, fastrnns, results, alerts, triage, culprit, fleet, site, autograd,
          dynamo)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="torchpulse", description="Performance-regression tracking for PyTorch workloads."
    )
    parser.add_argument("--version", action="version", version=f"torchpulse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
        return code
    except TorchpulseError as exc:
        # names from results files, paths, git's words: never an escape sequence, one line
        print(f"torchpulse {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("torchpulse: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left early (`torchpulse runners | head -1`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a process killed by SIGPIPE
