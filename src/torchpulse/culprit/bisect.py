"""``torchpulse bisect GOOD BAD --bench NAME``: binary search for the first bad commit, each
probe decided by a sequential test (``torchpulse.analysis.sequential``).

1. GOOD and BAD are measured interleaved until their difference is established (its sign
   says whether "bad" is slower or faster) or shown to be within the threshold (no step:
   nothing to bisect).
2. Each probe P, a first-parent commit between the last known good and the first known bad
   one, is measured in rounds of three runs (GOOD, P, BAD in a rotating order, each in
   fresh processes). A round's evidence is P's log value against the midpoint of GOOD's and
   BAD's, signed so that the bad side is positive; runs are added until its interval lies
   on one side of zero. The error budget ``alpha`` is split evenly over the baseline test
   and the expected number of probes (log2 of the candidates), and within each test over
   its looks.
3. A probe still undecided at the cap ends the search: the culprit is reported as a range,
   never guessed.

``fixed_rounds`` replaces the sequential tests by a fixed number of rounds and the sign of
the mean: the usual scheme (TorchBench's and most scripts'), kept as the comparison.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from torchpulse.analysis import sequential
from torchpulse.analysis.sequential import BAD, GOOD, UNDECIDED, Interval
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.culprit import counted
from torchpulse.culprit.runs import Measure, Run, RunError, each
from torchpulse.kinds import EXACT

_ORDERS = list(itertools.permutations(range(3)))  # GOOD, probe, BAD in every order in turn


@dataclass(frozen=True)
class Probe:
    commit: str
    index: int  # position in the candidates (0 = the first commit after GOOD)
    decision: str  # good, bad or undecided
    interval: Interval  # of the probe against the midpoint, bad side positive
    rounds: int
    runs: list[Run] = field(default_factory=list, repr=False, compare=False)
    llr: float | None = None  # the SPRT's log likelihood ratio, bad over good, when it ran


@dataclass(frozen=True)
class Bisection:
    good: str
    bad: str
    key: str
    candidates: list[str]  # first-parent commits after GOOD up to BAD, oldest first
    baseline: Interval  # log(BAD / GOOD)
    step: str  # "slower", "faster" or why there is nothing to bisect
    probes: list[Probe]
    low: int  # index of the last commit known good (-1: GOOD itself)
    high: int  # index of the first commit known bad
    repeats: bool = False  # a count or counter: one run a commit decided, no rounds

    @property
    def runs(self) -> int:
        """The benchmark runs the search made: GOOD and BAD once each and a run a probe for
        a metric that repeats; else GOOD and BAD a round each and three runs (GOOD, probe,
        BAD) a probe round."""
        if self.repeats:
            return 2 + len(self.probes)
        return 2 * self.baseline.n + 3 * self.rounds

    @property
    def found(self) -> str | None:
        """The first bad commit, when the search narrowed it to one."""
        return self.candidates[self.high] if self.high - self.low == 1 and self.bisected \
            else None

    @property
    def bisected(self) -> bool:
        return self.step in (sequential.SLOWER, sequential.FASTER)

    @property
    def suspects(self) -> list[str]:
        return self.candidates[self.low + 1:self.high + 1]

    @property
    def rounds(self) -> int:
        return sum(p.rounds for p in self.probes)


def expected_probes(candidates: int) -> int:
    return max(1, math.ceil(math.log2(candidates))) if candidates > 1 else 0


def _value(run: Run, key: str) -> float:
    value = run.values.get(key)
    if value is None:
        names = ", ".join(sorted(run.values)[:5]) or "none"
        raise RunError(f"{run.commit[:12]} has no benchmark {key!r} (measured: {names}); "
                       "give one name, with its parameters for a parameterised one, e.g. "
                       "name('a', 1)")
    if not (math.isfinite(value) and value > 0):
        raise RunError(f"{key} has no usable value at {run.commit[:12]} ({value!r}): it "
                       "failed or was skipped there")
    return math.log(value)


def _baseline(measure: Measure, good: str, bad: str, key: str, threshold: float,
              alpha: float, max_rounds: int, fixed: int | None,
              progress: Callable[[str], None] | None,
              first: float) -> tuple[Interval, str, list[float]]:
    """GOOD against BAD in rounds until the step is established; ``first``: the first
    round's BAD - GOOD, measured already."""
    diffs: list[float] = []
    schedule = {fixed} if fixed else set(sequential.looks(max_rounds))
    level = alpha / len(schedule)
    for r in range(1, (fixed or max_rounds) + 1):
        if r == 1:
            diffs.append(first)
        else:
            pair = (good, bad) if r % 2 else (bad, good)
            got = dict(zip(pair, each(measure, pair, [key]), strict=True))
            diffs.append(_value(got[bad], key) - _value(got[good], key))
        if r not in schedule:
            continue
        iv = sequential.interval(diffs, level)
        if fixed:
            return iv, sequential.SLOWER if iv.mean > 0 else sequential.FASTER, diffs
        if iv.low > 0 or iv.high < 0:
            return iv, sequential.SLOWER if iv.low > 0 else sequential.FASTER, diffs
        if sequential.change(iv, threshold) == sequential.EQUIVALENT:
            return iv, f"no step: BAD is within {threshold:.0%} of GOOD", diffs
        if progress:
            progress(f"GOOD vs BAD after {r} rounds: {iv.ratio - 1:+.1%} "
                     f"[{iv.ratio_low - 1:+.1%}, {iv.ratio_high - 1:+.1%}], undecided")
    return iv, f"undecided: GOOD and BAD not shown to differ after {max_rounds} rounds", diffs


