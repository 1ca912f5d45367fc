"""Which commits regressed what: detection over every series, false alarms controlled across
series, and the alerts (value objects the report formats render)."""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
from dataclasses import dataclass
from pathlib import Path

from torchpulse.analysis import detector
from torchpulse.analysis import verdicts as verdicts_cache
from torchpulse.analysis.columns import disturbed_of, undisturbed
from torchpulse.analysis.detector import (
    ChangePoint,
    Drift,
    Regression,
    SeriesVerdict,
    benjamini_hochberg,
)
from torchpulse.analysis.disturbance import Canary, assess
from torchpulse.analysis.ledger import DEFAULT as DEFAULT_LEDGER
from torchpulse.analysis.ledger import Ledger, measured_again, read_ledger
from torchpulse.analysis.series import (
    COUNT,
    EXACT,
    Series,
    SeriesError,
    SeriesKey,
    load_series,
    rule_of,
)
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.instructions import profiles
from torchpulse.instructions.profiles import FunctionChange
from torchpulse.results import index as results_index
from torchpulse.results.gitrepo import GitError, History
from torchpulse.results.project import Project

# A series' status, computed once here and shown the same by every report format, the
# summary page, the alerts JSON and the site's Regressions tab.
REGRESSION = "regression"  # a regression is active at the newest commit
UNSTABLE = "unstable"  # too noisy (or toggling) for the threshold: see its mde
OK = "ok"  # enough commits, quiet enough, nothing active
TOO_FEW = "too few commits"  # fewer than needed: its noise is unknown
STATUSES = (REGRESSION, UNSTABLE, OK, TOO_FEW)


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
    culprits: tuple[str, ...] = ()  # every commit where the level rose, ``commit`` first
    noisy: bool = False  # on an unstable series, a step that clearly exceeds its noise
    # commits between ``previous_commit`` and ``commit`` measured on a disturbed machine (not
    # counted): the step may lie at any of them as well as at ``commit``
    disturbed_before: tuple[str, ...] = ()
    # measured once more at ``commit`` because the step rested on one run, and it showed
    # again (the confirmation ledger, torchpulse.analysis.confirm)
    confirmed: bool = False
    # (first, last) commits of each drift in the rise: the level rose over those commits
    # rather than at one of them (torchpulse.analysis.detector.drift)
    drifts: tuple[tuple[str, str], ...] = ()
    through: str = ""  # the newest commit the rise spans, when a drift ends after the culprits
    # on an instruction series: the functions whose own instructions grew most from
    # ``previous_commit`` to ``commit`` (stored profiles, torchpulse.instructions.profiles)
    functions: tuple[FunctionChange, ...] = ()

    @property
    def last(self) -> str:
        """The newest commit the change spans: the end of its drift, or its last culprit."""
        return self.through or self.culprits[-1]

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf

    @property
    def direction(self) -> str:
        return "regression" if self.after > self.before else "improvement"


@dataclass(frozen=True)
class Checked:
    """One series, what detection made of it, and its status."""

    series: Series  # every point, the disturbed ones included
    verdict: SeriesVerdict  # on the points measured undisturbed
    status: str
    alert: Alert | None = None  # its active regression, when reported

    @property
    def commits(self) -> int:
        """Commits that count: those not measured on a disturbed machine."""
        return int((~disturbed_of(self.series.points)).sum())

    @property
    def disturbed(self) -> tuple[str, ...]:
        """Commits measured on a disturbed machine (left out of detection), oldest first."""
        flags = disturbed_of(self.series.points)
        if not flags.any():
            return ()
        return tuple(p.commit for p in self.series.points if p.disturbed)

    @property
    def newest_disturbed(self) -> bool:
        flags = disturbed_of(self.series.points)
        return bool(len(flags)) and bool(flags[-1])

    @property
    def needed(self) -> int:
        """Commits the series needs for a verdict: an exact counter needs no noise estimate."""
        return needed(self.series)

def needed(series: Series) -> int:
    """Commits ``series`` needs before it gets a verdict."""
    return detector.least_points(series.rule == EXACT)


