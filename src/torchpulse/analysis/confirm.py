"""Steps seen in one run only: a regression whose new level rests on a single commit, the
newest one measured, is measured once more before ``make dashboard`` reports it.

One commit at a new level cannot be told from one slow run by the values: the machine
canary catches another process on the machine, not a slower host (docs/detection.md), and a
run on a bad minute looks exactly like a regression at the newest commit. So the benchmark
of such a series is run again at that commit, once, and the stored value is then the second
measurement: a real step shows again, a slow run does not come back. asv re-runs a whole
benchmark, so its other parameters get a second value at that commit too.

The ledger remembers which (commit, benchmark) were chosen, so a step that did show again is
reported, not re-measured at every run (which would re-draw it until it hides), and the start
of the measurement the second one replaces, so only a second measurement that was stored is
reported as one (torchpulse.analysis.ledger).
"""

from __future__ import annotations

from torchpulse.analysis.detector import Point
from torchpulse.analysis.disturbance import Remeasure
from torchpulse.analysis.ledger import NAME, Ledger
from torchpulse.analysis.model import Checked, Report


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


def plan(pending: Ledger, order: dict[str, int]) -> Remeasure:
    """What measures ``pending`` again: its commits (ordered by ``order``, a commit's
    position in the history) and benchmarks."""
    return Remeasure(tuple(sorted({c for c, _ in pending}, key=order.__getitem__)),
                     tuple(sorted({name for _, name in pending})))