def _probe(measure: Measure, good: str, bad: str, commit: str, index: int, key: str,
           sign: float, alpha: float, max_rounds: int, fixed: int | None,
           pool: sequential.Pool, steps: list[float]) -> tuple[Probe, list[float]]:
    """Measure a probe until the SPRT puts it on a side (or ``fixed`` rounds, then the sign
    of the mean). ``steps`` holds every round's BAD - GOOD so far (signed, so positive) and
    gains this probe's: the distance between the two sides, known better with every round."""
    diffs: list[float] = []
    runs: list[Run] = []
    level = alpha / 2  # the interval shown as evidence, at the probe's budget
    for r in range(1, (fixed or max_rounds) + 1):
        trio = (good, commit, bad)
        order = _ORDERS[(r - 1) % len(_ORDERS)]
        measured = dict(zip(order, each(measure, [trio[slot] for slot in order], [key]),
                            strict=True))
        got = {slot: _value(run, key) for slot, run in measured.items()}
        runs.append(measured[1])
        diffs.append(sign * (got[1] - (got[0] + got[2]) / 2))
        steps.append(sign * (got[2] - got[0]))
        if r < sequential.MIN_ROUNDS or (fixed and r < fixed):
            continue
        # a probe's difference combines 1 + 1/4 + 1/4 runs' variance
        iv = sequential.interval(diffs, level, pool, factor=1.5)
        llr = None
        if fixed:
            decision: str | None = BAD if iv.mean > 0 else GOOD
        else:
            variance = sequential.variance_bound(pool.add(diffs, factor=1.5)) * 1.5
            half_step = math.fsum(steps) / len(steps) / 2
            decision = sequential.sprt(diffs, half_step, variance, alpha)
            if half_step > 0 and variance > 0:
                llr = sequential.log_likelihood_ratio(diffs, half_step, variance)
        if decision is None and r == max_rounds:
            decision = UNDECIDED
        if decision is not None:
            return Probe(commit, index, decision, iv, r, runs, llr), diffs
    raise AssertionError("the last round always decides")  # pragma: no cover


def bisect(measure: Measure, good: str, candidates: Sequence[str], key: str,
           settings: Settings = DEFAULTS, max_rounds: int = 20,
           fixed_rounds: int | None = None,
           progress: Callable[[str], None] | None = None,
           on_probe: Callable[[Probe], None] | None = None) -> Bisection:
    """Search ``candidates`` (the first-parent commits after ``good``, oldest first, the
    last one BAD) for the first whose ``key`` is on BAD's side, judged by its kind's
    threshold in ``settings`` at ``settings.alpha``. A counted ``key`` (instructions) or an
    exact counter is decided from one run of each commit (torchpulse.culprit.counted);
    kernel time is timed in rounds, as wall time is."""
    alpha = settings.alpha
    if not candidates:
        raise RunError("GOOD and BAD are the same commit: nothing to bisect")
    bad = candidates[-1]
    budget = alpha / (1 + expected_probes(len(candidates)))
    if progress:
        progress(f"{len(candidates)} commit(s) after GOOD; about "
                 f"{expected_probes(len(candidates))} probe(s); measuring GOOD against BAD")
    first = dict(zip((good, bad), each(measure, (good, bad), [key]), strict=True))
    ends = _value(first[good], key), _value(first[bad], key)
    which = counted.rule(first[bad].unit(key) or first[good].unit(key))
    threshold = counted.threshold_of(which, settings)
    if counted.repeats(which) and fixed_rounds is None:
        return _bisect_counted(measure, good, candidates, key, ends, which, threshold,
                               progress, on_probe)
    baseline, step, diffs = _baseline(measure, good, bad, key, threshold, budget, max_rounds,
                                      fixed_rounds, progress, ends[1] - ends[0])
    pool = sequential.Pool().add(diffs, factor=2.0)  # BAD - GOOD: two runs' variance
    steps = [d * (1.0 if step == sequential.SLOWER else -1.0) for d in diffs]
    if step not in (sequential.SLOWER, sequential.FASTER):
        return Bisection(good, bad, key, list(candidates), baseline, step, [], -1,
                         len(candidates) - 1)
    if progress:
        progress(f"BAD is {step} than GOOD: {baseline.ratio - 1:+.1%} "
                 f"[{baseline.ratio_low - 1:+.1%}, {baseline.ratio_high - 1:+.1%}]")
    sign = 1.0 if step == sequential.SLOWER else -1.0

    def probe_at(mid: int) -> Probe:
        nonlocal pool
        probe, diffs = _probe(measure, good, bad, candidates[mid], mid, key, sign, budget,
                              max_rounds, fixed_rounds, pool, steps)
        pool = pool.add(diffs, factor=1.5)
        return probe

    probes, low, high = _search(len(candidates), probe_at, progress, on_probe)
    return Bisection(good, bad, key, list(candidates), baseline, step, probes, low, high)


