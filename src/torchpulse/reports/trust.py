"""What a GPU machine's results can be trusted for, in words (analysis.trust): each unit's
threshold against the smallest step its series detect there, and why wall time cannot be
on a VM whose host moves it."""

from __future__ import annotations

from torchpulse.analysis.model import Report
from torchpulse.analysis.trust import trust
from torchpulse.kinds import EXACT
from torchpulse.reports.phrases import percent
from torchpulse.text import printable

# what a unit's series measure, as a user names them on a GPU machine
_MEASURES = {"seconds": "wall time", "device seconds": "kernel time", "kernels": "kernels",
             "synchronizations": "synchronizations", "bytes": "GPU memory"}
# why wall time is no figure on a GPU VM, said where it is not trusted
WALL_ON_GPU = ("an eager model's wall time there is mostly the host's launch work, which the "
               "host's load and slow spells move between processes; kernel time does not see "
               "them, so judge the GPU by kernel time and the counters (the wall-time series "
               "stay recorded)")


def trust_lines(report: Report, only: str | None = None) -> list[str]:
    """Per GPU machine (``only`` that one), what its series can be trusted for: each unit's
    threshold against the smallest step its series detect there (analysis.trust)."""
    lines: list[str] = []
    machine = None
    for t in trust(report, only):
        if t.machine != machine:
            machine = t.machine
            lines.append(f"what machine {printable(machine)} can be trusted for (a GPU "
                         "machine: its series' smallest detectable steps against their "
                         "thresholds):")
        what = _MEASURES.get(t.unit, printable(t.unit))
        if t.trusted is None:
            said = f"too few commits to say yet ({t.series} series)"
        elif t.rule == EXACT:
            said = "exact: any increase is a regression"
        elif t.trusted:
            said = (f"trusted at its {(t.threshold or 0) * 100:g}% threshold (its series "
                    f"detect {percent(t.mde)} steps here)")
        else:
            said = (f"not at its {(t.threshold or 0) * 100:g}% threshold: its series detect "
                    f"only {percent(t.mde)} steps here ({t.unstable} of {t.judged} unstable)"
                    + (f": {WALL_ON_GPU}" if t.unit == "seconds" else ""))
        lines.append(f"  {what}: {said}")
    return lines
