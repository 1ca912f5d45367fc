"""Change detection on single series: levels, p-values, steps, spikes, thresholds."""

import math

import numpy as np
import pytest
from moving_points import moving_points

from torchpulse.analysis.detector import MAD_TO_SD, Point, analyse, benjamini_hochberg, significance
from torchpulse.analysis.detector.noise import find_spikes, heavy_tailed, resolution, spread
from torchpulse.analysis.detector.significance import (
    REACH_CAP,
    commits_to_reach,
    max_split_pvalue,
    mde_factor,
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


def test_the_written_out_power_z_is_scipys_and_scipy_waits_for_its_first_use():
    import os
    import subprocess
    import sys

    from scipy import stats

    assert significance.POWER_Z == stats.norm.ppf(0.8)
    # and the detector never needs scipy.stats (its import is 0.5-0.9 s of an alert)
    code = ("import sys, torchpulse.analysis.pipeline as a; print('scipy.special' in sys.modules); "
            "from torchpulse.analysis.detector import significance as s; s.critical_z(20, 0.01); "
            "print('scipy.special' in sys.modules); "
            "sys.path.insert(0, sys.argv[1]); from moving_points import moving_points; "
            "from torchpulse.analysis.detector import analyse; "
            "[analyse(moving_points(k, 0, step_at=50)) for k in ('walk', 'quote', 'seasonal', "
            "'outliers')]; print('scipy.stats' in sys.modules)")
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code, tests], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "False"]


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
    assert verdict.active == () and not verdict.noise.unstable  # too few commits to say
    assert math.isinf(verdict.noise.mde)


def test_noise_report_flags_noise_too_large_for_the_threshold():
    quiet = analyse(make(np.zeros(60), cv=0.005)).noise
    loud = analyse(make(np.zeros(60), cv=0.08)).noise
    assert not quiet.unstable and quiet.mde < 0.05
    assert loud.unstable and loud.mde > 0.05
    assert loud.cv > quiet.cv > 0 and loud.within_cv > quiet.within_cv


def test_the_detectable_step_shrinks_with_commits_and_levels_off():
    limit = math.log1p(0.05)
    assert math.isinf(mde_factor(3, 0.01))
    assert mde_factor(5, 0.01) > mde_factor(10, 0.01) > mde_factor(30, 0.01)
    assert mde_factor(30, 0.01) == pytest.approx(mde_factor(60, 0.01), rel=0.02)
    reach = commits_to_reach(0.016, 5, 0.01, limit)
    assert 6 < reach < REACH_CAP
    assert mde_factor(reach, 0.01) * 0.016 <= limit < mde_factor(reach - 1, 0.01) * 0.016
    # beyond about limit / 2.6 no number of commits gets there
    assert commits_to_reach(limit / 2.4, 5, 0.01, limit) is None


def _repeating(n, d):
    """n commits whose log levels repeat one fixed pattern of deviations scaled by d: the
    same noise whatever the length."""
    pattern = [0.0, 1.0, -0.8, 0.4, -0.6, 0.9, -1.0, 0.2, -0.3, 0.7]
    return [Point(f"c{i}", 0.01 * math.exp(d * pattern[i % len(pattern)])) for i in range(n)]


def test_an_unstable_series_says_from_how_many_commits_it_would_be_ok():
    near = analyse(_repeating(5, 0.02)).noise
    assert near.unstable and near.reach == 6
    assert not analyse(_repeating(6, 0.02)).noise.unstable  # as projected
    far = analyse(_repeating(5, 0.03)).noise
    assert far.unstable and far.reach is None
    assert analyse(_repeating(30, 0.03)).noise.unstable  # not within reach, as said
    assert analyse(_repeating(30, 0.01)).noise.reach is None  # ok: nothing to project
    runs = [(1.0, 6), (1.2, 5), (1.0, 7), (1.2, 6), (1.0, 8), (1.2, 5)]
    toggling = analyse(make(levels_of(*runs))).noise
    assert toggling.unstable and toggling.reach is None  # more commits do not help a toggle


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


