"""Every full record of a commit, kept: asv keeps one results file a (commit, environment),
so a second `torchpulse record` of a build replaces the first one's values, and a timed
series of a build is one level from one asv job. ``compare --stored`` needs two or more
levels a side, each from its own record (its own processes, at its own time), to see the
noise between records. `record` keeps here, per machine, commit and environment, the level
of every series of each full record (``--quick`` ones are not kept), the newest last, at
most ``KEEP``: ``<project>/.asv/records/<machine>/<commit>-<env>.json``.

Derived data, never asv's: a missing or damaged file leaves ``compare --stored`` with the one
level asv keeps. Standard library only.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from torchpulse.files import no_link_below, read_regular, write_json_atomically
from torchpulse.results.builds import ENV_NAME
from torchpulse.results.gitrepo import FULL_SHA

FOLDER = Path(".asv") / "records"
KEEP = 20  # records of one commit kept: enough for any interval, bounded
MAX_BYTES = 32 * 2**20
_MACHINE = re.compile(r"[A-Za-z0-9_.\-]{1,100}")  # as store.check_name takes them
_SERIES_NAME = 2000  # characters: asv's names with their parameters are far shorter


def path(root: Path, machine: str, commit: str, env: str) -> Path | None:
    """Where the records of ``commit`` in ``env`` on ``machine`` are kept; None for names no
    file may have."""
    if not (FULL_SHA.fullmatch(commit) and _MACHINE.fullmatch(machine)
            and machine not in {".", ".."} and ENV_NAME.fullmatch(env)):
        return None
    return root / FOLDER / machine / f"{commit}-{env}.json"


def read(root: Path, machine: str, commit: str, env: str) -> list[dict[str, float]]:
    """The records kept, oldest first: each a series' name -> its level in that record (a
    positive finite number); [] when none are kept or the file is not one of ours."""
    target = path(root, machine, commit, env)
    if target is None:
        return []
    try:
        data = json.loads(read_regular(target, MAX_BYTES))
    except (OSError, ValueError, RecursionError):
        return []
    found = data.get("records") if isinstance(data, dict) else None
    if not isinstance(found, list):
        return []
    return [levels for entry in found[-KEEP:] if (levels := _levels(entry)) is not None]


def append(root: Path, machine: str, commit: str, env: str,
           levels: dict[str, float]) -> int:
    """Keep ``levels`` (a series' name -> its level) as the newest record of ``commit``,
    all or nothing, dropping the oldest beyond ``KEEP``; how many records are kept now (0:
    names no file may have, no level to keep, or a link on the way to the file). Call it
    holding the results lock, as `record` does: two records of one commit at once would
    each drop the other's."""
    target = path(root, machine, commit, env)
    kept = _levels(levels)
    if target is None or not kept or not no_link_below(root, target):
        return 0
    records = [*read(root, machine, commit, env), kept][-KEEP:]
    write_json_atomically(target, {"commit": commit, "machine": machine, "env": env,
                                   "records": records})
    return len(records)


def _levels(entry: object) -> dict[str, float] | None:
    if not isinstance(entry, dict):
        return None
    levels = {name: float(value) for name, value in entry.items()
              if isinstance(name, str) and 0 < len(name) <= _SERIES_NAME
              and isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value) and value > 0}
    return levels or None
