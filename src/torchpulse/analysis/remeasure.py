"""What to measure again, and why: the points the machine canary saw measured on a disturbed
machine, and the steps seen in one run only (confirmed by a second measurement). One plan,
computed here for `torchpulse disturbed` and for the dashboard's re-measure passes."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from torchpulse.analysis import confirm, disturbance, pipeline
from torchpulse.analysis.ledger import Ledger
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.results.project import Project


@dataclass(frozen=True)
class Plan:
    remeasure: disturbance.Remeasure  # both reasons together: what `asv run` gets
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
    disturbed = disturbance.remeasure([c.series for c in found.checked], history.position,
                                      chosen)
    notes = []
    if disturbed.commits:
        notes.append(f"{len(disturbed.commits)} commit(s) with {len(disturbed.benchmarks)} "
                      "benchmark(s) measured on a disturbed machine: "
                      + ", ".join(c[:8] for c in disturbed.commits))
    pending = confirm.due(found, done, chosen) if confirm_steps else {}
    once = confirm.plan(pending, history.position)
    if once.commits:
        notes.append(f"{len(once.benchmarks)} benchmark(s) with a step seen in one run only, "
                     "to be confirmed by a second measurement at "
                     + ", ".join(c[:8] for c in once.commits))
    both = disturbed.union(once, history.position) if once.commits else disturbed
    return Plan(both, tuple(notes), done | pending, bool(once.commits))