# --- what real histories do --------------------------------------------------------------------

def levels_of(*runs):
    """Log levels from (relative level, commits) runs."""
    return np.concatenate([np.full(n, math.log(level)) for level, n in runs])


def test_a_return_from_a_dip_is_not_a_regression_and_size_is_against_the_stable_level():
    # 65 ms, a three-commit dip to 36 us, back at 76 ms, then an improvement to 3.8 ms
    history = levels_of((1.0, 20), (36e-6 / 65e-3, 3), (76 / 65, 15), (3.8 / 65, 6))
    assert analyse(make(history)).active == ()
    # without the improvement the rise is active, measured against 65 ms, not the dip
    (active,) = analyse(make(history[:-6])).active
    assert active.ratio == pytest.approx(76 / 65, rel=0.02)
    assert active.before == pytest.approx(0.01, rel=0.02)
    assert active.index == 23  # the first commit back from the dip


def test_two_steps_up_are_one_alert_naming_both_culprits():
    (active,) = analyse(make(levels_of((1.0, 30), (1.1, 10), (1.25, 10)))).active
    assert active.culprits == (30, 40) and active.index == 30
    assert active.ratio == pytest.approx(1.25, rel=0.02)


def test_a_partly_fixed_regression_stays_active_at_its_net_size():
    (active,) = analyse(make(levels_of((1.0, 30), (1.2, 10), (1.1, 10)))).active
    assert active.index == 30 and active.ratio == pytest.approx(1.1, rel=0.02)


def test_losing_an_improvement_is_a_regression_against_the_improved_level():
    (active,) = analyse(make(levels_of((1.0, 20), (0.5, 20), (0.8, 10)))).active
    assert active.index == 40 and active.ratio == pytest.approx(1.6, rel=0.03)


def test_toggling_between_two_levels_is_unstable_not_a_regression():
    runs = [(1.0, 6), (1.2, 5), (1.0, 7), (1.2, 6), (1.0, 8), (1.2, 5)]
    verdict = analyse(make(levels_of(*runs)))
    assert verdict.active == ()
    assert verdict.noise.toggling and verdict.noise.unstable
    assert verdict.noise.mde >= 0.15


def test_a_toggle_whose_low_runs_since_the_baseline_are_short_is_unstable():
    # the only stable low level is the first: every later return to it is short, so the
    # high level was reached, left back to the baseline's level and reached again since it
    runs = [(1.0, 16), (1.13, 12), (1.0, 4), (1.13, 15), (1.0, 4), (1.13, 3), (1.0, 3),
            (1.13, 3)]
    verdict = analyse(make(levels_of(*runs)))
    assert verdict.active == () and verdict.noise.toggling


def test_a_toggle_ending_between_its_levels_is_unstable():
    # the newest runs sit between the two levels; the high level reached since the baseline
    # was held (and left) before it
    runs = [(1.0, 16), (1.07, 6), (0.98, 5), (1.07, 4), (0.99, 5), (1.07, 3), (0.984, 8),
            (1.07, 7), (1.027, 6)]
    verdict = analyse(make(levels_of(*runs)))
    assert verdict.active == () and verdict.noise.toggling


def test_a_rise_after_an_excursion_is_measured_from_the_level_just_before_it():
    # 1000x down and back, 100x up and back, a long quiet level, then a 20 % step: the
    # regression starts at the step, not at the excursion up (which came back down)
    history = levels_of((1.0, 8), (1e-3, 4), (0.99, 5), (100.0, 4), (1.0, 30), (1.2, 4))
    (active,) = analyse(make(history)).active
    assert active.index == 51 and active.culprits == (51,)
    assert active.ratio == pytest.approx(1.2, rel=0.03)


def test_orders_of_magnitude_dip_and_return_raise_nothing():
    history = levels_of((1.0, 25), (1e-3, 2), (1.0, 15), (1e-3, 4), (1.0, 10))
    verdict = analyse(make(history))
    assert verdict.active == ()


