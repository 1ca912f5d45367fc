"""The confirmation ledger: which (commit, benchmark) pairs were measured once more because
their step rested on one run (torchpulse.analysis.confirm). One "sha benchmark" pair a line.

``torchpulse disturbed --confirm`` writes it; the alert reads it to say which regressions
were measured twice (make dashboard keeps it at DEFAULT, beside asv's own state)."""

from __future__ import annotations

import re
from pathlib import Path

from torchpulse.errors import TorchpulseError

DEFAULT = Path(".asv") / "confirmed.txt"  # relative to the project's config

_SHA = re.compile(r"[0-9a-f]{40}")
_NAME = re.compile(r"\S+")

Ledger = set[tuple[str, str]]  # (full commit sha, benchmark name)


class LedgerError(TorchpulseError, ValueError):
    """A ledger file that is not one "sha benchmark" pair a line."""


def read_ledger(path: Path) -> Ledger:
    """The pairs in ``path`` (none when it does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: cannot read ({exc})") from None
    done: Ledger = set()
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if (len(parts) != 2 or not _SHA.fullmatch(parts[0])
                or not _NAME.fullmatch(parts[1])):
            raise LedgerError(f"{path}:{number}: not a 'sha benchmark' line")
        done.add((parts[0], parts[1]))
    return done


def ledger_text(done: Ledger) -> str:
    return "".join(f"{sha} {name}\n" for sha, name in sorted(done))
