"""``torchpulse compare BASE HEAD --stored``: two commits compared from the results already
stored for them, measuring nothing. Made for ``torchpulse record``'s builds (one commit a
torch build): the alert needs five commits a side before it judges a series, while a
comparison of two builds needs none where the stored values decide.

Per series recorded at both commits (on one machine; any environment):

* a count or an exact counter (instructions, kernels, graph breaks) repeats from run to run,
  so its one value a side decides, as ``compare`` decides it after one run (culprit.counted);
* anything timed is decided from its runs: with two or more records a side, from their levels
  (each a process of its own, so the machine's process-to-process noise is in the interval);
  with one record a side, from the samples it stored (asv's ``--record-samples``, which
  ``record`` passes). Those come from one asv job a side: a machine that was slower for the
  whole of one job reads as a change of the build. The machine canary is compared like any
  series, so the report shows whether the machine moved between the two records.

The interval is Welch's, of the mean log values, at ``1 - alpha``; the decision is
``sequential.change``'s on it (slower or faster beyond the threshold, equivalent within it,
else undecided). The result is a ``compare.Comparison`` with one outcome per series, so the
reports are compare's; what the records add (the torch builds, the functions behind a moved
count) travels beside it.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from scipy import stats

from torchpulse.analysis import sequential
from torchpulse.analysis.defaults import DEFAULT_COUNT_THRESHOLD, DEFAULT_DEVICE_THRESHOLD
from torchpulse.analysis.detector import Point
from torchpulse.analysis.disturbance import CANARY_METHOD
from torchpulse.analysis.sequential import UNDECIDED, Interval
from torchpulse.analysis.series import COUNT, Series, SeriesError, load_series
from torchpulse.culprit import counted
from torchpulse.culprit.compare import NOT_COMPARED, Comparison, Outcome
from torchpulse.instructions import profiles
from torchpulse.results import builds
from torchpulse.results import index as results_index
from torchpulse.results.gitrepo import GitError, History
from torchpulse.results.project import Project


@dataclass(frozen=True)
class StoredComparison:
    comparison: Comparison
    machine: str
    # the torch builds ``record`` stored for BASE and HEAD (None where none was)
    builds: tuple[builds.Build | None, builds.Build | None]
    # per moved instruction count's key: profiles.differences of the two commits' profiles
    functions: dict[str, tuple] = field(default_factory=dict)
    # series recorded at only one of the two commits (not compared)
    one_sided: int = 0


def welch(a: Sequence[float], b: Sequence[float], alpha: float) -> Interval | None:
    """The 1 - ``alpha`` interval of mean(b) - mean(a) (log values) with Welch's degrees of
    freedom; None with fewer than two values a side. Two constant sides give an interval of
    zero width (a deterministic metric: memory in bytes)."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return None
    ma, mb = math.fsum(a) / na, math.fsum(b) / nb
    va, vb = statistics.variance(a) / na, statistics.variance(b) / nb
    mean = mb - ma
    if va + vb == 0:
        return Interval(min(na, nb), mean, mean, mean, 1 - alpha)
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    half = float(stats.t.ppf(1 - alpha / 2, df)) * math.sqrt(va + vb)
    return Interval(min(na, nb), mean, mean - half, mean + half, 1 - alpha)


def _evidence(points: list[Point]) -> list[float]:
    """A side's log values: each record's level when there are two or more records, else the
    one record's samples (its value when it stored none)."""
    if len(points) >= 2:
        return [p.level() for p in points]
    data = points[0]._clean(linear=False)
    return [float(x) for x in data] if len(data) else [math.log(points[0].value)]


def _outcome(name: str, unit: str, rule: str, a: list[Point], b: list[Point], limit: float,
             alpha: float) -> Outcome:
    base = statistics.median(p.value for p in a)
    head = statistics.median(p.value for p in b)
    runs = min(len(a), len(b))
    if not (base > 0 and head > 0):
        return Outcome(name, NOT_COMPARED, None, runs, base, head,
                       f"value {base if not base > 0 else head!r}", unit)
    if counted.repeats(rule):
        diff = math.log(head) - math.log(base)
        return Outcome(name, counted.decide(diff, rule, limit), counted.interval(diff, rule),
                       runs, base, head, unit=unit)
    iv = welch(_evidence(a), _evidence(b), alpha)
    if iv is None:
        return Outcome(name, UNDECIDED, None, runs, base, head,
                       "one value a side: record again with samples", unit)
    return Outcome(name, sequential.change(iv, limit) or UNDECIDED, iv, runs, base, head,
                   unit=unit)


