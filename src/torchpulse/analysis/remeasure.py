"""What to measure again, and why: the points the machine canary saw measured on a disturbed
machine (torchpulse.analysis.disturbance marks them), and the steps seen in one run only.
One plan, computed here for `torchpulse disturbed` and for the dashboard's re-measure
passes.

Steps seen in one run only: a regression whose new level rests on a single commit, the
newest one measured, is measured once more before ``make dashboard`` reports it.

One commit at a new level cannot be told from one slow run by the values: the machine
canary catches another process on the machine, not a slower host
(experiments/diary/detection.md), and a run on a bad minute looks exactly like a regression
at the newest commit. So the benchmark of such a series is run again at that commit, once,
and the stored value is then the second measurement: a real step shows again, a slow run
does not come back. asv re-runs a whole benchmark, so its other parameters get a second
value at that commit too.

The ledger remembers which (commit, benchmark) were chosen, so a step that did show again is
reported, not re-measured at every run (which would re-draw it until it hides), and the start
of the measurement the second one replaces, so only a second measurement that was stored is
reported as one (torchpulse.analysis.ledger).
"""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass

from torchpulse.analysis import pipeline
from torchpulse.analysis.columns import disturbed_of
from torchpulse.analysis.detector import Point
from torchpulse.analysis.disturbance import CANARY_METHOD, ZOO_SUITE
from torchpulse.analysis.ledger import NAME, Ledger
from torchpulse.analysis.model import Checked, Report
from torchpulse.analysis.series import Series
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.results.project import Project


@dataclass(frozen=True)
class Remeasure:
    """What to measure again: the commits with a disturbed point, and the benchmarks
    disturbed at any of them (full asv names)."""

    commits: tuple[str, ...]  # oldest first
    benchmarks: tuple[str, ...]

    def union(self, other: Remeasure, order: dict[str, int]) -> Remeasure:
        """Both plans in one: their commits (ordered by ``order``) and benchmarks."""
        commits = set(self.commits) | set(other.commits)
        return Remeasure(tuple(sorted(commits, key=lambda c: order.get(c, -1))),
                         tuple(sorted(set(self.benchmarks) | set(other.benchmarks))))

    def bench_regex(self) -> str:
        """An ``asv run --bench`` expression for those benchmarks and every canary, so the
        new points get readings of their own around them; the compile zoo's canary only when
        a compile benchmark is disturbed, since it brings the zoo's setup_cache (minutes)
        with it."""
        zoo = any(name.startswith(ZOO_SUITE + ".") for name in self.benchmarks)
        canaries = (r"\w+" if zoo else rf"(?!{ZOO_SUITE}\.)\w+") + re.escape(
            "." + CANARY_METHOD)
        names = [re.escape(n) for n in self.benchmarks]
        return "^(?:" + "|".join([*names, canaries]) + ")"


def disturbed(series: list[Series], order: dict[str, int],
              commits: set[str] | None = None) -> Remeasure:
    """The commits (among ``commits``, default all) where ``series`` hold disturbed points,
    ordered by ``order`` (a commit's position in the history), and the benchmarks to run."""
    found: set[str] = set()
    names: set[str] = set()
    for s in series:
        if not disturbed_of(s.points).any():  # most series: no point made to find out
            continue
        for p in s.points:
            if p.disturbed and (commits is None or p.commit in commits):
                found.add(p.commit)
                names.add(s.key.benchmark)
    return Remeasure(tuple(sorted(found, key=order.__getitem__)), tuple(sorted(names)))


def seen_once(checked: Checked) -> Point | None:
    """The point of ``checked``'s active regression when it is the newest point detection
    used, i.e. the new level rests on one run; else None. A point no asv run timed (an
    import stores no job duration) cannot be measured again: None."""
    if checked.alert is None or not NAME.fullmatch(checked.series.key.benchmark):
        return None
    if checked.series.load_independent:  # a count repeats: a second run would say the same
        return None
    used = [p for p in checked.series.points if not p.disturbed]
    if not used or used[-1].commit != checked.alert.commit or used[-1].seconds is None:
        return None
    return used[-1]


def due(report: Report, done: Ledger, commits: set[str] | None = None) -> Ledger:
    """The (commit, benchmark) pairs of the series whose step was seen in one run only, at
    ``commits`` (default all), leaving out what ``done`` says was chosen already, each with
    the start of the measurement a second one is to replace (the ledger's stamp)."""
    pending: Ledger = {}
    for c in report.checked:
        point = seen_once(c)
        if point is None or (commits is not None and point.commit not in commits):
            continue
        key = (point.commit, c.series.key.benchmark)
        if key not in done:
            pending[key] = None if point.started_ms is None else int(point.started_ms)
    return pending


def confirming(pending: Ledger, order: dict[str, int]) -> Remeasure:
    """What measures ``pending`` again: its commits (ordered by ``order``, a commit's
    position in the history) and benchmarks."""
    return Remeasure(tuple(sorted({c for c, _ in pending}, key=order.__getitem__)),
                     tuple(sorted({name for _, name in pending})))


@dataclass(frozen=True)
class Plan:
    remeasure: Remeasure  # both reasons together: what `asv run` gets
    notes: tuple[str, ...]  # one line per reason, for the user
    ledger: Ledger  # the confirmation ledger with this plan's steps added
    ledger_changed: bool  # steps were added: write it before measuring again

    @property
    def empty(self) -> bool:
        return not self.remeasure.commits


def plan(project: Project, *, done: Ledger, confirm_steps: bool = True,
         newest: int | None = None, since: str | None = None,
         window: Set[str] | None = None, machine: str | None = None,
         branch: str | None = None, settings: Settings = DEFAULTS) -> Plan:
    """The commits and benchmarks to measure again, among the ``newest`` commits of the
    history, REV ``since`` and those after it, and ``window`` (each narrows; none: all).
    ``done`` is the ledger read once: what it says was measured again is what the alert
    marks, and a step already in it is not planned again."""
    # the steps to confirm are those the alert would report: judged with the user's settings
    found = pipeline.run(project, machine=machine, branch=branch, since=since, confirmed=done,
                         settings=settings)
    history = found.history
    assert history is not None
    chosen: set[str] | None = set(window) if window is not None else None

    def narrow(commits: set[str]) -> None:
        nonlocal chosen
        chosen = commits if chosen is None else chosen & commits

    if newest:
        narrow(set(history.commits[-newest:]))
    if since:  # pipeline.run checked that it is on the history; REV itself counts
        narrow(set(history.commits[history.position[project.resolve(since)]:]))
    on_disturbed = disturbed([c.series for c in found.checked], history.position, chosen)
    notes = []
    if on_disturbed.commits:
        notes.append(f"{len(on_disturbed.commits)} commit(s) with "
                     f"{len(on_disturbed.benchmarks)} "
                      "benchmark(s) measured on a disturbed machine: "
                     + ", ".join(c[:8] for c in on_disturbed.commits))
    pending = due(found, done, chosen) if confirm_steps else {}
    once = confirming(pending, history.position)
    if once.commits:
        notes.append(f"{len(once.benchmarks)} benchmark(s) with a step seen in one run only, "
                     "to be confirmed by a second measurement at "
                     + ", ".join(c[:8] for c in once.commits))
    both = on_disturbed.union(once, history.position) if once.commits else on_disturbed
    return Plan(both, tuple(notes), done | pending, bool(once.commits))
