"""``torchpulse compare BASE HEAD --stored``: two commits compared from the results already
stored for them, measuring nothing. Made for ``torchpulse record``'s builds (one commit a
torch build): the alert needs five commits a side before it judges a series, while a
comparison of two builds needs none where the stored values decide.

Per series recorded at both commits (on one machine; any environment):

* a count or an exact counter (instructions, kernels, graph breaks) repeats from run to run,
  so its one value a side decides, as ``compare`` decides it after one run (culprit.counted);
* anything timed is decided from two or more records a side, by their levels (each
  record's own processes, at its own time: the machine's noise between records is in the
  interval): the levels ``record`` keeps of every full record of a commit
  (``results.records``; asv keeps the newest only), or one a side per environment of the
  machine that recorded it. One record a side leaves it undecided,
  for ``compare --python`` to decide: its samples come from one asv job, and on the 2.13.0
  against 2.14.1 records an interval of them called seven LSTM timings 10-35 % slower and
  the machine canary itself 10 % faster, while interleaved runs decided none of them. The
  machine canary is compared like any series, so the report shows whether the machine moved
  between the records.

The interval is Welch's, of the mean log values, at ``1 - alpha``; the decision is
``sequential.change``'s on it (slower or faster beyond the threshold, equivalent within it,
else undecided). The result is a ``compare.Comparison`` with one outcome per series, so the
reports are compare's; what the records add (the torch builds, the functions behind a moved
count) travels beside it.
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from scipy import stats

from torchpulse.analysis import sequential
from torchpulse.analysis.detector import Point
from torchpulse.analysis.disturbance import CANARY_METHOD
from torchpulse.analysis.sequential import UNDECIDED, Interval
from torchpulse.analysis.series import Series, SeriesError, load_series
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.culprit import counted
from torchpulse.culprit.compare import NOT_COMPARED, Comparison, Outcome
from torchpulse.instructions import profiles
from torchpulse.kinds import COUNT
from torchpulse.results import builds, records, triage
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
    # the repository's triage file as read for the comparison (its directions)
    triage: triage.Triage = triage.NONE


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


@dataclass
class _Side:
    """What one commit holds of a series: its stored points (one an environment) and the
    log level of every record of it (those ``record`` kept, else each point's own)."""

    points: list[Point] = field(default_factory=list)
    levels: list[float] = field(default_factory=list)


def _outcome(name: str, unit: str, rule: str, a: _Side, b: _Side, limit: float,
             alpha: float) -> Outcome:
    base = statistics.median(p.value for p in a.points)
    head = statistics.median(p.value for p in b.points)
    if not (base > 0 and head > 0):
        return Outcome(name, NOT_COMPARED, None, min(len(a.points), len(b.points)), base,
                       head, f"value {base if not base > 0 else head!r}", unit)
    if counted.repeats(rule):
        diff = math.log(head) - math.log(base)
        return Outcome(name, counted.decide(diff, rule, limit), counted.interval(diff, rule),
                       min(len(a.points), len(b.points)), base, head, unit=unit)
    runs = min(len(a.levels), len(b.levels))
    iv = welch(a.levels, b.levels, alpha)
    if iv is None:
        return Outcome(name, UNDECIDED, None, runs, base, head,
                       "one record a side (record each build again, or compare --python "
                       "decides it)", unit)
    # the records' levels, as the interval sees them (asv's value is the newest record's)
    base, head = (math.exp(statistics.median(x.levels)) for x in (a, b))
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
                   settings: Settings = DEFAULTS) -> StoredComparison:
    """HEAD against BASE from the results ``project`` stores for them on ``machine``
    (the one machine that recorded both when None), each series by its kind's threshold in
    ``settings``; ``bench``: a regular expression the series' names must match (as asv's
    --bench)."""
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
    rules = triage.read(project.root)  # a benchmark rule's direction
    kept: dict[tuple[str, str], list[dict[str, float]]] = {}  # (commit, env): its records

    def levels(commit: str, env: str, name: str, mine: list[Point]) -> list[float]:
        if (commit, env) not in kept:
            kept[(commit, env)] = records.read(project.root, on, commit, env)
        found = [math.log(r[name]) for r in kept[(commit, env)] if name in r]
        return found or [p.level() for p in mine]

    # one series a (benchmark, parameters): a build may be recorded in several environments
    # (records of one build before and after the launcher)
    sides: dict[tuple, tuple[Series, _Side, _Side]] = {}
    envs: dict[tuple, tuple[set[str], set[str]]] = {}  # where each side was recorded
    for s in series:
        if s.key.machine != on:
            continue
        ident = (s.key.benchmark, s.key.params)
        first, a, b = sides.setdefault(ident, (s, _Side(), _Side()))
        where = envs.setdefault(ident, (set(), set()))
        for commit, side, found_in in ((base, a, where[0]), (head, b, where[1])):
            mine = [p for p in s.points if p.commit == commit]
            if mine:
                side.points.extend(mine)
                side.levels.extend(levels(commit, s.key.env, s.key.name, mine))
                found_in.add(s.key.env)
    outcomes, one_sided, recorded_in = [], 0, {}
    for ident, (s, a, b) in sides.items():
        if not a.points or not b.points:
            one_sided += 1
            continue
        rule = s.rule
        found = _outcome(s.key.name, s.unit, rule, a, b, counted.threshold_of(rule, settings),
                         settings.alpha)
        said = rules.higher_is_better(s.key.name)
        outcomes.append(dataclasses.replace(found, decision=counted.oriented(
            found.decision, s.higher_is_better if said is None else said)))
        recorded_in[s.key.name] = (s.key, *(sorted(e) for e in envs[ident]))
    if not outcomes:
        raise SeriesError(f"no series was recorded at both {base[:12]} and {head[:12]} on "
                          f"machine {on!r}")
    outcomes.sort(key=lambda o: o.key)
    runs = sum(o.rounds for o in outcomes)
    comparison = Comparison(base, head, settings, 1, outcomes, runs)
    every_a = sorted({e for _, ea, _ in recorded_in.values() for e in ea})
    every_b = sorted({e for _, _, eb in recorded_in.values() for e in eb})
    return StoredComparison(comparison, on,
                            (_first(builds.read(project.root, base, e) for e in every_a),
                             _first(builds.read(project.root, head, e) for e in every_b)),
                            _functions(project, comparison, recorded_in), one_sided, rules)


