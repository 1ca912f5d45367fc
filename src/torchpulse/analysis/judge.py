"""Judging across series: each series' verdict (cached, or computed across the cores), the
false-discovery control over all of them, ``--since``, the confirmation ledger, and each
series' status and alert. No I/O of its own: the series, history, canary, ledger and verdict
cache come in; torchpulse.analysis.pipeline loads them."""

from __future__ import annotations

import dataclasses
import functools

from torchpulse.analysis import detector, direction
from torchpulse.analysis import triage as triaged
from torchpulse.analysis import verdicts as verdicts_cache
from torchpulse.analysis.columns import undisturbed
from torchpulse.analysis.detector import (
    ChangePoint,
    Drift,
    Regression,
    SeriesVerdict,
    benjamini_hochberg,
)
from torchpulse.analysis.disturbance import Canary
from torchpulse.analysis.ledger import Ledger, measured_again
from torchpulse.analysis.model import (
    OK,
    REGRESSION,
    TOO_FEW,
    UNSTABLE,
    Alert,
    Checked,
    Report,
    needed,
)
from torchpulse.analysis.series import Series
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.kinds import EXACT
from torchpulse.results.gitrepo import History
from torchpulse.results.triage import NONE as NO_TRIAGE
from torchpulse.results.triage import Triage


def _change_alert(series: Series, change: ChangePoint) -> Alert:
    pts = series.points
    return Alert(series.key, pts[change.index].commit, pts[change.index - 1].commit,
                 change.before, change.after, series.unit, change.pvalue,
                 (pts[change.index].commit,), higher_is_better=series.higher_is_better)


def _drift_alert(series: Series, drift: Drift) -> Alert:
    pts = series.points
    return Alert(series.key, pts[drift.start].commit, pts[max(drift.start - 1, 0)].commit,
                 drift.before, drift.after, series.unit, drift.pvalue,
                 (pts[drift.start].commit,),
                 drifts=((pts[drift.start].commit, pts[drift.end].commit),),
                 through=pts[drift.end].commit, higher_is_better=series.higher_is_better)


def _regression_alert(series: Series, regression: Regression) -> Alert:
    pts = series.points
    newest = max([*regression.culprits, *(end for _, end in regression.drifts)])
    return Alert(series.key, pts[regression.index].commit,
                 pts[max(regression.index - 1, 0)].commit,
                 regression.before, regression.after, series.unit, regression.pvalue,
                 tuple(pts[i].commit for i in regression.culprits), regression.noisy,
                 drifts=tuple((pts[a].commit, pts[b].commit) for a, b in regression.drifts),
                 through=pts[newest].commit if newest > regression.culprits[-1] else "",
                 higher_is_better=series.higher_is_better)


def _behind(series: Series, alert: Alert) -> Alert:
    """``alert`` with the disturbed commits of ``series`` that lie between its previous
    commit and its own."""
    commits = [p.commit for p in series.points]
    start, end = commits.index(alert.previous_commit), commits.index(alert.commit)
    between = tuple(p.commit for p in series.points[start + 1:end] if p.disturbed)
    return dataclasses.replace(alert, disturbed_before=between) if between else alert


def _analyse(series: Series, settings: Settings) -> SeriesVerdict:
    # Points: the detector reads them one by one; a series where a drop is the regression
    # turned over, and its verdict turned back (torchpulse.analysis.direction)
    points = list(series.points)
    flip = direction.flip_of(points) if series.higher_is_better else None
    found = detector.verdict(direction.turned(points, flip) if flip else points,
                             exact_counter=series.rule == EXACT, alpha=settings.alpha,
                             threshold=settings.threshold_for(series.rule),
                             noise_floor=settings.noise_floor)
    return direction.back(found, flip) if flip else found


def _verdicts(used: list[Series], settings: Settings, triage: Triage,
              cache: verdicts_cache.Cache | None, tag: str = "") -> list[SeriesVerdict]:
    """The verdict of every series in ``used``, each with its threshold (a benchmark rule
    of the triage file where one gives it); ``tag`` keeps the cache's entries of series the
    triage file moved apart from those of the series as measured."""
    groups: dict[tuple[float | None, bool], list[int]] = {}
    for i, s in enumerate(used):
        groups.setdefault((triage.threshold(s.key.name), s.higher_is_better), []).append(i)
    found: list[SeriesVerdict | None] = [None] * len(used)
    for (threshold, higher), members in groups.items():
        own = settings.with_threshold(threshold)
        done = verdicts_cache.compute([used[i] for i in members],
                                      functools.partial(_analyse, settings=own),
                                      (*own.key, "higher") if higher else own.key, cache, tag)
        for i, verdict in zip(members, done, strict=True):
            found[i] = verdict
    return found  # type: ignore[return-value]  # every index is in one group


