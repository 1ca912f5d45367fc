"""The confirmation ledger: which (commit, benchmark) pairs were chosen to be measured once
more because their step rested on one run (torchpulse.analysis.remeasure), and when the
measurement that the second one replaces had started. One "sha benchmark started-ms" line a
pair.

``torchpulse disturbed --confirm`` writes it before the re-run; the alert reads it and says a
regression was measured twice only where the stored measurement at that commit started after
the stamp, so a re-run that died or was never run is not reported as one (make dashboard
keeps the ledger at DEFAULT, beside asv's own state)."""

from __future__ import annotations

import re
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.files import read_regular
from torchpulse.results.gitrepo import FULL_SHA

DEFAULT = Path(".asv") / "confirmed.txt"  # relative to the project's config
LEDGER_BYTES = 64 * 2**20  # about 100 bytes a pair

# a benchmark name a ledger line can hold (what confirm may choose)
NAME = re.compile(r"\S+")
_STAMP = re.compile(r"[0-9]{1,15}")

# (full commit sha, benchmark name) -> when the measurement to be replaced had started (ms
# since the epoch, asv's started_at); None in lines written before stamps were kept
Ledger = dict[tuple[str, str], int | None]


class LedgerError(TorchpulseError, ValueError):
    """A ledger file that is not one "sha benchmark started-ms" line a pair."""


def read_ledger(path: Path) -> Ledger:
    """The pairs in ``path`` (none when it does not exist); a FIFO, a device or a file past
    LEDGER_BYTES is refused, not waited on or read without end."""
    try:
        text = read_regular(path, LEDGER_BYTES).decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: cannot read ({exc})") from None
    done: Ledger = {}
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if (len(parts) not in (2, 3) or not FULL_SHA.fullmatch(parts[0])
                or not NAME.fullmatch(parts[1])
                or (len(parts) == 3 and not _STAMP.fullmatch(parts[2]))):
            raise LedgerError(f"{path}:{number}: not a 'sha benchmark started-ms' line")
        done[(parts[0], parts[1])] = int(parts[2]) if len(parts) == 3 else None
    return done


def ledger_text(done: Ledger) -> str:
    return "".join(f"{sha} {name}" + ("" if stamp is None else f" {stamp}") + "\n"
                   for (sha, name), stamp in sorted(done.items()))


def measured_again(done: Ledger, commit: str, benchmark: str, started_ms: float | None) -> bool:
    """Whether the measurement of ``benchmark`` stored at ``commit`` (its job started at
    ``started_ms``) is the second one the ledger planned: it started after the stamp of
    the one it was to replace. Unknown times say no."""
    stamp = done.get((commit, benchmark))
    return stamp is not None and started_ms is not None and started_ms > stamp
