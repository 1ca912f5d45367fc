"""What one commit's count did, handed from asv's benchmark process to the dashboard.

asv keeps the output of a ``setup_cache`` that succeeds to itself, so the minutes a commit's
count takes, and whether it was counted at all or taken from an earlier count (reuse.py),
never reach the terminal. With ``$TORCHPULSE_COUNT_LOG`` naming a file (the dashboard makes
one per asv run), ``suite.count_instructions`` appends one JSON line per count; the dashboard
reads them back once asv has finished (printing while asv draws its progress line would cut
that line) and says them. A line that is not one this module wrote is skipped: the file is
read from disk, and nothing from it reaches the terminal but numbers and a commit's hex.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from torchpulse.files import read_regular

ENV = "TORCHPULSE_COUNT_LOG"
MAX_BYTES = 1 << 20  # a run of thousands of commits writes a few hundred kB
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Summary:
    """One count: the commit (asv's $ASV_COMMIT, "" where unknown), how many workloads were
    counted, reused and failed, its wall seconds, and whether counting was unavailable."""

    commit: str
    counted: int
    reused: int
    failed: int
    seconds: float
    unavailable: bool = False


def write(summary: Summary, environ: dict[str, str] | None = None) -> None:
    """Append ``summary`` to the file $TORCHPULSE_COUNT_LOG names; nothing without it. A file
    that cannot be written costs only this line (the counts are stored either way)."""
    path = (os.environ if environ is None else environ).get(ENV)
    if not path:
        return
    line = json.dumps({"commit": summary.commit, "counted": summary.counted,
                       "reused": summary.reused, "failed": summary.failed,
                       "seconds": round(summary.seconds, 1),
                       "unavailable": summary.unavailable}) + "\n"
    try:  # one short write in append mode: concurrent writers do not interleave within it
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass


def read(path: Path) -> list[Summary]:
    """The summaries in ``path``, oldest first; lines of any other shape are skipped."""
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return []
    found = []
    for line in text.splitlines():
        summary = _parse(line)
        if summary is not None:
            found.append(summary)
    return found


def _parse(line: str) -> Summary | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict):
        return None
    commit, seconds, unavailable = row.get("commit"), row.get("seconds"), row.get("unavailable")
    numbers = [row.get(key) for key in ("counted", "reused", "failed")]
    if not isinstance(commit, str) or (commit and not _COMMIT.fullmatch(commit)):
        return None
    if not all(type(n) is int and 0 <= n < 1_000_000 for n in numbers):
        return None
    if type(seconds) not in (int, float) or not 0 <= seconds < 1e7 \
            or type(unavailable) is not bool:
        return None
    return Summary(commit, *numbers, float(seconds), unavailable)
