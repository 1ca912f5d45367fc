"""The alert's pipeline: a project's series loaded (through the results index), the
canary's rule applied, the repository's triage file read (its ignored series left out), the
series judged (torchpulse.analysis.judge, with the verdict cache
and the confirmation ledger), and the functions that grew added to each instruction alert
from the stored profiles."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from torchpulse.analysis import verdicts as verdicts_cache
from torchpulse.analysis.disturbance import assess
from torchpulse.analysis.judge import evaluate
from torchpulse.analysis.ledger import DEFAULT as DEFAULT_LEDGER
from torchpulse.analysis.ledger import Ledger, read_ledger
from torchpulse.analysis.model import Alert, Report
from torchpulse.analysis.series import Series, SeriesError, SeriesKey, load_series
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.instructions import profiles
from torchpulse.kinds import unit_of
from torchpulse.results import builds
from torchpulse.results import index as results_index
from torchpulse.results import triage as triage_file
from torchpulse.results.gitrepo import GitError
from torchpulse.results.project import Project


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
    triage = triage_file.read(project.root)
    where = results_index.location(project.root, project.results_dir)
    series, off_branch = load_series(project.results_dir, history, machine, index=where)
    series, canary = assess(series)  # the canary reads every series, ignored ones too
    kept = [_directed(s, triage.higher_is_better(s.key.name)) for s in series
            if not triage.ignored(s.key.name)]
    report = evaluate(kept, history, settings=settings, since=since_sha,
                      history_mode=history_mode, off_branch_files=off_branch, canary=canary,
                      confirmed=confirmed, cache=verdicts_cache.Cache(where), triage=triage,
                      ignored=len(series) - len(kept))
    return with_builds(with_functions(report, profiles.folder(project.root)), project.root)


def _directed(series: Series, higher: bool | None) -> Series:
    """``series`` with the direction a benchmark rule of the triage file gives it."""
    if higher is None or higher == series.higher_is_better:
        return series
    return dataclasses.replace(series, higher_is_better=higher)


def workload_of(key: SeriesKey) -> str | None:
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
    most between the profiles stored in ``where`` for its previous commit and its commit,
    and each alert on a GPU series' kernel time, kernel count or synchronisations the
    kernels or sites that did (none where either profile is missing)."""
    cache: dict[tuple[str, str, str], tuple | None] = {}

    def profile(commit: str, env: str, kind: str) -> tuple | None:
        if (commit, env, kind) not in cache:
            cache[(commit, env, kind)] = profiles.read_with_totals(where, commit, env, kind)
        return cache[(commit, env, kind)]

    def attach(alert: Alert | None) -> Alert | None:
        kind = unit_of(alert.unit).profile if alert is not None else ""
        if alert is None or not kind:
            return alert
        workload = workload_of(alert.key)
        before = profile(alert.previous_commit, alert.key.env, kind)
        after = profile(alert.commit, alert.key.env, kind)
        if workload is None or not before or not after or workload not in before[0] \
                or workload not in after[0]:
            return alert
        found = profiles.differences(before[0][workload], after[0][workload])
        total = after[1].get(workload, 0) - before[1].get(workload, 0)
        return dataclasses.replace(alert, functions=found, functions_kind=kind,
                                   functions_total=total) if found else alert

    return dataclasses.replace(
        report, alerts=[attach(a) for a in report.alerts],
        checked=[dataclasses.replace(c, alert=attach(c.alert)) for c in report.checked])


def with_builds(report: Report, root: Path) -> Report:
    """``report`` with each alert naming the torch builds its two commits were recorded with
    (results/builds.py: `torchpulse record` stores them), where they were."""
    def attach(alert: Alert | None) -> Alert | None:
        if alert is None:
            return alert
        found = (builds.read(root, alert.previous_commit, alert.key.env),
                 builds.read(root, alert.commit, alert.key.env))
        return dataclasses.replace(alert, builds=found) if any(found) else alert

    if not (root / builds.FOLDER).is_dir():
        return report
    return dataclasses.replace(
        report, alerts=[attach(a) for a in report.alerts],
        checked=[dataclasses.replace(c, alert=attach(c.alert)) for c in report.checked])