def _triaged(series: list[Series], used: list[Series], raw: list[SeriesVerdict],
             history: History, settings: Settings, triage: Triage,
             cache: verdicts_cache.Cache | None
             ) -> tuple[list[list[triaged.Mark]], list[Series], list[SeriesVerdict]]:
    """Where the triage file's entries land on each series (its marks), and the series as
    judged with the changes it took out (the accepted, invalid and infrastructure ones)
    and their verdicts; a series without such a change as it was."""
    marked = [triaged.marks(s, u, v, history, triage) if triage.entries else []
              for s, u, v in zip(series, used, raw, strict=True)]
    moved = {i: m for i, m in enumerate(triaged.absorb(u, v, f) for u, v, f
                                         in zip(used, raw, marked, strict=True)) if m}
    again = dict(zip(moved, _verdicts(list(moved.values()), settings, triage, cache,
                                      "#triaged"), strict=True))
    return (marked, [moved.get(i, u) for i, u in enumerate(used)],
            [again.get(i, v) for i, v in enumerate(raw)])


def _status(verdict: SeriesVerdict, points: int, alert: Alert | None, least: int) -> str:
    if points < least:
        return TOO_FEW
    if alert is not None:
        return REGRESSION
    return UNSTABLE if verdict.noise.unstable else OK


def evaluate(series: list[Series], history: History, *, settings: Settings = DEFAULTS,
             since: str | None = None, history_mode: bool = False, off_branch_files: int = 0,
             canary: Canary | None = None, confirmed: Ledger | None = None,
             cache: verdicts_cache.Cache | None = None, triage: Triage = NO_TRIAGE,
             ignored: int = 0) -> Report:
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
    was measured twice there. The entries of ``triage`` that land on a series are its
    marks; the accepted, invalid and infrastructure ones are taken out of it before it is
    judged (torchpulse.analysis.triage), and every alert names the entry covering it."""
    start = history.position[since] + 1 if since is not None else 0

    def recent(alert: Alert) -> bool:
        return history.position[alert.commit] >= start

    used = [dataclasses.replace(s, points=undisturbed(s.points)) for s in series]
    raw = _verdicts(used, settings, triage, cache)
    marked, judged, found = _triaged(series, used, raw, history, settings, triage, cache)
    verdicts = list(zip(series, judged, found, strict=True))
    # the family: every series that could alert (a series without an active regression
    # counts with p = 1)
    cutoff = benjamini_hochberg([v.pvalue for _, u, v in verdicts
                                 if len(u.points) >= needed(u)], settings.alpha)
    checked: list[Checked] = []
    alerts: list[Alert] = []
    for (s, u, verdict), plain, first, marks in zip(verdicts, used, raw, marked, strict=True):
        def covered(alert: Alert, marks: list = marks) -> Alert:
            entry = triaged.covering(marks, history, alert.previous_commit, alert.last)
            return dataclasses.replace(alert, triage=entry) if entry else alert

        active = [covered(_behind(s, _regression_alert(u, r))) for r in verdict.active
                  if r.pvalue <= cutoff]
        alert = next((a for a in active if recent(a)), None)
        if alert is not None and confirmed and measured_again(
                confirmed, alert.commit, s.key.benchmark,
                next(p.started_ms for p in s.points if p.commit == alert.commit)):
            alert = dataclasses.replace(alert, confirmed=True)
        checked.append(Checked(s, verdict, _status(verdict, len(u.points), alert, needed(u)),
                               alert))
        if history_mode:  # every change as measured, with what the triage file says of it
            # and whether it reaches the threshold the alert holds it to
            limit = settings.with_threshold(triage.threshold(s.key.name)).threshold_for(s.rule)
            changes = [_change_alert(plain, cp) for cp in first.change_points]
            changes += [_drift_alert(plain, d) for d in first.drifts]
            alerts += [covered(dataclasses.replace(a, threshold=limit))
                       for a in map(functools.partial(_behind, s), changes) if recent(a)]
        elif alert is not None:
            alerts.append(alert)
    alerts.sort(key=lambda a: (history.position[a.commit], -a.worse, a.key))
    return Report(alerts, checked, history_mode, settings, off_branch_files,
                  canary or Canary(), history, triage,
                  tuple(m for found in marked for m in found), ignored)
