"""Per machine, where every series stands: latest value, change since the previous commit,
noise, and whether the alert detection holds a regression against it (value objects the
site's summary page renders)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from torchpulse.analysis.alert import Alert, Report, evaluate
from torchpulse.analysis.detect import MIN_POINTS, Noise
from torchpulse.analysis.series import Series, SeriesKey, declared_benchmarks, load_series
from torchpulse.results.project import Project

# A change since the previous commit is marked when it exceeds this many standard deviations
# of the difference of two runs (sqrt(2) * the series' noise): worth a look, not an alert.
NOTABLE_SIGMAS = 3.0


@dataclass(frozen=True)
class Row:
    """One series: its newest point and what came before it."""

    key: SeriesKey
    unit: str
    param_names: tuple[str, ...]
    latest: float
    latest_commit: str
    previous: float | None  # the series' value at the commit measured before the latest
    commits: int  # commits with a value
    noise: Noise | None  # None with fewer than MIN_POINTS commits
    alert: Alert | None  # the newest active regression, if any

    @property
    def change(self) -> float | None:
        return None if self.previous is None else self.latest / self.previous - 1.0

    @property
    def notable(self) -> bool:
        """The change since the previous commit is well outside the series' noise."""
        if self.change is None or self.noise is None or self.noise.cv <= 0:
            return False
        return abs(math.log1p(self.change)) > NOTABLE_SIGMAS * math.sqrt(2) * self.noise.cv

    @property
    def status(self) -> str:
        if self.alert is not None:
            return "regression"
        if self.noise is None:
            return "too few commits"
        return "unstable" if self.noise.unstable else "ok"


@dataclass(frozen=True)
class MachineSummary:
    name: str
    info: dict[str, str]  # machine.json: cpu, num_cpu, os, ram ...
    rows: list[Row]
    alerts: list[Alert]
    newest_commit: str  # newest commit on the branch with a result on this machine

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


def _row(series: Series, names: tuple[str, ...], noise: dict[SeriesKey, Noise],
         alerts: dict[SeriesKey, Alert]) -> Row:
    points = series.points
    return Row(series.key, series.unit, names, points[-1].value, points[-1].commit,
               points[-2].value if len(points) > 1 else None, len(points),
               noise.get(series.key) if len(points) >= MIN_POINTS else None,
               alerts.get(series.key))


def build(project: Project, branch: str | None = None) -> Summary:
    """The summary of every machine in ``project``'s results tree."""
    history = project.history(branch)
    results_dir = project.results_dir
    series, off_branch = load_series(results_dir, history)
    report = evaluate(series, history, off_branch_files=off_branch)
    newest_alert: dict[SeriesKey, Alert] = {}
    for a in report.alerts:  # oldest culprit first: keep the newest per series
        newest_alert[a.key] = a
    names = declared_param_names(results_dir)
    noise = {c.series.key: c.verdict.noise for c in report.checked}
    machines = []
    for machine in sorted({s.key.machine for s in series}):
        mine = [s for s in series if s.key.machine == machine]
        rows = [_row(s, names.get(s.key.benchmark, ()), noise, newest_alert) for s in mine]
        newest = max((r.latest_commit for r in rows), key=history.position.__getitem__)
        machines.append(MachineSummary(
            machine, _machine_info(results_dir, machine), rows,
            [a for a in report.alerts if a.key.machine == machine], newest))
    return Summary(machines, report, branch or project.default_branch)
