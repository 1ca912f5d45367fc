"""Which series a GPU machine's results can be trusted for, and at which threshold: per machine
that measured GPU series (kernel time), per unit of its series (wall time, kernel time,
kernels, synchronizations, memory), the smallest step its series detect here (the median of
their smallest detectable steps) against the threshold they are judged by. On a GPU VM an
eager model's wall time is mostly the host's launch work, which the host's load and slow
spells move between processes (docs/gpu.md: 3-26 %, up to 95 % beside CPU hogs), while
kernel time, the counters and GPU memory hold: the user should learn that from the alert
and the summary page, not from the docs. Pure: it reads a Report's verdicts."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from torchpulse.analysis.model import TOO_FEW, Report
from torchpulse.kinds import DEVICE, EXACT, unit_of


@dataclass(frozen=True)
class Trust:
    """What one unit's series on one machine can be trusted for."""

    machine: str
    unit: str
    rule: str  # its kind (torchpulse.kinds)
    threshold: float | None  # what it is judged by; None: any increase (an exact counter)
    series: int  # series of that unit on the machine
    judged: int  # with enough commits to have a noise figure
    unstable: int  # of those, too noisy for the threshold
    mde: float | None  # median smallest detectable step of the judged ones

    @property
    def trusted(self) -> bool | None:
        """Whether a threshold-size step shows in most of its series here; None before enough
        commits say. Exact counters repeat: trusted as soon as judged."""
        if self.judged == 0:
            return None
        if self.rule == EXACT:
            return True
        return self.unstable * 2 < self.judged


def trust(report: Report, machine: str | None = None) -> list[Trust]:
    """A Trust per unit of every machine that measured kernel time (a GPU machine; only
    ``machine`` when given), in the machine's order and the units' first appearance."""
    checked = [c for c in report.checked if machine is None or c.series.key.machine == machine]
    gpu_machines = {c.series.key.machine for c in checked
                    if unit_of(c.series.unit).kind == DEVICE}
    groups: dict[tuple[str, str], list] = {}
    for c in checked:
        if c.series.key.machine in gpu_machines:
            groups.setdefault((c.series.key.machine, c.series.unit), []).append(c)
    out = []
    for (name, unit), mine in sorted(groups.items(), key=lambda g: g[0][0]):
        judged = [c for c in mine if c.status != TOO_FEW]
        rule = mine[0].series.rule
        mdes = [c.verdict.noise.mde for c in judged if rule != EXACT]
        out.append(Trust(name, unit, rule, report.threshold_for(mine[0].series),
                         len(mine), len(judged),
                         sum(c.verdict.noise.unstable for c in judged),
                         statistics.median(mdes) if mdes else None))
    return out