def test_a_failure_rate_rising_from_zero_is_a_regression():
    values = [0.0] * 20 + [0.125] * 3
    verdict = analyse([Point(f"c{i}", v) for i, v in enumerate(values)])
    assert verdict.linear
    (active,) = verdict.active
    assert active.index == 20 and active.before == 0.0 and active.after == 0.125
    assert math.isinf(active.ratio)
    assert analyse([Point(f"c{i}", 0.0) for i in range(20)]).active == ()


def test_a_noisy_series_alerts_only_on_a_step_that_clearly_exceeds_its_noise():
    # 8 % noise: unstable for a 5 % threshold. An 8 % step three commits ago is sometimes
    # significant, but rarely what the test finds with 80 % power
    verdicts = [analyse(make(step(60, 57, 0.08), cv=0.08, seed=s)) for s in range(40)]
    assert all(v.noise.unstable for v in verdicts)
    assert sum(bool(v.active) for v in verdicts) <= 4
    (big,) = analyse(make(step(60, 57, 1.0), cv=0.08)).active
    assert big.noisy and big.ratio == pytest.approx(2.0, rel=0.1)


def test_nothing_clearly_below_the_threshold_is_reported():
    # a 2 % step on a noisy series: its estimate plus 3 SE may reach 5 %, the estimate not
    for seed in range(10):
        verdict = analyse(make(step(60, 55, 0.02), cv=0.02, seed=seed))
        assert all(a.ratio - 1 >= 0.025 for a in verdict.active)


# --- series shapes beyond lognormal noise: counts, constants, coarse timers, drifts ---


def _count(n, seed, step_at=None, centre=0.6):
    """An integer count around 34 that moves by one unit, three distinct values."""
    rng = np.random.default_rng(seed)
    moves = rng.choice([-1.0, 0.0, 1.0], size=n, p=[(1 - centre) / 2, centre, (1 - centre) / 2])
    level = 34.0 + (np.arange(n) >= step_at if step_at is not None else 0.0)
    return [Point(f"c{i}", float(v)) for i, v in enumerate(level + moves)]


def test_spread_does_not_collapse_on_ties_or_two_modes():
    ties = np.array([0.0] * 70 + [1.0] * 15 + [-1.0] * 15)
    assert MAD_TO_SD * np.median(np.abs(ties)) == 0.0  # what the median deviation says
    assert spread(ties) == pytest.approx(np.sqrt(0.3), rel=0.35)
    modes = np.array([0.0] * 70 + [4.0] * 30)
    assert spread(modes) > 1.0  # the larger mode alone would say 0
    normal = np.random.default_rng(0).normal(0, 1, 200)
    assert spread(normal) == pytest.approx(MAD_TO_SD * np.median(np.abs(normal
                                                                       - np.median(normal))))


def test_resolution_is_a_grid_of_three_values_or_none():
    assert resolution(np.array([33.0, 34.0, 35.0, 34.0])) == 1.0
    assert resolution(np.array([19e-6, 20e-6, 22e-6])) == pytest.approx(1e-6)
    assert resolution(np.array([0.010, 0.015])) == 0.0  # two values may be a step
    assert resolution(np.array([0.0101, 0.0132, 0.0177])) == 0.0  # continuous


def test_max_split_pvalue_is_one_near_zero():
    # Siegmund's tail approximation tends to 0 there; no stretch is split by nothing
    assert max_split_pvalue(1e-12, 100) == pytest.approx(1.0)
    assert max_split_pvalue(0.5, 100) > 0.5


@pytest.mark.parametrize("seed", range(6))
def test_a_count_that_moves_by_one_unit_has_no_change_point(seed):
    verdict = analyse(_count(200, seed))
    assert verdict.change_points == () and verdict.active == () and verdict.drifts == ()
    assert verdict.noise.cv > 0.005  # its real noise (0.63 of 34), not a collapsed floor


