"""What every command shares: the exit codes, the parser class, argument types, and the flags
several commands take, each defined once here.

Nothing here imports torch, numpy, scipy or asv: `torchpulse --help` builds every parser, and
it must stay fast. What a flag needs to be checked against (a device, an asv config) is
imported when a command runs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from torchpulse.analysis.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_NOISE_FLOOR,
)
from torchpulse.errors import TorchpulseError
from torchpulse.kinds import KINDS
from torchpulse.presets import PRESETS
from torchpulse.text import one_line, printable

if TYPE_CHECKING:
    from torchpulse.analysis.settings import Settings
    from torchpulse.results.project import Project

# The exit codes, the same for every command (README, "Exit codes").
EXIT_OK = 0  # it worked; nothing regressed or failed
EXIT_FAILED = 1  # the measured thing failed or regressed: a regression, a failed runner/model
EXIT_USAGE = 2  # bad input or usage: one line on stderr, nothing written

CONFIG = "asv.conf.json"


class UsageError(TorchpulseError):
    """Bad command-line input that only shows once the arguments are parsed."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage block), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see --help)\n")


# --------------------------------------------------------------------------- argument types


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text!r}")
    return value


def positive_float(text: str) -> float:
    value = _float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = _float(text)
    if not 0 <= value < float("inf"):  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be zero or a positive number, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A fraction, given as one (0.05) or as a percentage (5%)."""
    value = _float(text[:-1]) / 100 if text.endswith("%") else _float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


# PEP 508's distribution names: letters and digits, with . _ - inside
_DISTRIBUTION = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")


def distribution_name(text: str) -> str:
    """An installed package's name as pip knows it (torch, my-package)."""
    if not _DISTRIBUTION.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a package name: {text!r}")
    return text


def regular_expression(text: str) -> str:
    """A --bench pattern as asv reads it, checked before anything is built or measured."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(
            f"not a regular expression: {text!r} ({exc})") from None
    return text


def machine_name(text: str) -> str:
    """An asv machine name: it names a folder of the results tree."""
    from torchpulse.results.store import StoreError, check_name

    try:
        return check_name(text, "machine name")
    except StoreError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def port(text: str) -> int:
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {text!r}")
    return value


# --------------------------------------------------------------------------- shared flags


def add_preset(p: argparse.ArgumentParser, *aliases: str, what: str = "size preset") -> None:
    p.add_argument("--preset", *aliases, choices=tuple(PRESETS), metavar="PRESET",
                   help=f"{what}: {', '.join(PRESETS)} (default: $TORCHPULSE_PRESET, else "
                   "cuda or cpu by device)")


def add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", help="cpu or cuda (default: $TORCHPULSE_DEVICE, else cuda "
                   "when available)")


def add_config(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--config", default=CONFIG, metavar="FILE",
                   help=f"asv config (default: {CONFIG}): {what}")


def add_results_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results-dir", metavar="DIR",
                   help="results tree (default: the config's results_dir)")


def add_machine(p: argparse.ArgumentParser, help: str, required: bool = False) -> None:
    p.add_argument("--machine", required=required, metavar="NAME", type=machine_name,
                   help=help)


def add_output(p: argparse.ArgumentParser, what: str, *aliases: str) -> None:
    p.add_argument("--output", *aliases, metavar="FILE", help=what)


def alert_settings(args: argparse.Namespace) -> Settings:
    """The detector's settings the user gave (add_alert_settings' options), as one value."""
    from torchpulse.analysis.settings import Settings  # numpy: not while building --help

    return Settings(alpha=args.alpha,
                    noise_floor=getattr(args, "noise_floor", Settings.noise_floor),
                    **{k.setting: getattr(args, k.setting) for k in KINDS.values()
                       if k.setting is not None})


def add_alert_settings(p: argparse.ArgumentParser) -> None:
    """The detector's settings, as `alert` and `dashboard` take them."""
    add_thresholds(p)
    p.add_argument("--alpha", type=fraction, default=DEFAULT_ALPHA,
                   help="significance of a change point within a series, and the false-"
                   f"discovery rate across series (default: {DEFAULT_ALPHA})")
    p.add_argument("--noise-floor", type=fraction, default=DEFAULT_NOISE_FLOOR,
                   metavar="FRACTION", help="the least relative noise any series is taken to "
                   "have, so that a constant or deterministic series is not infinitely precise "
                   f"(default: {DEFAULT_NOISE_FLOOR}; the metric's own resolution and the "
                   "spread within runs can raise it)")