def _first(found):
    return next((x for x in found if x is not None), None)


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
        key, envs_a, envs_b = keys[o.key]
        workload = workload_of(key)
        before = _first(profile(c.base, e) for e in envs_a)
        after = _first(profile(c.head, e) for e in envs_b)
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


def record_levels(project: Project, commit: str, env: str,
                  machine: str | None = None) -> tuple[str, dict[str, float]] | None:
    """The machine a record of ``commit`` in ``env`` was just filed on (``machine``, or the
    one whose results file of it is newest: asv's default machine) and the level of each of
    its timed series there, what ``results.records`` keeps of a record; None when no
    results file holds that commit and environment."""
    from torchpulse.results import asv_results

    results_dir = project.results_dir
    if machine is None:
        found = []
        for folder in results_dir.iterdir() if results_dir.is_dir() else ():
            candidate = results_dir / asv_results.filename(folder.name, commit, env)
            if folder.is_dir() and not folder.is_symlink() and candidate.is_file():
                found.append((candidate.stat().st_mtime, folder.name))
        if not found:
            return None
        machine = max(found)[1]
    series, _ = load_series(results_dir, History([commit]), machine)
    levels = {s.key.name: math.exp(p.level()) for s in series
              if s.key.env == env and not counted.repeats(s.rule)
              for p in s.points if p.commit == commit}
    return (machine, levels) if levels else None
