"""What the detectors found, scored against the truth of a project: recall, location and
false alarms per cell of the synthetic family, per shape of the second, and the targets
torchpulse is held to."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from torchpulse.evaluation import moving, shapes
from torchpulse.evaluation.detectors import Found
from torchpulse.evaluation.shapes import NULL_SHAPES, best_split
from torchpulse.evaluation.synthetic import DISTANCES, NOISE_CVS, STEP_SIZES, Truth

# the patterns of real histories that are no regression (a dip that recovers, toggling
# between two levels, orders-of-magnitude jumps that come back)
REAL_HISTORY_KINDS = ("dip", "toggle", "magnitude")


@dataclass
class Score:
    """Counts for one detector over one group of series."""

    series: int = 0
    alarmed: int = 0  # series with at least one alert
    located: int = 0  # ... with an alert within one commit of the planted step

    def rate(self) -> float:
        return self.alarmed / self.series if self.series else float("nan")

    def location(self) -> float:
        return self.located / self.alarmed if self.alarmed else float("nan")


def score(truths: list[Truth], found: Found) -> dict[tuple, Score]:
    """Scores keyed by ("step", size, distance, cv) and (kind, cv) for the other kinds."""
    scores: dict[tuple, Score] = defaultdict(Score)
    for t in truths:
        hits = found.get((t.benchmark, t.param), [])
        key = ("step", t.size, t.distance, t.cv) if t.kind == "step" else (t.kind, t.cv)
        s = scores[key]
        s.series += 1
        if hits:
            s.alarmed += 1
            if t.kind == "step" and any(abs(h - t.at) <= 1 for h in hits):
                s.located += 1
    return scores


def pooled(scores: dict[tuple, Score], keys: list[tuple]) -> Score:
    total = Score()
    for k in keys:
        s = scores.get(k, Score())
        total.series += s.series
        total.alarmed += s.alarmed
        total.located += s.located
    return total


def targets(scores: dict[tuple, Score]) -> list[tuple[str, float, str, bool]]:
    """torchpulse's targets: (what, measured, target, met)."""
    five = [("step", 0.05, d, 0.02) for d in DISTANCES if d >= 3]
    big = [("step", s, d, cv) for s in STEP_SIZES if s >= 0.10 for d in DISTANCES if d >= 3
           for cv in NOISE_CVS]
    f5, fb = pooled(scores, five), pooled(scores, big)
    located = f5.located / f5.alarmed if f5.alarmed else 0.0
    noise = pooled(scores, [("noise", cv) for cv in NOISE_CVS])
    other = pooled(scores, [(k, cv) for k in ("improvement", "spike") for cv in NOISE_CVS])
    real = pooled(scores, [(k, cv) for k in REAL_HISTORY_KINDS for cv in NOISE_CVS])
    return [
        ("+5 % steps at 2 % noise, 3+ commits after: found", f5.rate(), ">= 96 %",
         f5.rate() >= 0.96),
        ("... located within one commit", located, ">= 95 %", located >= 0.95),
        ("+10 % or more, 3+ commits after: found", fb.rate(), ">= 99 %", fb.rate() >= 0.99),
        ("pure-noise series with a false alarm", noise.rate(), "<= 0.5 %",
         noise.rate() <= 0.005),
        ("improvement/spike series with a false alarm", other.rate(), "<= 5 %",
         other.rate() <= 0.05),
        ("dip/toggle/magnitude series with a false alarm", real.rate(), "<= 1 %",
         real.rate() <= 0.01),
    ]


# the second family: series shapes the synthetic generator never makes (shapes.py)

SHAPE_MARGIN = 5  # the all-change-points view: a finding within this many commits is a hit
SHAPE_LOCATED = 3  # a planted step is found when a change point lies within this many


@dataclass
class ShapeScore:
    """One (shape, change, size) cell: how the history view and the active view read it."""

    series: int = 0
    any_change: int = 0  # series with at least one change point (not counting drifts)
    change_points: int = 0
    located: int = 0  # planted steps with a change point within SHAPE_LOCATED commits
    bound: int = 0  # ... that the best single split (shapes.best_split) locates as closely
    drift_found: int = 0  # planted drifts with a drift finding overlapping them
    active: int = 0  # series with an active regression

    def share(self, count: int) -> float:
        return count / self.series if self.series else float("nan")