@dataclass(frozen=True)
class Report:
    alerts: list[Alert]  # active regressions, or every change point with --history
    checked: list[Checked]  # every series, with its status
    history_mode: bool
    settings: Settings
    off_branch_files: int
    canary: Canary = Canary()  # the machine canary's readings (none: nothing disturbed)
    history: History | None = None  # the first-parent history the series were ordered by

    @property
    def alpha(self) -> float:
        return self.settings.alpha

    @property
    def threshold(self) -> float:
        return self.settings.threshold

    @property
    def count_threshold(self) -> float:
        return self.settings.count_threshold

    def threshold_for(self, series: Series) -> float | None:
        """The smallest change worth an alert on ``series``; None for an exact counter, on
        which any increase is one."""
        return self.settings.threshold_for(series.rule)

    @property
    def rules(self) -> set[str]:
        """How the series checked are judged (series.TIME, COUNT, EXACT)."""
        return {c.series.rule for c in self.checked}

    @property
    def series_count(self) -> int:
        return len(self.checked)

    @property
    def regressions(self) -> list[Alert]:
        """The alerts that are regressions (with --history, improvements are alerts too)."""
        return [a for a in self.alerts if a.direction == "regression"]

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.checked)

    @property
    def disturbed_points(self) -> int:
        return sum(len(c.disturbed) for c in self.checked)


def _change_alert(series: Series, change: ChangePoint) -> Alert:
    pts = series.points
    return Alert(series.key, pts[change.index].commit, pts[change.index - 1].commit,
                 change.before, change.after, series.unit, change.pvalue,
                 (pts[change.index].commit,))


def _drift_alert(series: Series, drift: Drift) -> Alert:
    pts = series.points
    return Alert(series.key, pts[drift.start].commit, pts[max(drift.start - 1, 0)].commit,
                 drift.before, drift.after, series.unit, drift.pvalue,
                 (pts[drift.start].commit,),
                 drifts=((pts[drift.start].commit, pts[drift.end].commit),),
                 through=pts[drift.end].commit)


def _regression_alert(series: Series, regression: Regression) -> Alert:
    pts = series.points
    newest = max([*regression.culprits, *(end for _, end in regression.drifts)])
    return Alert(series.key, pts[regression.index].commit,
                 pts[max(regression.index - 1, 0)].commit,
                 regression.before, regression.after, series.unit, regression.pvalue,
                 tuple(pts[i].commit for i in regression.culprits), regression.noisy,
                 drifts=tuple((pts[a].commit, pts[b].commit) for a, b in regression.drifts),
                 through=pts[newest].commit if newest > regression.culprits[-1] else "")


def _behind(series: Series, alert: Alert) -> Alert:
    """``alert`` with the disturbed commits of ``series`` that lie between its previous
    commit and its own."""
    commits = [p.commit for p in series.points]
    start, end = commits.index(alert.previous_commit), commits.index(alert.commit)
    between = tuple(p.commit for p in series.points[start + 1:end] if p.disturbed)
    return dataclasses.replace(alert, disturbed_before=between) if between else alert


def _analyse(series: Series, settings: Settings) -> SeriesVerdict:
    # Points: the detector reads them one by one
    return detector.verdict(list(series.points), exact_counter=series.rule == EXACT,
                            alpha=settings.alpha, threshold=settings.threshold_for(series.rule),
                            floor=settings.noise_floor)


def _status(verdict: SeriesVerdict, points: int, alert: Alert | None, least: int) -> str:
    if points < least:
        return TOO_FEW
    if alert is not None:
        return REGRESSION
    return UNSTABLE if verdict.noise.unstable else OK


