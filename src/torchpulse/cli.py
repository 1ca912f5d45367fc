"""The ``torchpulse`` command line.

Exit codes (a contract CI scripts rely on): 0 success, 1 a failed check or a regression,
2 bad input or usage, always with a one-line message on stderr and never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from torchpulse import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit code 2."""


def _device(name: str | None) -> str:
    import torch

    from torchpulse.presets import default_device

    device = name or default_device()
    try:
        kind = torch.device(device).type
    except RuntimeError:  # torch rejects unknown device strings with RuntimeError
        kind = None
    if kind not in ("cpu", "cuda"):
        raise UsageError(f"unsupported device {device!r}; use cpu or cuda")
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but CUDA is not available here")
    return device


def cmd_check(args: argparse.Namespace) -> int:
    from torchpulse import check
    from torchpulse.presets import resolve_preset
    from torchpulse.runners import get_runners

    device = _device(args.device)
    preset = resolve_preset(args.preset, device)
    checkable = check.checkable_runners()
    names = args.rnns or checkable
    runners = get_runners(names)
    unchecked = [r.name for r in runners if r.reference is None]
    if unchecked:
        verb = "is a reference" if len(unchecked) == 1 else "are references"
        raise UsageError(
            f"{', '.join(unchecked)} {verb}, not checked against one; "
            f"checkable runners: {', '.join(checkable)}"
        )
    if not args.tolerance > 0:
        raise UsageError("--tolerance must be positive")
    print(f"# preset {preset.name} on {device}, tolerance {args.tolerance:g} on "
          "max|difference| / max(1, max|reference|)", flush=True)
    print(check.format_header(), flush=True)
    failures = 0
    for result in check.run_checks(runners, preset, device, args.tolerance):
        print(check.format_row(result), flush=True)
        failures += not result.ok
    if failures:
        print(f"torchpulse check: {failures} of {len(runners)} runners failed", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_runners(args: argparse.Namespace) -> int:
    from torchpulse.runners import RUNNERS

    for runner in RUNNERS.values():
        print(f"{runner.name:<20} {runner.group:<8} {runner.description}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchpulse", description="Performance-regression tracking for PyTorch workloads."
    )
    parser.add_argument("--version", action="version", version=f"torchpulse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser(
        "check", help="check the custom LSTM runners against their references",
        description="Compare each custom LSTM runner with its reference (same seed and "
        "weights) on outputs and all parameter gradients; exit 1 on a mismatch.",
    )
    check.add_argument("--preset", help="size preset: cuda, cpu or smoke "
                       "(default: $TORCHPULSE_PRESET, else by device)")
    check.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    check.add_argument("--rnns", nargs="+", metavar="NAME",
                       help="runners to check (default: all checkable)")
    check.add_argument("--tolerance", type=float, default=1e-3,
                       help="largest max|difference| / max(1, max|reference|) allowed "
                       "(default: 1e-3, upstream's absolute threshold)")
    check.set_defaults(func=cmd_check)

    runners = sub.add_parser("runners", help="list the workload runners",
                             description="List every runner with its group and description.")
    runners.set_defaults(func=cmd_runners)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from torchpulse.presets import UnknownPresetError
    from torchpulse.runners import UnknownRunnerError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, UnknownRunnerError, UnknownPresetError) as exc:
        print(f"torchpulse {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("torchpulse: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
