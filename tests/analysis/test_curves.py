"""Curved drifts: a staircase of same-way findings along a smooth curve read as one drift,
real steps in a row kept (detector.curves)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from moving_points import moving_points

from torchpulse.analysis.detector import Point, analyse, curves
from torchpulse.analysis.detector.model import ChangePoint, Drift, Regression


def _points(log_levels):
    return [Point(f"c{i}", 0.01 * math.exp(v)) for i, v in enumerate(log_levels)]


def _without_curves(monkeypatch, series):
    with monkeypatch.context() as patch:
        patch.setattr(curves, "spans", lambda *args: [])
        return [analyse(points) for points in series]


@pytest.mark.parametrize("kind", ["exponential", "polynomial", "logistic"])
def test_a_rise_along_a_curve_loses_its_staircase(monkeypatch, kind):
    series = [moving_points(kind, seed) for seed in range(30)]
    merged = [analyse(points) for points in series]
    plain = _without_curves(monkeypatch, series)
    with_changes = sum(bool(v.change_points) for v in merged)
    assert with_changes < sum(bool(v.change_points) for v in plain)
    for m, p in zip(merged, plain, strict=True):
        assert len(m.change_points) <= len(p.change_points)
        # what went is covered by a drift up: the rise is still found, as one finding
        gone = {c.index for c in p.change_points} - {c.index for c in m.change_points}
        assert all(any(d.start <= i <= d.end and d.after > d.before for d in m.drifts)
                   for i in gone)


@pytest.mark.parametrize("kind", ["exponential", "polynomial", "logistic"])
def test_most_rises_without_a_step_get_no_change_point(kind):
    """With the ramp and the logistic beside the cubic, and the staircase charged for where
    its steps lie, 2-4 of these 30 series keep a change point (9-13 with the cubic alone
    and the steps charged for their levels only)."""
    assert sum(bool(analyse(moving_points(kind, seed)).change_points)
               for seed in range(30)) <= 6


def test_real_steps_in_a_row_keep_their_change_points(monkeypatch):
    """Three flat steps of 3 % in 1 % noise: a cubic cannot follow them."""
    series = []
    for seed in range(15):
        rng = np.random.default_rng(seed)
        x = rng.normal(0.0, 0.01, 100)
        first, gap = int(rng.integers(15, 40)), int(rng.integers(8, 20))
        for k in range(3):
            x[first + k * gap:] += 0.03
        series.append(_points(x))
    assert [analyse(p) for p in series] == _without_curves(monkeypatch, series)


def _logistic_rise(n=100, centre=0.5, width=0.08, sigma=0.01, seed=0):
    t = np.linspace(0.0, 1.0, n)
    rise = 10 * sigma / (1.0 + np.exp(-(t - centre) / width))
    return rise + np.random.default_rng(seed).normal(0.0, sigma, n)


def test_a_step_beside_a_rise_is_real_even_where_the_curve_could_bend_to_it():
    """The added-step test fits the curve again with the step in it: a logistic rise with
    a 5-deviation step twenty commits after its centre has a real step, the rise alone
    none."""
    x = np.arange(100.0)
    plain = _logistic_rise(seed=4)
    stepped = plain + np.where(x >= 72, 0.05, 0.0)
    run = [curves._Finding(45, 45, True, True), curves._Finding(72, 72, True, True)]
    assert curves._real_step(x, stepped, run)
    assert not curves._real_step(x, plain, run)


@pytest.mark.parametrize("kind", ["exponential", "polynomial", "logistic"])
def test_steps_planted_on_a_curve_are_still_located(kind):
    """Steps of 5 noise deviations planted on each trend, away from its ends: the merge
    keeps their change points (at most one of 20 lost, as evaluate-detection reports)."""
    located = 0
    for seed in range(20):
        at = 30 + (seed * 7) % 45
        verdict = analyse(moving_points(kind, seed, step_at=at))
        located += any(abs(c.index - at) <= 3 for c in verdict.change_points)
    assert located >= 19


def test_a_curve_that_fits_exactly_leaves_no_step_and_white_residuals():
    """A noiseless quadratic: the cubic leaves only rounding, which neither the added-step
    test nor the whiteness test may read as structure (an F of rounding over rounding)."""
    x = np.arange(60.0)
    y = 0.1 * (x / 59) ** 2
    run = [curves._Finding(20, 20, True, True), curves._Finding(40, 40, True, True)]
    assert curves._smooth(x, y)[0] < 1e-20
    assert not curves._real_step(x, y, run)
    assert curves._white(y - curves._curve(x, y), y)
    changes = [ChangePoint(20, 1.0, 1.01, 1e-6, 0.001), ChangePoint(40, 1.01, 1.04, 1e-6, 0.001)]
    assert [(a, b) for a, b, _ in curves.spans(x, y, changes, [])] == [(0, 59)]


def test_long_spans_bound_the_candidate_curves():
    """A span of thousands of commits is tried against at most KNOTS candidate knots, and
    the candidate curves are held CELLS values at a time: the work grows with the span, not
    its square, and the memory not at all."""
    x = np.arange(5000.0)
    blocks = list(curves._ramps(x))
    assert sum(len(b) for b in blocks) <= curves.KNOTS * (curves.KNOTS - 1) // 2
    logistics = list(curves._logistics(x))
    assert sum(len(b) for b in logistics) == 41 * 16
    assert max(b.size for b in blocks + logistics) <= curves.CELLS
    y = 0.1 / (1.0 + np.exp(-(x - 2500.0) / 300.0)) \
        + np.random.default_rng(0).normal(0.0, 0.002, 5000)
    fitted = curves._curve(x, y)
    assert float(np.sqrt(np.mean((y - fitted) ** 2))) < 0.0025  # the noise's 0.002


def test_a_turn_keeps_the_change_point_at_its_corner(monkeypatch):
    """A rise, a fall at its top, then a smooth decline and recovery: the fall has no
    points before it inside the span (the rise ends there), so the curve never sees the
    level it left, and it stays a change point, where without that rule the curve took it."""
    t = np.arange(120)
    y = np.where(t < 60, t / 600, 0.0)
    s = (t[60:] - 60) / 60
    y[60:] = 0.05 - 0.04 * s + 0.03 * s**2
    y = y + np.random.default_rng(1).normal(0.0, 0.002, 120)
    changes = [ChangePoint(60, 1.1, 1.05, 1e-6, 0.01), ChangePoint(75, 1.05, 1.03, 1e-3, 0.01)]
    drifts = [Drift(0, 59, 1.0, 1.1, 1e-6)]
    assert curves.spans(t, y, changes, drifts) == []
    monkeypatch.setattr(curves, "HELD", 0)
    assert [(a, b) for a, b, _ in curves.spans(t, y, changes, drifts)] == [(60, 119)]


def test_spans_find_the_run_and_merge_points_the_regression_at_it():
    t = np.arange(100)
    rng = np.random.default_rng(3)
    y = 0.1 * np.expm1(4.0 * t / 99) / np.expm1(4.0) + rng.normal(0.0, 0.002, 100)
    changes = [ChangePoint(40, 1.0, 1.01, 1e-3, 0.003), ChangePoint(60, 1.01, 1.03, 1e-4, 0.003)]
    drifts = [Drift(70, 99, 1.03, 1.1, 1e-8)]
    found = curves.spans(t, y, changes, drifts)
    assert [(first, last) for first, last, _ in found] == [(0, 99)]
    regression = Regression(40, (40, 60, 70), 1.0, 1.1, 1e-3, 0.003, drifts=((70, 99),))
    kept, merged, pointed = curves.merge(t, y, changes, drifts, regression, math.exp)
    assert kept == ()
    assert len(merged) == 1 and (merged[0].start, merged[0].end) == (0, 99)
    assert merged[0].pvalue == 1e-8  # the least of the run's
    assert merged[0].after > merged[0].before
    # the level rose along the curve: its culprits and drifts are the curve's drift
    assert (pointed.index, pointed.culprits, pointed.drifts) == (0, (0,), ((0, 99),))
    # a culprit of the regression's own, not in the run (a step at the newest commits),
    # stays
    fresh = Regression(40, (40, 98), 1.0, 1.2, 1e-3, 0.003)
    _, _, pointed = curves.merge(t, y, changes, drifts, fresh, math.exp)
    assert (pointed.culprits, pointed.drifts) == ((0, 98), ((0, 99),))
    # a run of one finding is no staircase
    assert curves.spans(t, y, changes[:1], []) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=60),
       st.lists(st.tuples(st.integers(0, 59), st.booleans(), st.integers(0, 10)),
                max_size=6))
# found by a fresh clone's run: a rising run (a drift, a step) and a falling one (two steps)
# on a flat series, both explained, whose spans shared the points between them
@example([0.0] * 12, [(0, True, 1), (2, True, 0), (8, False, 0), (9, False, 0)])
def test_any_findings_give_disjoint_spans_inside_the_series(values, marks):
    y = np.array(values)
    positions = np.arange(len(y))
    changes, drifts, used = [], [], set()
    for at, up, length in sorted(marks):
        end = min(at + length, len(y) - 1)
        if at >= len(y) or used & set(range(at, end + 1)):
            continue
        used |= set(range(at, end + 1))
        before, after = (1.0, 2.0) if up else (2.0, 1.0)
        if length == 0:
            changes.append(ChangePoint(at, before, after, 0.001, 0.1))
        else:
            drifts.append(Drift(at, end, before, after, 0.001))
    found = curves.spans(positions, y, changes, drifts)
    last = -1
    for first, end, run in found:
        assert last < first <= end < len(y)
        assert len(run) >= 2 and len({f.up for f in run}) == 1
        last = end
    kept, merged, _ = curves.merge(positions, y, changes, drifts, None, math.exp)
    assert len(kept) + len(merged) <= len(changes) + len(drifts)