def add_thresholds(p: argparse.ArgumentParser) -> None:
    """A threshold option for every kind of metric that has one (kinds.KINDS: --threshold,
    --count-threshold, --device-threshold), as every command that judges takes them."""
    for kind in KINDS.values():
        if kind.setting is None:
            continue
        p.add_argument(f"--{kind.setting.replace('_', '-')}", type=fraction,
                       default=kind.default_threshold, metavar="FRACTION",
                       help=kind.option_help.replace("%", "%%")  # argparse's formatting
                       + f" (default: {kind.default_threshold * 100:g}%%)")


# --------------------------------------------------------------------------- at run time


def project(args: argparse.Namespace) -> Project:
    """The asv project of --config, with --results-dir applied when the command has it."""
    from torchpulse.results.project import Project

    return Project.load(args.config).with_results_dir(getattr(args, "results_dir", None))


def check_outputs(args: argparse.Namespace, files: Sequence[str] = (),
                  folders: Sequence[str] = ()) -> None:
    """Refuse, before any work, the paths given to the options ``files`` and ``folders``
    (attribute names) that a write would damage (torchpulse.results.protected): in the
    project of --config (or of ./asv.conf.json for commands without one, when it loads),
    any .git, a symbolic link, what is not a regular file. UsageError, one line."""
    from torchpulse.results.protected import ProtectedPathError, check_file, check_folder

    given = [(name, check_file) for name in files if getattr(args, name, None) is not None]
    given += [(name, check_folder) for name in folders
              if getattr(args, name, None) is not None]
    if not given:
        return
    guarded = _projects_to_guard(args)
    for name, check in given:
        try:
            check(getattr(args, name), "--" + name.replace("_", "-"), guarded)
        except ProtectedPathError as exc:
            raise UsageError(str(exc)) from None


def _projects_to_guard(args: argparse.Namespace) -> list[Project]:
    """Every project whose kept places the command could damage: the one of --config as the
    command sees it (--results-dir applied), the same project's own results tree (another
    --results-dir does not make the configured one fair game), and ./asv.conf.json's."""
    from torchpulse.results.project import Project

    found = []
    if hasattr(args, "config"):
        found.append(project(args))  # the command needs it anyway: its errors are its own
        if getattr(args, "results_dir", None) is not None:
            found.append(Project.load(args.config))
    if Path(CONFIG).is_file():
        try:
            found.append(Project.load(CONFIG))
        except TorchpulseError:
            pass  # not an asv project this command works with: .git and links still hold
    return found


def write_output(text: str, output: str | None, option: str = "--output") -> None:
    """``text`` to stdout, or all or nothing into the regular file ``output`` (checked by
    ``check_outputs`` before the command's work; a link or a special file is refused here
    too, in case one appeared since)."""
    if output is None:
        sys.stdout.write(text)
        return
    from torchpulse.files import write_text_atomically
    from torchpulse.results.protected import ProtectedPathError, check_file

    try:
        write_text_atomically(check_file(output, option), text)
    except ProtectedPathError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{output}: cannot write ({exc.strerror or exc})") from None


def note(command: str, text: str) -> None:
    """A line on stderr, prefixed with the command."""
    print(f"torchpulse {command}: {printable(text)}", file=sys.stderr, flush=True)
