"""The alert's model: a series' status, an Alert (a change of level in one series), a
Checked series (its verdict and status) and the Report every format and page renders. Value
objects: no English (torchpulse.reports says them), no I/O."""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchpulse.analysis import detector
from torchpulse.analysis.columns import disturbed_of
from torchpulse.analysis.detector import SeriesVerdict
from torchpulse.analysis.disturbance import Canary
from torchpulse.analysis.series import Series, SeriesKey
from torchpulse.analysis.settings import Settings
from torchpulse.analysis.triage import Mark
from torchpulse.instructions.profiles import FunctionChange
from torchpulse.kinds import EXACT
from torchpulse.results.builds import Build
from torchpulse.results.gitrepo import History
from torchpulse.results.triage import NONE as NO_TRIAGE
from torchpulse.results.triage import Entry, Triage

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
    # again (the confirmation ledger, torchpulse.analysis.remeasure)
    confirmed: bool = False
    # (first, last) commits of each drift in the rise: the level rose over those commits
    # rather than at one of them (torchpulse.analysis.detector.drift)
    drifts: tuple[tuple[str, str], ...] = ()
    through: str = ""  # the newest commit the rise spans, when a drift ends after the culprits
    # on an instruction series: the functions whose own instructions grew most from
    # ``previous_commit`` to ``commit`` (stored profiles, torchpulse.instructions.profiles)
    functions: tuple[FunctionChange, ...] = ()
    # what ``functions`` lists (a profile kind of torchpulse.instructions.profiles: the
    # functions' own instructions, or on a GPU series the kernels' device ns or launches, or
    # the synchronisation sites, a call) and the net change of the workload's total there
    functions_kind: str = ""
    functions_total: int = 0
    # the torch builds `torchpulse record` measured ``previous_commit`` and ``commit`` with
    # (torchpulse.results.builds), where it stored them
    builds: tuple[Build | None, Build | None] = (None, None)
    # what the repository's triage file says about this change (torchpulse.results.triage):
    # investigating or fixed on an active regression; any state in --history
    triage: Entry | None = None
    higher_is_better: bool = False  # a drop is the regression (its series')
    # on a change --history lists: its series' threshold (a fraction; None: an exact
    # counter, or not a --history change), what the alert needs before it reports one
    threshold: float | None = None

    @property
    def last(self) -> str:
        """The newest commit the change spans: the end of its drift, or its last culprit."""
        return self.through or self.culprits[-1]

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf

    @property
    def worse(self) -> float:
        """How much worse the change made it, as a ratio (above 1: a regression)."""
        if self.higher_is_better:
            return self.before / self.after if self.after else math.inf
        return self.ratio

    @property
    def direction(self) -> str:
        return "regression" if self.worse > 1 else "improvement"

    @property
    def below_threshold(self) -> bool:
        """A change --history found that is smaller than its series' threshold: real (the
        detector's test says so) but one the alert does not report."""
        worse = self.worse
        return self.threshold is not None and 0 < worse < math.inf and \
            abs(math.log(worse)) < math.log1p(self.threshold)


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
    # the repository's triage file, and its entries where they landed on a series (those
    # accepted, invalid or infrastructure were taken out of it before it was judged)
    triage: Triage = NO_TRIAGE
    marks: tuple[Mark, ...] = ()
    ignored: int = 0  # series a benchmark rule of the triage file says to ignore

    @property
    def absorbed(self) -> list[Mark]:
        """The changes the triage file took out of their series (no longer alerting)."""
        return [m for m in self.marks if m.absorbed]

    @property
    def alpha(self) -> float:
        return self.settings.alpha

    @property
    def threshold(self) -> float:
        return self.settings.threshold

    def threshold_for(self, series: Series) -> float | None:
        """The smallest change worth an alert on ``series`` (a benchmark rule of the triage
        file, else the settings'); None for an exact counter, on which any increase is one."""
        return self.settings.with_threshold(self.triage.threshold(series.key.name)
                                            ).threshold_for(series.rule)

    @property
    def rules(self) -> set[str]:
        """How the series checked are judged (series.TIME, COUNT, DEVICE, EXACT)."""
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
