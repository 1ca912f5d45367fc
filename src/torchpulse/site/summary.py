"""Per machine, where every series stands: latest value, change since the previous commit,
noise, and whether the alert detection holds a regression against it (value objects the
site's summary page renders)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.analysis.detector import Noise
from torchpulse.analysis.model import TOO_FEW, Alert, Checked, Report
from torchpulse.analysis.pipeline import run
from torchpulse.analysis.series import SeriesKey, declared_benchmarks
from torchpulse.results import builds
from torchpulse.results.builds import Build
from torchpulse.results.project import Project

# A change since the previous commit is marked when it exceeds this many standard deviations
# of the difference of two runs (sqrt(2) * the series' noise): worth a look, not an alert.
NOTABLE_SIGMAS = 3.0


@dataclass(frozen=True)
class Row:
    """One series: its newest point, what came before it, and its status (the alert's)."""

    checked: Checked
    param_names: tuple[str, ...]

    @property
    def key(self) -> SeriesKey:
        return self.checked.series.key

    @property
    def unit(self) -> str:
        return self.checked.series.unit

    @property
    def latest(self) -> float:
        return self.checked.series.points[-1].value

    @property
    def latest_commit(self) -> str:
        return self.checked.series.points[-1].commit

    @property
    def previous(self) -> float | None:
        """The series' value at the commit measured before the latest."""
        points = self.checked.series.points
        return points[-2].value if len(points) > 1 else None

    @property
    def commits(self) -> int:
        return self.checked.commits

    @property
    def latest_disturbed(self) -> bool:
        """The newest point was measured on a disturbed machine (shown, not counted)."""
        return self.checked.newest_disturbed

    @property
    def noise(self) -> Noise | None:
        """None while the series has too few commits to know its noise."""
        return None if self.status == TOO_FEW else self.checked.verdict.noise

    @property
    def alert(self) -> Alert | None:
        return self.checked.alert

    @property
    def status(self) -> str:
        return self.checked.status

    @property
    def change(self) -> float | None:
        if not self.previous:  # none, or zero (a failure rate): no relative change
            return None
        return self.latest / self.previous - 1.0

    @property
    def notable(self) -> bool:
        """The change since the previous commit is well outside the series' noise."""
        if self.change is None or self.noise is None or not 0 < self.noise.cv < math.inf:
            return False
        if self.change <= -1.0:
            return True
        return abs(math.log1p(self.change)) > NOTABLE_SIGMAS * math.sqrt(2) * self.noise.cv


@dataclass(frozen=True)
class MachineSummary:
    name: str
    info: dict[str, str]  # machine.json: cpu, num_cpu, os, ram ...
    rows: list[Row]
    alerts: list[Alert]
    newest_commit: str  # newest commit on the branch with a result on this machine
    # the torch build each commit was recorded with (`torchpulse record`), where stored,
    # newest commit first
    builds: dict[str, Build] = field(default_factory=dict)

    @property
    def current(self) -> list[Row]:
        """Series measured at the machine's newest commit."""
        return [r for r in self.rows if r.latest_commit == self.newest_commit]

    @property
    def stale(self) -> list[Row]:
        """Series that stopped before it (renamed benchmarks, an older environment)."""
        return [r for r in self.rows if r.latest_commit != self.newest_commit]


@dataclass(frozen=True)
class Summary:
    machines: list[MachineSummary]
    report: Report  # the alert report over every machine, as `torchpulse alert` gives it
    branch: str


def declared_param_names(results_dir: Path) -> dict[str, tuple[str, ...]]:
    """Parameter names per benchmark, from asv's benchmarks.json."""
    return {name: tuple(str(p) for p in b.get("param_names") or ())
            for name, b in declared_benchmarks(results_dir).items()}


def _machine_info(results_dir: Path, machine: str) -> dict[str, str]:
    try:
        data = json.loads((results_dir / machine / "machine.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: str(v) for k, v in data.items() if k not in ("machine", "version")}


def build(project: Project, branch: str | None = None, report: Report | None = None,
          **settings: object) -> Summary:
    """The summary of every machine in ``project``'s results tree (``settings``: the
    alert's, as ``pipeline.run`` takes them; its defaults when none). ``report``: that
    run's report of every machine, when the caller has it (the dashboard's alert)."""
    results_dir = project.results_dir
    if report is None:
        report = run(project, branch=branch, **settings)
    history = report.history
    names = declared_param_names(results_dir)
    machines = []
    for machine in sorted({c.series.key.machine for c in report.checked}):
        rows = [Row(c, names.get(c.series.key.benchmark, ())) for c in report.checked
                if c.series.key.machine == machine]
        newest = max((r.latest_commit for r in rows), key=history.position.__getitem__)
        envs = {r.key.env for r in rows}
        machines.append(MachineSummary(
            machine, _machine_info(results_dir, machine), rows,
            [a for a in report.alerts if a.key.machine == machine], newest,
            dict(sorted(builds.recorded(project.root, envs, history.position).items(),
                        key=lambda cb: history.position[cb[0]], reverse=True))))
    return Summary(machines, report, branch or project.default_branch)
