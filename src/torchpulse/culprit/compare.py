"""``torchpulse compare BASE HEAD``: a paired, interleaved A/B comparison that adds runs until
each benchmark is decided (``torchpulse.analysis.sequential``).

Round r measures both commits back to back (one asv run where the measure can), BASE first
in odd rounds and HEAD first in even ones, each in fresh processes. Only the benchmarks
still undecided are run again. A benchmark without a usable value on one side (failed,
skipped, missing, not positive) cannot be compared and says so; it does not stop the
others.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from torchpulse.analysis import sequential
from torchpulse.analysis.defaults import MIN_ROUNDS
from torchpulse.analysis.sequential import UNDECIDED, Interval
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.culprit import counted
from torchpulse.culprit.runs import Measure, Run, RunError, each
from torchpulse.kinds import EXACT

NOT_COMPARED = "not compared"
DECISIONS = (sequential.SLOWER, sequential.FASTER, sequential.EQUIVALENT, UNDECIDED,
             NOT_COMPARED)


@dataclass(frozen=True)
class Outcome:
    key: str
    decision: str  # one of DECISIONS
    interval: Interval | None  # of log(head / base), at the level the decision used
    rounds: int  # runs of each commit that went into the decision
    base: float | None  # median value of the base runs
    head: float | None
    why: str = ""  # for NOT_COMPARED: what was missing
    unit: str | None = None  # the benchmark's declared unit, when a run said it


@dataclass(frozen=True)
class Comparison:
    base: str
    head: str
    settings: Settings  # alpha and each kind's threshold (torchpulse.kinds) it decided with
    max_rounds: int
    outcomes: list[Outcome]
    runs: int  # processes started, both commits

    @property
    def threshold(self) -> float:
        """The threshold on wall time and memory."""
        return self.settings.threshold

    @property
    def alpha(self) -> float:
        return self.settings.alpha

    @property
    def slower(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.decision == sequential.SLOWER]


def _usable(value: float | None, exact: bool = False) -> bool:
    """A value compare can take: finite and positive; zero too for an exact counter (no
    synchronisation, no graph break), which is compared by its difference."""
    return value is not None and math.isfinite(value) and (value >= 0 if exact else value > 0)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def compare(measure: Measure, base: str, head: str, settings: Settings = DEFAULTS,
            max_rounds: int = 20, progress: Callable[[str], None] | None = None,
            budget: float | None = None,
            clock: Callable[[], float] = time.monotonic,
            higher_is_better: Callable[[str], bool | None] | None = None) -> Comparison:
    """Compare HEAD with BASE, benchmark by benchmark: a timed one in interleaved rounds
    until the sequential test decides at ``settings.alpha``; a counted one (instructions)
    or an exact counter from the first round's one run a side; each by its kind's
    threshold in ``settings``. ``budget``: seconds the whole comparison may take; after the
    second round (before the first look) the cap on rounds is lowered to what fits, from
    how long that round took. The cap depends on time only, never on what was measured,
    and is fixed before any look, so the looks' error budget holds. A benchmark where a drop
    is the regression (its unit's row, or ``higher_is_better(key)``: the triage file's
    rules) is slower when HEAD's value is lower; its values and interval stay as measured."""
    alpha = settings.alpha

    def limit(which: str) -> float:
        return counted.threshold_of(which, settings)

    def oriented(k: str, decision: str) -> str:
        said = higher_is_better(k) if higher_is_better else None
        return counted.oriented(decision, counted.higher_is_better(units[k])
                                if said is None else said)

    schedule = set(sequential.looks(max_rounds))
    level = sequential.per_look_alpha(alpha, max_rounds)
    diffs: dict[str, list[float]] = {}
    seen: dict[str, dict[str, list[float]]] = {}
    done: dict[str, Outcome] = {}
    units: dict[str, str | None] = {}
    pending: list[str] | None = None  # None: the first round, every selected benchmark
    runs = 0
    started = clock()
    round_started = started
    r = 0
    while r < max_rounds:
        r += 1
        # roles, not commits, key the runs: BASE and HEAD may be one commit (a noise check)
        roles = ("base", "head") if r % 2 else ("head", "base")
        got: dict[str, Run] = dict(zip(roles, each(
            measure, [base if role == "base" else head for role in roles], pending),
            strict=True))
        runs += 2
        if pending is None:
            pending = sorted(set(got["base"].values) | set(got["head"].values))
            if not pending:
                raise RunError("no benchmark was measured: check --bench")
            seen = {k: {"base": [], "head": []} for k in pending}
            diffs = {k: [] for k in pending}
            units = {k: got["head"].unit(k) or got["base"].unit(k) for k in pending}
        for k in list(pending):
            a, b = got["base"].values.get(k), got["head"].values.get(k)
            which = counted.rule(units[k])
            exact = which == EXACT
            for role, value in (("base", a), ("head", b)):
                if _usable(value, exact):
                    seen[k][role].append(value)
            if exact and _usable(a, exact) and _usable(b, exact) and 0 in (a, b):
                # from or to zero: no ratio, the difference decides
                diff = 0.0 if a == b else math.inf if b > a else -math.inf
                done[k] = Outcome(k, oriented(k, counted.decide(diff, which, 0.0)), None, r,
                                  a, b, unit=units[k])
                continue
            if not (_usable(a, exact) and _usable(b, exact)):
                role = "base" if not _usable(a) else "head"
                value = a if role == "base" else b
                why = "not measured" if value is None else f"value {value!r}"
                done[k] = Outcome(k, NOT_COMPARED, None, r, _median(seen[k]["base"]),
                                  _median(seen[k]["head"]), f"{role} run {r}: {why}", units[k])
                continue
            diffs[k].append(math.log(b) - math.log(a))
            if counted.repeats(which):  # a second run a side adds nothing
                d = diffs[k][0]
                done[k] = Outcome(k, oriented(k, counted.decide(d, which, limit(which))),
                                  counted.interval(d, which), r, a, b, unit=units[k])
        pending = [k for k in pending if k not in done]
        if budget is not None and r == MIN_ROUNDS - 1 and pending:
            now = clock()
            fits = r + int((started + budget - now) // max(now - round_started, 1e-9))
            capped = max(MIN_ROUNDS, min(max_rounds, fits))
            if capped < max_rounds:
                max_rounds = capped
                schedule = set(sequential.looks(max_rounds))
                level = sequential.per_look_alpha(alpha, max_rounds)
                if progress:
                    progress(f"a round takes {now - round_started:.0f} s: the "
                             f"{budget / 60:g}-minute budget allows {max_rounds} runs of each")
        round_started = clock()
        if r in schedule:
            for k in pending:
                iv = sequential.interval(diffs[k], level)
                decision = sequential.change(iv, limit(counted.rule(units[k])))
                if decision is None and r == max_rounds:
                    decision = UNDECIDED
                if decision is not None:
                    done[k] = Outcome(k, oriented(k, decision), iv, r,
                                      _median(seen[k]["base"]),
                                      _median(seen[k]["head"]), unit=units[k])
            pending = [k for k in pending if k not in done]
        if progress:
            progress(f"round {r}: {len(done)} of {len(done) + len(pending)} benchmark(s) "
                     f"decided, {runs} runs")
        if not pending:
            break
    return Comparison(base, head, settings, max_rounds, [done[k] for k in sorted(done)], runs)