@dataclass
class Matching:
    """The all-change-points view against the truth, every series pooled."""

    findings: int = 0
    hits: int = 0  # findings that match a planted change
    truths: int = 0
    found: int = 0  # planted changes matched by a finding

    def f1(self) -> tuple[float, float, float]:
        p = self.hits / self.findings if self.findings else float("nan")
        r = self.found / self.truths if self.truths else float("nan")
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score_shapes(truths: list, history_view: dict, active_view: dict,
                 history: list[str], values: dict[tuple[str, str], list[float | None]]
                 ) -> tuple[dict[tuple, ShapeScore], Matching]:
    """Scores per (shape, change, size) cell, and the pooled matching of every finding;
    ``values``: each series' stored value per commit of ``history`` (None: none stored)."""
    position = {c: i for i, c in enumerate(history)}
    findings: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
    for a in history_view["alerts"]:
        key = (a["benchmark"], a["params"][0])
        if a.get("drifts"):
            for d in a["drifts"]:
                findings[key].append(("drift", position[d["first"]], position[d["last"]]))
        else:
            findings[key].append(("change", position[a["commit"]], position[a["commit"]]))
    active = {(a["benchmark"], a["params"][0]) for a in active_view["alerts"]
              if a["direction"] == "regression"}
    cells: dict[tuple, ShapeScore] = defaultdict(ShapeScore)
    matching = Matching()
    for t in truths:
        key = (t.benchmark, t.param)
        got = findings.get(key, [])
        changes = [at for kind, at, _ in got if kind == "change"]
        drifts = [(a, b) for kind, a, b in got if kind == "drift"]
        after = len(history) - t.at if t.shape == "count" and t.change == "step" else 0
        cell = cells[(t.shape, t.change, t.size, after)]
        cell.series += 1
        cell.any_change += bool(changes)
        cell.change_points += len(changes)
        cell.active += key in active
        planted = []  # (kind, first, last) of every planted change
        if t.change == "step":
            planted.append(("change", t.at, t.at))
            cell.located += any(abs(c - t.at) <= SHAPE_LOCATED for c in changes)
            cell.bound += abs(best_split(values[key]) - t.at) <= SHAPE_LOCATED
        if t.change == "drift" or t.shape == "stepdrift":
            a, b = (t.at, t.end) if t.change == "drift" else (0, len(history) - 1)
            planted.append(("drift", a, b))
            cell.drift_found += t.change == "drift" and any(
                first <= b + SHAPE_MARGIN and last >= a - SHAPE_MARGIN for first, last in drifts)
        matching.truths += len(planted)
        matching.findings += len(got)
        used = [False] * len(got)
        for kind, a, b in planted:
            hit = False
            for i, (fkind, f, last) in enumerate(got):
                near = (abs(f - a) <= SHAPE_MARGIN if kind == "change"
                        else f <= b + SHAPE_MARGIN and last >= a - SHAPE_MARGIN)
                if fkind == kind and near and (not used[i] or kind == "drift"):
                    used[i], hit = True, True
            matching.found += hit
        matching.hits += sum(used)
    return cells, matching


def shape_targets(cells: dict[tuple, ShapeScore]) -> list[tuple[str, float, str, bool]]:
    nulls = [c for (shape, change, *_), c in cells.items() if change == "none"]
    worst_shape, worst = max(((shape, c.share(c.any_change)) for (shape, change, *_), c
                              in cells.items() if change == "none" and shape in NULL_SHAPES),
                             key=lambda x: x[1], default=("-", 0.0))
    constant = cells.get(("constant", "none", 0.0, 0), ShapeScore())
    count = cells.get(("count", "step", 1.0, max(shapes.COUNT_AFTER)), ShapeScore())
    located = count.share(count.located)
    bound = count.share(count.bound)
    return [
        (f"null series of a new shape with any change point (worst: {worst_shape})", worst,
         "< 1 %", worst < 0.01 and bool(nulls)),
        ("exactly constant series with any change point",
         constant.share(constant.any_change), "0 %", constant.series > 0
         and constant.any_change == 0),
        (f"+1 unit on a count that moves by one, {max(shapes.COUNT_AFTER)} commits after: "
         "located within 3 commits", located,
         ">= 95 %", located >= 0.95),
        (f"... the same, against the best single split ({bound * 100:.1f} %, what the data "
         "allow): located within 3 commits", located, f">= {bound * 100:.1f} % - 2.5",
         located >= bound - 0.025),
    ]


def moving_targets(cells: dict[tuple, ShapeScore]) -> list[tuple[str, float, str, bool]]:
    """Per kind of the moving family: null series with any change point (< 1 %), and planted
    steps of 3 deviations or more located within SHAPE_LOCATED commits (>= 90 %)."""
    out = []
    for kind in moving.KINDS:
        null = cells.get((kind, "none", 0.0, 0), ShapeScore())
        steps = [c for (shape, change, size, _), c in cells.items()
                 if shape == kind and change == "step" and size >= 3 * moving.SIGMA - 1e-12]
        located = sum(c.located for c in steps) / max(sum(c.series for c in steps), 1)
        share = null.share(null.any_change)
        out += [(f"{kind}: null series with any change point", share, "< 1 %",
                 null.series > 0 and share < 0.01),
                (f"{kind}: steps of 3+ deviations located within {SHAPE_LOCATED} commits",
                 located, ">= 90 %", bool(steps) and located >= 0.90)]
    return out