def _search(candidates: int, probe_at: Callable[[int], Probe],
            progress: Callable[[str], None] | None,
            on_probe: Callable[[Probe], None] | None) -> tuple[list[Probe], int, int]:
    """The binary search itself: (probes, last known good, first known bad), stopping at
    the first undecided probe."""
    low, high = -1, candidates - 1
    probes: list[Probe] = []
    while high - low > 1:
        mid = (low + high) // 2
        probe = probe_at(mid)
        probes.append(probe)
        if on_probe:
            on_probe(probe)
        if progress:
            progress(describe(probe, candidates))
        if probe.decision == UNDECIDED:
            break
        if probe.decision == GOOD:
            low = mid
        else:
            high = mid
    return probes, low, high


def _bisect_counted(measure: Measure, good: str, candidates: Sequence[str], key: str,
                    ends: tuple[float, float], which: str, threshold: float,
                    progress: Callable[[str], None] | None,
                    on_probe: Callable[[Probe], None] | None) -> Bisection:
    """Binary search on a metric that repeats: GOOD and BAD measured once (``ends``, log
    values), each probe once, on the side of the midpoint it lies."""
    bad = candidates[-1]
    diff = ends[1] - ends[0]
    baseline = counted.interval(diff, which)
    step = counted.decide(diff, which, threshold)
    if step == sequential.EQUIVALENT:
        said = "differs in nothing" if which == EXACT else f"is within {threshold * 100:g}%"
        return Bisection(good, bad, key, list(candidates), baseline,
                         f"no step: BAD {said} of GOOD (one run each: the metric repeats)",
                         [], -1, len(candidates) - 1, repeats=True)
    if progress:
        progress(f"BAD is {step} than GOOD: {baseline.ratio - 1:+.2%} (counted: one run a "
                 "commit decides)")
    sign = 1.0 if step == sequential.SLOWER else -1.0

    def probe_at(mid: int) -> Probe:
        run = measure(candidates[mid], [key])
        value = _value(run, key)
        x = sign * (value - (ends[0] + ends[1]) / 2)
        return Probe(candidates[mid], mid, counted.side(value, *ends),
                     counted.interval(x, which), 1, [run])

    probes, low, high = _search(len(candidates), probe_at, progress, on_probe)
    return Bisection(good, bad, key, list(candidates), baseline, step, probes, low, high,
                     repeats=True)


def odds(probe: Probe) -> str:
    """The SPRT's likelihood ratio for the side it chose, as odds ("odds 240:1 bad")."""
    if probe.llr is None:
        return ""
    side = BAD if probe.llr >= 0 else GOOD
    return f"odds {math.exp(min(abs(probe.llr), 700)):.3g}:1 {side}"


def describe(probe: Probe, candidates: int) -> str:
    iv = probe.interval
    said = odds(probe)
    return (f"probe {probe.commit[:12]} (commit {probe.index + 1} of {candidates}): "
            f"{probe.decision} after {probe.rounds} round(s){', ' + said if said else ''}; "
            f"against the GOOD/BAD midpoint {iv.ratio - 1:+.1%} "
            f"[{iv.ratio_low - 1:+.1%}, {iv.ratio_high - 1:+.1%}] (bad side positive)")
