"""Which commits regressed what: detection over every series, false alarms controlled across
series, and the alerts (value objects the report formats render)."""

from __future__ import annotations

from dataclasses import dataclass

from torchpulse.analysis.defaults import DEFAULT_ALPHA, DEFAULT_THRESHOLD
from torchpulse.analysis.detect import ChangePoint, SeriesVerdict, analyse, benjamini_hochberg
from torchpulse.analysis.series import Series, SeriesError, SeriesKey, load_series
from torchpulse.results.gitrepo import GitError, History
from torchpulse.results.project import Project


@dataclass(frozen=True)
class Alert:
    """A change of level in one series, located at the first commit of the new level."""

    key: SeriesKey
    commit: str
    previous_commit: str
    before: float
    after: float
    unit: str
    pvalue: float | None

    @property
    def ratio(self) -> float:
        return self.after / self.before

    @property
    def direction(self) -> str:
        return "regression" if self.after > self.before else "improvement"


@dataclass(frozen=True)
class Checked:
    """One series and what detection made of it (for the noise report)."""

    series: Series
    verdict: SeriesVerdict


@dataclass(frozen=True)
class Report:
    alerts: list[Alert]  # active regressions, or every change point with --history
    checked: list[Checked]
    history_mode: bool
    alpha: float
    threshold: float
    off_branch_files: int

    @property
    def series_count(self) -> int:
        return len(self.checked)


def _alert(series: Series, change: ChangePoint, pvalue: float | None) -> Alert:
    pts = series.points
    return Alert(series.key, pts[change.index].commit, pts[change.index - 1].commit,
                 change.before, change.after, series.unit, pvalue)


def evaluate(series: list[Series], history: History, *, alpha: float = DEFAULT_ALPHA,
             threshold: float = DEFAULT_THRESHOLD, since: str | None = None,
             history_mode: bool = False, off_branch_files: int = 0) -> Report:
    """Run detection on every series. Active regressions pass a Benjamini-Hochberg step at
    false-discovery rate ``alpha`` over all series checked, so a tree of a thousand quiet
    series does not raise the alarms a thousand separate tests would."""
    start = history.position[since] + 1 if since is not None else 0
    checked = [Checked(s, analyse(s.points, alpha=alpha, threshold=threshold))
               for s in series if len(s.points) >= 2]
    alerts: list[Alert] = []
    if history_mode:
        for c in checked:
            alerts += [_alert(c.series, cp, cp.pvalue) for cp in c.verdict.change_points]
    else:
        cutoff = benjamini_hochberg([c.verdict.pvalue for c in checked], alpha)
        for c in checked:
            alerts += [_alert(c.series, cp, cp.pvalue) for cp in c.verdict.active
                       if cp.pvalue <= cutoff]
    alerts = [a for a in alerts if history.position[a.commit] >= start]
    alerts.sort(key=lambda a: (history.position[a.commit], -a.ratio, a.key))
    return Report(alerts, checked, history_mode, alpha, threshold, off_branch_files)


def run(project: Project, *, machine: str | None = None, branch: str | None = None,
        since: str | None = None, alpha: float = DEFAULT_ALPHA,
        threshold: float = DEFAULT_THRESHOLD, history_mode: bool = False) -> Report:
    """Load the series of ``project``'s results tree and evaluate them."""
    history = project.history(branch)
    since_sha = None
    if since is not None:
        try:
            since_sha = project.resolve(since)
        except GitError as exc:
            raise SeriesError(f"--since: {exc}") from None
        if since_sha not in history.position:
            raise SeriesError(f"--since: commit {since_sha[:8]} is not on the first-parent "
                              "history of the branch")
    series, off_branch = load_series(project.results_dir, history, machine)
    return evaluate(series, history, alpha=alpha, threshold=threshold, since=since_sha,
                    history_mode=history_mode, off_branch_files=off_branch)