def _machine(series: list[Series], base: str, head: str, machine: str | None) -> str:
    both = sorted({s.key.machine for s in series
                   if {p.commit for p in s.points} >= {base, head}})
    if machine is not None or len(both) == 1:
        return machine or both[0]
    if not both:
        raise SeriesError(f"no series was recorded at both {base[:12]} and {head[:12]}")
    raise SeriesError(f"both commits were recorded on several machines ({', '.join(both)}): "
                      "choose one with --machine")


def compare_stored(project: Project, base_rev: str, head_rev: str, *,
                   machine: str | None = None, bench: str | None = None,
                   threshold: float = 0.05, alpha: float = 0.05,
                   count_threshold: float = DEFAULT_COUNT_THRESHOLD,
                   device_threshold: float = DEFAULT_DEVICE_THRESHOLD) -> StoredComparison:
    """HEAD against BASE from the results ``project`` stores for them on ``machine``
    (the one machine that recorded both when None); ``bench``: a regular expression the
    series' names must match (as asv's --bench)."""
    try:
        base, head = project.resolve(base_rev), project.resolve(head_rev)
    except GitError as exc:
        raise SeriesError(str(exc)) from None
    history = History([base] if base == head else [base, head])
    where = results_index.location(project.root, project.results_dir)
    series, _ = load_series(project.results_dir, history, machine, index=where)
    if bench is not None:
        pattern = re.compile(bench)
        series = [s for s in series if pattern.search(s.key.name)]
    on = _machine(series, base, head, machine)
    # one series a (benchmark, parameters): a record's environment may differ between builds
    sides: dict[tuple, tuple[Series, list[Point], list[Point]]] = {}
    for s in series:
        if s.key.machine != on:
            continue
        ident = (s.key.benchmark, s.key.params)
        first, a, b = sides.get(ident, (s, [], []))
        a = a + [p for p in s.points if p.commit == base]
        b = b + [p for p in s.points if p.commit == head]
        sides[ident] = (first, a, b)
    outcomes, one_sided, envs = [], 0, {}
    for s, a, b in sides.values():
        if not a or not b:
            one_sided += 1
            continue
        rule = s.rule
        limit = counted.threshold_of(rule, threshold, count_threshold, device_threshold)
        outcomes.append(_outcome(s.key.name, s.unit, rule, a, b, limit, alpha))
        envs[s.key.name] = s.key
    if not outcomes:
        raise SeriesError(f"no series was recorded at both {base[:12]} and {head[:12]} on "
                          f"machine {on!r}")
    outcomes.sort(key=lambda o: o.key)
    runs = sum(o.rounds for o in outcomes)
    comparison = Comparison(base, head, threshold, alpha, 1, outcomes, runs, count_threshold,
                            device_threshold)
    env = next(iter(envs.values())).env
    return StoredComparison(comparison, on,
                            (builds.read(project.root, base, env),
                             builds.read(project.root, head, env)),
                            _functions(project, comparison, envs), one_sided)


def _functions(project: Project, c: Comparison, keys: dict) -> dict[str, tuple]:
    """What grew behind each count that went up, what shrank behind each that went down,
    from the function profiles stored for the two commits (none where one is missing)."""
    from torchpulse.analysis.pipeline import workload_of
    from torchpulse.analysis.series import rule_of

    where = profiles.folder(project.root)
    found: dict[str, tuple] = {}
    cache: dict[tuple[str, str], dict | None] = {}

    def profile(commit: str, env: str) -> dict | None:
        if (commit, env) not in cache:
            cache[(commit, env)] = profiles.read(where, commit, env)
        return cache[(commit, env)]

    for o in c.outcomes:
        if o.decision not in (sequential.SLOWER, sequential.FASTER) or not o.unit \
                or rule_of(o.unit) != COUNT:
            continue
        key = keys[o.key]
        workload = workload_of(key)
        before, after = profile(c.base, key.env), profile(c.head, key.env)
        if workload is None or not before or not after or workload not in before \
                or workload not in after:
            continue
        direction = 1 if o.decision == sequential.SLOWER else -1
        found[o.key] = profiles.differences(before[workload], after[workload],
                                            direction=direction)
    return found


def canary_ratio(c: Comparison) -> float | None:
    """HEAD's canary level against BASE's: how much the machine moved between the records."""
    for o in c.outcomes:
        if o.key.split("(", 1)[0].endswith(CANARY_METHOD) and o.base and o.head:
            return o.head / o.base
    return None