def evaluate(series: list[Series], history: History, *, settings: Settings = DEFAULTS,
             since: str | None = None, history_mode: bool = False, off_branch_files: int = 0,
             canary: Canary | None = None, confirmed: Ledger | None = None,
             cache: verdicts_cache.Cache | None = None) -> Report:
    """Run detection on every series and give each its status (``cache``: verdicts of
    series unchanged since they were stored, torchpulse.analysis.verdicts): a series of counted work
    (instructions) with the settings' count threshold for its threshold, an exact counter by
    torchpulse.analysis.detector.exact (any increase). Points flagged disturbed
    are left out of detection (an alert after one names the range from the last undisturbed
    commit). Active regressions pass a Benjamini-Hochberg step at false-discovery rate
    ``settings.alpha`` over all series checked, so a tree of a thousand quiet series does not raise
    the alarms a thousand separate tests would; with ``since``, only those whose first
    culprit comes after that commit count. An active regression whose (commit, benchmark)
    is in ``confirmed`` and whose stored measurement there started after the ledger's stamp
    was measured twice there."""
    start = history.position[since] + 1 if since is not None else 0

    def recent(alert: Alert) -> bool:
        return history.position[alert.commit] >= start

    used = [dataclasses.replace(s, points=undisturbed(s.points)) for s in series]
    found = verdicts_cache.compute(
        used, functools.partial(_analyse, settings=settings), settings.key, cache)
    verdicts = list(zip(series, used, found, strict=True))
    # the family: every series that could alert (a series without an active regression
    # counts with p = 1)
    cutoff = benjamini_hochberg([v.pvalue for _, u, v in verdicts
                                 if len(u.points) >= needed(u)], settings.alpha)
    checked: list[Checked] = []
    alerts: list[Alert] = []
    for s, u, verdict in verdicts:
        active = [_behind(s, _regression_alert(u, r)) for r in verdict.active
                  if r.pvalue <= cutoff]
        alert = next((a for a in active if recent(a)), None)
        if alert is not None and confirmed and measured_again(
                confirmed, alert.commit, s.key.benchmark,
                next(p.started_ms for p in s.points if p.commit == alert.commit)):
            alert = dataclasses.replace(alert, confirmed=True)
        checked.append(Checked(s, verdict, _status(verdict, len(u.points), alert, needed(u)),
                               alert))
        if history_mode:
            found = [_change_alert(u, cp) for cp in verdict.change_points]
            found += [_drift_alert(u, d) for d in verdict.drifts]
            alerts += [a for a in map(functools.partial(_behind, s), found) if recent(a)]
        elif alert is not None:
            alerts.append(alert)
    alerts.sort(key=lambda a: (history.position[a.commit], -a.ratio, a.key))
    return Report(alerts, checked, history_mode, settings, off_branch_files,
                  canary or Canary(), history)


def run(project: Project, *, machine: str | None = None, branch: str | None = None,
        since: str | None = None, settings: Settings = DEFAULTS,
        history_mode: bool = False, confirmed: Ledger | None = None) -> Report:
    """Load the series of ``project``'s results tree and evaluate them; ``confirmed`` (default:
    the project's ledger file, when there is one) says which steps were measured twice."""
    if confirmed is None:
        confirmed = read_ledger(project.root / DEFAULT_LEDGER)
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
    where = results_index.location(project.root, project.results_dir)
    series, off_branch = load_series(project.results_dir, history, machine, index=where)
    series, canary = assess(series)
    report = evaluate(series, history, settings=settings, since=since_sha,
                      history_mode=history_mode, off_branch_files=off_branch, canary=canary,
                      confirmed=confirmed, cache=verdicts_cache.Cache(where))
    return with_functions(report, profiles.folder(project.root))


def _workload(key: SeriesKey) -> str | None:
    """The workload an instruction series counts: its one parameter, asv's repr string."""
    if len(key.params) != 1:
        return None
    try:
        value = ast.literal_eval(key.params[0])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def with_functions(report: Report, where: Path) -> Report:
    """``report`` with each alert on an instruction series naming the functions that grew
    most between the profiles stored in ``where`` for its previous commit and its commit
    (none where either profile is missing)."""
    cache: dict[tuple[str, str], dict | None] = {}

    def profile(commit: str, env: str) -> dict | None:
        if (commit, env) not in cache:
            cache[(commit, env)] = profiles.read(where, commit, env)
        return cache[(commit, env)]

    def attach(alert: Alert | None) -> Alert | None:
        if alert is None or rule_of(alert.unit) != COUNT:
            return alert
        workload = _workload(alert.key)
        before = profile(alert.previous_commit, alert.key.env)
        after = profile(alert.commit, alert.key.env)
        if workload is None or not before or not after or workload not in before \
                or workload not in after:
            return alert
        found = profiles.differences(before[workload], after[workload])
        return dataclasses.replace(alert, functions=found) if found else alert

    return dataclasses.replace(
        report, alerts=[attach(a) for a in report.alerts],
        checked=[dataclasses.replace(c, alert=attach(c.alert)) for c in report.checked])