def test_one_unit_up_on_a_count_is_found_where_it_is():
    found = 0
    for seed in range(10):
        verdict = analyse(_count(100, seed, step_at=75))
        found += any(abs(c.index - 75) <= 3 for c in verdict.change_points)
    assert found >= 9


@pytest.mark.parametrize("value", [123456789.0, 0.0123])
def test_an_exactly_constant_series_is_ok_at_the_noise_floor(value):
    verdict = analyse([Point(f"c{i}", value) for i in range(40)])
    assert verdict.change_points == () and verdict.active == ()
    assert verdict.noise.cv == pytest.approx(0.001) and not verdict.noise.unstable
    assert 0 < verdict.noise.mde < 0.05
    # a step of 2 % on it is real; one below the floor is not
    stepped = [Point(f"c{i}", value * (1.02 if i >= 30 else 1.0)) for i in range(40)]
    assert [c.index for c in analyse(stepped).change_points] == [30]
    tiny = [Point(f"c{i}", value * (1.0002 if i >= 30 else 1.0)) for i in range(40)]
    assert analyse(tiny).change_points == ()
    assert analyse(stepped, noise_floor=0.05).change_points == ()  # the user's floor


# ResNet-18's backward, counted at 22 commits that change nothing it runs
# (experiments/instructions/null_history.sh, 2026-11-29): it creeps by 480 instructions
CREEPING_COUNT = [15929999, 15930017, 15930017, 15930142, 15930142, 15930167, 15930167,
                  15930168, 15930168, 15930168, 15930168, 15930141, 15930141, 15930467,
                  15930467, 15930541, 15930541, 15930479, 15930479, 15930479, 15930479,
                  15930479]


def test_a_count_creeping_far_under_the_floor_keeps_the_floor_and_its_one_percent_steps():
    """A creep of 0.003 % leaves residuals correlated like a wander's: their spread is
    widened for it, then floored. The floor itself is no wander to widen (widened, it read
    0.38 %, the series unstable at the 1 % count threshold, and a +1 % step held by the
    newest three commits was not alerted)."""
    points = [Point(f"c{i}", float(v)) for i, v in enumerate(CREEPING_COUNT)]
    verdict = analyse(points, threshold=0.01)
    assert verdict.change_points == () and verdict.active == ()
    assert verdict.noise.cv == pytest.approx(0.001) and not verdict.noise.unstable
    stepped = points + [Point(f"s{i}", CREEPING_COUNT[-1] * 1.01) for i in range(3)]
    verdict = analyse(stepped, threshold=0.01)
    assert [r.index for r in verdict.active] == [len(points)]


def test_a_timer_that_rounds_to_a_coarse_tick_has_no_change_point():
    rng = np.random.default_rng(3)
    points = []
    for i in range(120):
        samples = np.round(20e-6 * np.exp(rng.normal(0, 0.01) + rng.normal(0, 0.02, 5)) / 1e-6)
        samples = samples * 1e-6
        points.append(Point(f"c{i}", float(np.median(samples)), tuple(samples.tolist())))
    verdict = analyse(points)
    assert verdict.change_points == () and verdict.active == ()


def _drift(n, a, b, total, noise=0.0, seed=0, step_at=None):
    rng = np.random.default_rng(seed)
    ramp = np.clip((np.arange(n) - a) / (b - a), 0, 1) * math.log1p(total)
    if step_at is not None:
        ramp[step_at:] += math.log1p(0.05)
    values = 0.01 * np.exp(ramp + rng.normal(0, noise, n))
    return [Point(f"c{i}", float(v)) for i, v in enumerate(values)]


def test_a_smooth_drift_is_one_drift_not_a_change_point_a_commit():
    verdict = analyse(_drift(200, 60, 160, 0.05))
    assert verdict.change_points == ()
    (drift,) = verdict.drifts
    assert abs(drift.start - 60) <= 3 and abs(drift.end - 160) <= 3
    assert drift.ratio == pytest.approx(1.05, abs=0.005)


