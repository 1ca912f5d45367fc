"""Change detection on single series: levels, p-values, steps, spikes, thresholds."""

import math

import numpy as np
import pytest

from torchpulse.analysis.detect import (
    Point,
    analyse,
    benjamini_hochberg,
    find_spikes,
    max_split_pvalue,
)


def make(levels, cv=0.01, samples=5, seed=0, jitter=0.5):
    """Points around 10 ms whose log level follows ``levels``."""
    rng = np.random.default_rng(seed)
    points = []
    for i, lv in enumerate(levels):
        run = rng.normal(0, jitter * cv)
        s = 0.01 * np.exp(lv + run + rng.normal(0, cv, samples))
        points.append(Point(f"c{i}", float(np.median(s)), tuple(float(x) for x in s)))
    return points


def step(n, at, size):
    lv = np.zeros(n)
    lv[at:] += math.log1p(size)
    return lv


def test_level_drops_an_interrupted_sample_and_falls_back_to_the_value():
    p = Point("c", 1.0, (1.0, 1.01, 0.99, 1.0, 3.0))
    assert math.exp(p.level()) == pytest.approx(1.0, abs=0.01)
    assert Point("c", 2.0).level() == pytest.approx(math.log(2.0))
    assert Point("c", 1.0, (1.0, 1.02, 0.98)).within_cv() > 0
    assert Point("c", 1.0).within_cv() is None


def test_siegmund_pvalue_matches_simulation():
    rng = np.random.default_rng(1)
    m, sims = 30, 20000
    x = rng.normal(size=(sims, m))
    c = np.cumsum(x, axis=1)
    k = np.arange(1, m)
    left, right = c[:, :-1] / k, (c[:, -1:] - c[:, :-1]) / (m - k)
    z = np.abs((right - left) / np.sqrt(1 / k + 1 / (m - k))).max(axis=1)
    for b in (2.5, 3.0):
        assert max_split_pvalue(b, m) == pytest.approx((z > b).mean(), rel=0.15)
    assert max_split_pvalue(0.0, 30) == 1.0
    assert max_split_pvalue(3.0, 1) == 1.0


def test_a_step_with_three_commits_after_is_active_at_its_commit():
    verdict = analyse(make(step(60, 57, 0.10)))
    assert [c.index for c in verdict.active] == [57]
    assert verdict.active[0].ratio == pytest.approx(1.10, abs=0.02)
    assert verdict.active[0].pvalue < 1e-6


def test_a_large_step_at_the_newest_commit_is_active():
    verdict = analyse(make(step(60, 59, 0.30)))
    assert [c.index for c in verdict.active] == [59]


def test_pure_noise_raises_nothing():
    for seed in range(20):
        verdict = analyse(make(np.zeros(60), cv=0.02, seed=seed))
        assert verdict.active == ()


def test_an_improvement_is_a_change_point_but_never_a_regression():
    verdict = analyse(make(step(60, 40, -0.20)))
    assert [c.index for c in verdict.change_points] == [40]
    assert verdict.change_points[0].ratio < 1
    assert verdict.active == ()


def test_a_one_commit_spike_is_set_aside():
    lv = np.zeros(60)
    lv[30] = math.log1p(0.3)
    verdict = analyse(make(lv))
    assert verdict.spikes == (30,)
    assert verdict.active == ()


def test_a_regression_fixed_later_is_not_active():
    lv = step(60, 20, 0.2)
    lv[40:] = 0.0
    verdict = analyse(make(lv))
    assert sorted(c.index for c in verdict.change_points) == [20, 40]
    assert verdict.active == ()


def test_threshold_drops_changes_clearly_smaller():
    points = make(step(60, 40, 0.01), cv=0.001)
    assert analyse(points, threshold=0.05).active == ()
    assert [c.index for c in analyse(points, threshold=0.005).active] == [40]


def test_short_series_get_no_verdict():
    verdict = analyse(make(step(4, 2, 0.5)))
    assert verdict.active == () and verdict.noise.unstable
    assert math.isinf(verdict.noise.mde)


def test_noise_report_flags_noise_too_large_for_the_threshold():
    quiet = analyse(make(np.zeros(60), cv=0.005)).noise
    loud = analyse(make(np.zeros(60), cv=0.08)).noise
    assert not quiet.unstable and quiet.mde < 0.05
    assert loud.unstable and loud.mde > 0.05
    assert loud.cv > quiet.cv > 0 and loud.within_cv > quiet.within_cv


def test_noiseless_series_report_every_move():
    points = [Point(f"c{i}", 1.0 if i < 7 else 2.0) for i in range(10)]
    verdict = analyse(points)
    assert [c.index for c in verdict.active] == [7]


def test_find_spikes_needs_agreeing_neighbours():
    lv = np.zeros(10)
    lv[4] = 1.0
    assert find_spikes(lv, 0.01) == [4]
    lv[5:] = 1.0  # a step, not a spike
    assert find_spikes(lv, 0.01) == []


def test_benjamini_hochberg():
    assert benjamini_hochberg([0.001, 0.02, 0.5], 0.05) == 0.02
    assert benjamini_hochberg([0.3, 0.4], 0.05) == 0.0
    assert benjamini_hochberg([], 0.05) == 0.0
