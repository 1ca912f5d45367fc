"""Decisions from one run a side, for metrics that repeat: instruction counts and exact
counters (analysis/series.py: the COUNT and EXACT rules).

A run of a commit counts the same instructions as the next run of it (docs/instructions.md:
identical across processes, busy machine or not), and dynamo's counters are exact. Repeating
such a run adds nothing, so ``compare`` decides them after its first round and ``bisect``
measures GOOD, BAD and each probe once: a bisection over 32 commits costs 2 + 5 runs. A
counted metric is read to its kind's resolution (torchpulse.kinds: how far apart runs of
one commit may be); the interval shown is the difference plus and minus it.
"""

from __future__ import annotations

import math

from torchpulse.analysis import sequential
from torchpulse.analysis.sequential import Interval
from torchpulse.analysis.series import rule_of
from torchpulse.analysis.settings import Settings
from torchpulse.kinds import EXACT, KINDS, TIME, unit_of


def rule(unit: str | None) -> str:
    """TIME or DEVICE (they need repeated runs), COUNT or EXACT (one run a side decides)."""
    return rule_of(unit) if unit else TIME


def repeats(which: str) -> bool:
    """Whether a metric judged by rule ``which`` repeats from run to run, so that one run a
    side decides (its kind's row, torchpulse.kinds): instruction counts and exact counters
    do; wall time and kernel time (which moves up to a few tenths of a percent between
    processes) do not."""
    return KINDS[which].repeats


def threshold_of(which: str, settings: Settings) -> float:
    """The threshold a metric judged by rule ``which`` is decided with, as the alert maps
    them (Settings.threshold_for); 0 for an exact counter, on which any change counts."""
    return settings.threshold_for(which) or 0.0


def interval(diff: float, which: str) -> Interval:
    """One run a side's evidence, log(B / A), with the metric's resolution either side."""
    r = math.log1p(KINDS[which].resolution)
    return Interval(1, diff, diff - r, diff + r, 1.0)


def decide(diff: float, which: str, threshold: float) -> str:
    """Slower, faster or equivalent, from one run a side: an exact counter changes with any
    difference; a count when the difference reaches ``threshold``."""
    bound = 0.0 if which == EXACT else math.log1p(threshold)
    if which == EXACT and diff == 0.0:
        return sequential.EQUIVALENT
    if diff >= bound and diff > 0:
        return sequential.SLOWER
    if diff <= -bound and diff < 0:
        return sequential.FASTER
    return sequential.EQUIVALENT


def oriented(decision: str, higher_is_better: bool) -> str:
    """``decision`` (of B's value against A's) for a metric where a drop is the regression:
    a higher value is then faster, a lower one slower."""
    if not higher_is_better:
        return decision
    return {sequential.SLOWER: sequential.FASTER,
            sequential.FASTER: sequential.SLOWER}.get(decision, decision)


def higher_is_better(unit: str | None) -> bool:
    """Whether a drop is the regression for a benchmark in ``unit`` (its row)."""
    return bool(unit) and unit_of(unit).higher_is_better


def side(value: float, good: float, bad: float) -> str:
    """Where a probe's log ``value`` lies between GOOD's and BAD's: nearer BAD is bad,
    nearer GOOD good, exactly between them undecided (a step in two equal parts)."""
    x = (value - (good + bad) / 2) * (1.0 if bad > good else -1.0)
    return sequential.BAD if x > 0 else sequential.GOOD if x < 0 else sequential.UNDECIDED