def test_a_drift_past_the_threshold_is_a_regression_over_a_range():
    verdict = analyse(_drift(100, 40, 90, 0.10))
    (active,) = verdict.active
    (span,) = active.drifts
    assert abs(span[0] - 40) <= 3 and abs(span[1] - 90) <= 3
    assert active.ratio == pytest.approx(1.10, abs=0.01) and active.culprits == (span[0],)
    # below the threshold: a drift, and no alert
    assert analyse(_drift(100, 40, 90, 0.02)).active == ()


def test_a_step_inside_a_drift_is_the_one_change_point():
    verdict = analyse(_drift(120, 0, 119, 0.05, noise=0.003, seed=4, step_at=70))
    assert [c.index for c in verdict.change_points] == [70]
    assert len(verdict.drifts) >= 1


def test_a_staircase_of_clear_steps_stays_steps():
    history = levels_of((1.0, 20), (1.08, 20), (1.16, 20))
    verdict = analyse(make(history, cv=0.01))
    assert [c.index for c in verdict.change_points] == [20, 40]
    assert verdict.drifts == ()


# --- which changes are listed: held at the ends, short excursions against heavy tails ---


@pytest.mark.parametrize("held", [1, 2])
def test_a_level_held_by_the_newest_commits_alone_is_active_but_not_yet_a_change_point(held):
    verdict = analyse(make(step(60, 60 - held, 0.30)))
    assert [r.index for r in verdict.active] == [60 - held]  # the alert sees it now
    assert verdict.change_points == ()  # one or two odd runs look the same


def test_a_level_held_by_three_newest_commits_is_a_change_point():
    verdict = analyse(make(step(60, 57, 0.30)))
    assert [c.index for c in verdict.change_points] == [57]


def test_a_level_held_by_the_first_commits_alone_is_not_a_change_point():
    lv = np.zeros(60)
    lv[:2] = math.log1p(0.30)
    assert analyse(make(lv)).change_points == ()
    lv[:3] = math.log1p(0.30)
    assert [c.index for c in analyse(make(lv)).change_points] == [3]


def test_a_noiseless_series_lists_a_change_at_its_newest_commit():
    verdict = analyse([Point(f"c{i}", 4096.0 if i < 39 else 8192.0) for i in range(40)])
    assert [c.index for c in verdict.change_points] == [39]


def test_a_short_deep_dip_is_two_change_points():
    lv = np.zeros(60)
    lv[30:33] = math.log(0.5)  # three commits at half the time, then back
    assert [c.index for c in analyse(make(lv)).change_points] == [30, 33]


def test_heavy_tailed_noise_rarely_makes_a_change_point():
    # Student's t with 3 degrees of freedom, one value a commit: before the held-commits and
    # tails rules, 4.5 % of such series had a change point (mostly the newest commit alone)
    rng = np.random.default_rng(5)
    series = 300
    found = sum(bool(analyse([Point(f"c{i}", float(v)) for i, v in enumerate(
        0.01 * np.exp(0.01 * rng.standard_t(3, 100)))]).change_points) for _ in range(series))
    assert found <= 0.025 * series


def test_heavy_tails_are_told_from_normal_noise_and_from_counts():
    rng = np.random.default_rng(8)

    def share(draw):
        return np.mean([heavy_tailed(x, [], spread(x)) for x in (draw() for _ in range(200))])

    assert share(lambda: rng.standard_t(3, 100)) > 0.8
    assert share(lambda: rng.normal(0, 1, 100)) < 0.1
    # a count that moves by one unit never lies 3 deviations out
    assert share(lambda: rng.choice([-1.0, 0.0, 1.0], 100, p=[0.2, 0.6, 0.2])) == 0.0


