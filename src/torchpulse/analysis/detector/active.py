"""The regression active at the newest commit of an analysed series: the stable level it is
measured from (``baseline_of``), whether the series toggles between levels instead
(``toggle_amplitude``), and the rise's test, size and culprits (``regression``). The model
behind it: the package's docstring (torchpulse.analysis.detector)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from torchpulse.analysis.detector.drift import Piece
from torchpulse.analysis.detector.model import Regression
from torchpulse.analysis.detector.significance import Tester, max_split_pvalue

STABLE_COMMITS = 5  # a level held this long is a baseline; shorter segments are stepped over
# a change is worth an alert unless it is clearly smaller than --threshold: its estimate
# plus this many standard errors must reach the threshold (a true threshold-size step passes),
# and the estimate itself at least PRACTICAL_FLOOR of it
PRACTICAL_SE = 3.0
PRACTICAL_FLOOR = 0.5


def to_units(linear: bool) -> Callable[[float], float]:
    """From the analysis scale back to the metric's units."""
    return (lambda x: x) if linear else math.exp


def baseline_of(means: Sequence[float], edges: Sequence[int], last: int,
                lines: Sequence[bool]) -> int | None:
    """Where the regression at segment ``last`` started from: the newest stable segment
    (STABLE_COMMITS or more) below it, or an older stable one further down when the level
    only climbed since (two steps up are one regression). None when no stable level before
    is below the newest one. Short segments (dips, blips) and drifts are never a baseline."""
    stable = [i for i in range(last - 1, -1, -1)
              if edges[i + 1] - edges[i] >= STABLE_COMMITS and not lines[i]]
    stable = stable or [0]  # a series that starts with short segments: its first
    below = [i for i in stable if means[i] < means[last]]
    if not below:
        return None
    b = below[0]
    for i in stable[stable.index(b) + 1:]:
        # a climb: lower and older, and nothing between went above the newest level (a
        # 100x excursion up and back between two quiet levels is not a climb)
        if means[i] >= means[b] or max(means[i + 1:b], default=-math.inf) > means[last]:
            break
        b = i
    return b


def toggle_amplitude(means: Sequence[float], b: int, worth: float) -> float | None:
    """When the series toggles between levels, the size of the move, else None. It toggles
    when a level it reached since the baseline ``b`` (the newest, or any at least ``worth``
    above the baseline) was held before and left again: before the baseline, or since it
    with a return to the baseline's level in between. Levels match within a quarter of the
    move."""
    last = len(means) - 1
    amplitude = None
    for j in range(b + 1, last + 1):
        step = means[j] - means[b]
        if step <= 0 or (j < last and step < worth):
            continue
        near = step / 4.0
        # the last return to the baseline's level before j: the level j reached was held
        # before it (and so left again) when it was held at some i earlier than that
        back = max((k for k in range(b, j) if abs(means[k] - means[b]) <= near), default=-1)
        if any(abs(means[i] - means[j]) <= near for i in range(back) if i != b):
            amplitude = max(step, amplitude or 0.0)
    return amplitude


def _rise_test(tester: Tester, base: Piece, newest: Piece, net: float, drifting: bool,
               from_line: bool) -> tuple[float, float]:
    """The p-value and standard error of a rise of ``net`` from ``base`` to ``newest``:
    along the newest piece itself (``drifting``: a drift going on since its own start),
    from a drift's start (``from_line``), with a line on either side, or between two
    constant levels."""
    if drifting:
        se = tester.sigma * newest.rise_se
        return max_split_pvalue(abs(net) / se, newest.stop - newest.start), se
    if from_line or newest.line or base.line:
        before = base.variance[0] if from_line else 1.0 / (base.stop - base.start)
        se = tester.sigma * math.sqrt(before + (
            newest.variance[1] if newest.line else 1.0 / (newest.stop - newest.start)))
        return max_split_pvalue(abs(net) / se, newest.stop - base.start), se
    return tester.contrast(base.start, base.stop, newest.start, newest.stop)


def regression(tester: Tester, parts: Sequence[Piece], means: Sequence[float],
               jumps: set[int], keep: np.ndarray, b: int | None, threshold: float,
               clear_z: float | None, linear: bool, exact: bool) -> Regression | None:
    """The regression present at the newest commit: the newest piece (a segment, or a drift
    that goes on at the newest commit: where it has got to) against ``b``, the last stable
    segment before it, when the rise is significant and worth an alert. Its culprits: the
    change points up (``jumps``: where one starts a piece) and the drifts up on the way.
    ``clear_z``: on an unstable series, the multiple of its standard error the step must
    exceed."""
    last = len(means) - 1
    if b is None:
        return None
    base, newest = parts[b], parts[last]
    # a drift is never a baseline but where the series has nothing else before (b == last:
    # a drift going on now; or a drift from the first commit, then a level): its start is
    # then the level before, and the drift part of the rise
    from_line = base.line and b != last
    start = newest.first if b == last else base.first if from_line else means[b]
    net = means[last] - start
    p, se = (0.0, 0.0) if exact else _rise_test(tester, base, newest, net, b == last,
                                                from_line)  # exact: every move is real
    wanted = threshold * abs(start) if linear else math.log1p(threshold)  # linear: any
    if net + PRACTICAL_SE * se < wanted or net < PRACTICAL_FLOOR * wanted:  # rise from 0
        return None
    if clear_z is not None and net < clear_z * se:
        return None
    rising = [j for j in range(b if from_line else min(b + 1, last), last + 1)
              if parts[j].line and parts[j].last > parts[j].first]
    culprits = tuple(sorted({int(keep[parts[j + 1].start]) for j in range(b, last)
                             if parts[j + 1].start in jumps
                             and parts[j + 1].first > parts[j].last}
                            | {int(keep[parts[j].start]) for j in rising}))
    culprits = culprits or (int(keep[newest.start]),)  # a rise made of small moves
    drifts = tuple((int(keep[parts[j].start]), int(keep[parts[j].stop - 1])) for j in rising)
    back = to_units(linear)
    return Regression(culprits[0], culprits, back(start), back(means[last]), p, se,
                      noisy=clear_z is not None, drifts=drifts)