def test_a_clear_step_on_a_coarse_timer_is_always_listed():
    # a 20 us timer rounded to 1 us, +20 %: the rounding can put the step in two stages
    # (20 -> 23 -> 24 us); the short middle stage is no excursion, so the step stays listed
    from torchpulse.evaluation import shapes

    rng = np.random.default_rng(17)
    missed = 0
    for _ in range(200):
        truth = shapes.ShapeTruth("b", "'0'", "coarse", "step", 0.2, int(rng.integers(20, 91)))
        drawn = shapes.draw(truth, 100, rng)
        verdict = analyse([Point(f"c{i}", v, tuple(s)) for i, (v, s)
                           in enumerate(zip(drawn.values, drawn.samples, strict=True))])
        missed += not any(abs(c.index - truth.at) <= 3 for c in verdict.change_points)
    assert missed == 0


def test_run_levels_are_each_points_level_and_spread_computed_at_once():
    """The vectorised path gives the per-point methods' numbers exactly, for series of equal
    sample counts, mixed counts, no samples, zeros (linear) and unusable samples."""
    from torchpulse.analysis.detector.noise import run_levels

    rng = np.random.default_rng(5)
    series = []
    for _ in range(40):
        n = int(rng.integers(0, 30))
        pts = []
        for i in range(n):
            k = int(rng.choice([0, 1, 3, 10, 10, 10]))
            samples = list(np.exp(rng.normal(0, rng.choice([0.001, 0.05, 1.0]), k)))
            if k and rng.random() < 0.1:
                samples[0] = rng.choice([0.0, float("nan"), float("inf")])
            if k and rng.random() < 0.1:  # ties: a coarse timer
                samples = [round(s, 1) for s in samples]
            pts.append(Point(f"c{i}", float(np.median(samples)) if k else 1.0 + i,
                             tuple(samples)))
        series.append(pts)
    for pts in series:
        for linear in (False, True):
            if not linear and any(p.value <= 0 for p in pts):
                continue
            levels, spreads, measured = run_levels(pts, linear)
            raw = np.concatenate([p.raw() for p in pts]) if pts else np.zeros(0)
            np.testing.assert_array_equal(np.sort(measured), np.sort(raw))
            np.testing.assert_array_equal(levels, [p.level(linear) for p in pts])
            expected = [p.within_cv(linear) for p in pts]
            assert [None if np.isnan(s) else s for s in spreads.tolist()] == expected


def test_the_running_median_winsorises_as_one_median_a_commit():
    from torchpulse.analysis.detector.noise import winsorise_running

    def reference(levels, cut, news):
        n, out = len(levels), levels.copy()
        for i in range(max(n - news, 0)):
            centre = float(np.median(levels[max(0, i - 2):min(n, i + 3)]))
            out[i] = min(max(levels[i], centre - cut), centre + cut)
        return out

    rng = np.random.default_rng(9)
    for n in range(0, 25):
        for news in (0, 1, 2, 3):
            x = rng.standard_normal(n) * rng.choice([0.01, 1.0, 10.0])
            cut = float(rng.uniform(0.0, 2.0))
            assert winsorise_running(x, cut, news).tolist() == reference(x, cut, news).tolist()


def test_wander_tells_wandering_noise_from_white_noise_and_from_a_step():
    from torchpulse.analysis.detector.noise import wander

    def mean_wander(kind, **kw):
        return np.mean([wander(np.log([p.value for p in moving_points(kind, s, 400, **kw)]))
                        for s in range(8)])

    assert abs(mean_wander("outliers")) < 0.15  # white noise, outliers and all
    assert mean_wander("ar1-0.6") == pytest.approx(0.6, abs=0.15)
    assert mean_wander("ar1-0.9") == pytest.approx(0.9, abs=0.15)
    assert mean_wander("walk") == pytest.approx(1.0, abs=0.15)
    assert mean_wander("seasonal") > 0.5  # a weekly cycle moves smoothly too
    # a step in white noise is one large difference, not a wander
    white_step = [np.log([p.value for p in make(step(200, 100, 0.05), samples=1, seed=s)])
                  for s in range(8)]
    assert abs(np.mean([wander(x) for x in white_step])) < 0.15


def test_autocorrelated_noise_widens_the_noise_instead_of_drawing_change_points(monkeypatch):
    """AR(1) noise at phi 0.6 drew a change point in most null series of 100 commits (1.2
    a series); its wander now widens the noise. White noise with a step is judged exactly
    as without the widening (white noise that looks a little correlated by chance still
    can be widened: 2 of 150 series with a step at 60 of 100 commits, their change points
    kept)."""
    from torchpulse.analysis.detector import changes

    verdicts = [analyse(moving_points("ar1-0.6", seed)) for seed in range(20)]
    assert np.mean([len(v.change_points) for v in verdicts]) <= 0.3
    plain = [analyse(moving_points("outliers", seed)) for seed in range(5)]
    assert np.mean([v.noise.cv for v in verdicts]) > np.mean([v.noise.cv for v in plain])
    series = [make(step(80, 50, 0.05), seed=seed) for seed in range(10)]
    widened = [analyse(points) for points in series]
    monkeypatch.setattr(changes, "WANDER_MIN", math.inf)  # no widening at all
    assert [analyse(points) for points in series] == widened
    assert all(any(abs(c.index - 50) <= 1 for c in v.change_points) for v in widened)
    before = [analyse(moving_points("ar1-0.6", seed)) for seed in range(20)]
    assert np.mean([len(v.change_points) for v in before]) >= 1.0


def test_mildly_autocorrelated_noise_widens_the_noise_more_often():
    """AR(1) noise at phi 0.3 (a host whose speed moves slowly from run to run) passes for
    white noise half the time by its successive differences alone (their estimate of phi
    has a standard error of 0.14 at 100 commits): 132 of these 300 null series had their
    noise widened, and 20 drew a change point. The widening now starts at a wander of 0.1
    and residuals correlated beyond 2 standard errors: 228 widened, 15 with a change point."""
    from torchpulse.analysis.detector import changes

    nulls = [moving_points("ar1-0.3", seed) for seed in range(300)]
    verdicts = [analyse(p) for p in nulls]
    assert sum(bool(v.change_points) for v in verdicts) <= 17
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(changes, "WANDER_MIN", math.inf)  # no widening at all
        plain = [analyse(p).noise for p in nulls]
    assert sum(v.noise != p for v, p in zip(verdicts, plain, strict=True)) >= 200


def test_spikes_found_at_once_are_those_a_commit_by_commit_reading_finds():
    """find_spikes reads every commit in one array operation: the same commits as reading
    them one by one with the rule's words (both neighbours left by SPIKE_SIGMAS, the same
    way, and the neighbours agreeing)."""
    from torchpulse.analysis.detector.noise import SPIKE_SIGMAS

    def one_by_one(levels, sigma):
        cut = SPIKE_SIGMAS * sigma
        return [i for i in range(1, len(levels) - 1)
                if abs(levels[i] - levels[i - 1]) > cut and abs(levels[i] - levels[i + 1]) > cut
                and (levels[i] - levels[i - 1]) * (levels[i] - levels[i + 1]) > 0
                and abs(levels[i - 1] - levels[i + 1]) < cut / 2]

    rng = np.random.default_rng(11)
    found = 0
    for n in (3, 4, 10, 100, 1000):
        for _ in range(20):
            levels = rng.normal(0, 0.01, n)
            levels[rng.random(n) < 0.05] += rng.choice([-1, 1]) * rng.uniform(0.02, 0.2)
            expected = one_by_one(levels, 0.01)
            assert find_spikes(levels, 0.01) == expected
            assert find_spikes(list(levels), 0.01) == expected
            found += len(expected)
    assert found > 50  # the comparison saw spikes, not only quiet series
    assert find_spikes(np.zeros(2), 0.01) == [] and find_spikes(np.ones(5), 0.0) == []
