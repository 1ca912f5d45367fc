"""The third family of evaluate-detection: each kind moves the way its name says, the steps
are planted where the truth says, and the command scores the family against its targets."""

import json

import numpy as np
import pytest

from torchpulse.cli import main
from torchpulse.evaluation import moving
from torchpulse.evaluation.shapes import AFTER, ShapeTruth

N = 400


def _null(kind, seed=0, n=N):
    return np.log(moving.draw(ShapeTruth("b", "'0'", kind, "none"), n,
                              np.random.default_rng(seed)))


def _lag_corr(x, lag):
    x = x - x.mean()
    return float(np.dot(x[:-lag], x[lag:]) / np.dot(x, x))


def test_a_quote_is_held_between_updates_of_one_deviation():
    diffs = np.diff(_null("quote"))
    moved = diffs[diffs != 0]
    assert 0.1 < len(moved) / len(diffs) < 0.3  # a fifth of the commits
    assert np.std(moved) == pytest.approx(moving.SIGMA, rel=0.3)
    assert (moved > 0).any() and (moved < 0).any()  # back and forth: no counter


def test_a_walk_wanders_and_ar1_noise_is_as_correlated_as_its_phi():
    walk = np.diff(_null("walk"))
    assert np.std(walk) == pytest.approx(moving.WALK_SHARE * moving.SIGMA, rel=0.15)
    assert abs(_lag_corr(walk, 1)) < 0.15  # its increments are independent
    for phi in (0.3, 0.6, 0.9):
        x = np.concatenate([_null(f"ar1-{phi}", seed=s) for s in range(5)])
        assert np.std(x) == pytest.approx(moving.SIGMA, rel=0.35)
        corr = np.mean([_lag_corr(_null(f"ar1-{phi}", seed=s), 1) for s in range(5)])
        assert corr == pytest.approx(phi, abs=0.1)


@pytest.mark.parametrize("kind", ["logistic", "exponential", "polynomial"])
def test_a_trend_rises_smoothly_by_its_deviations(kind):
    for seed in range(5):
        x = _null(kind, seed)
        ends = np.mean(x[-40:]) - np.mean(x[:40])
        assert abs(ends) > 0.3 * moving.TREND_SIGMAS * moving.SIGMA
        smooth = np.convolve(x, np.ones(25) / 25, mode="valid")
        assert np.all(np.abs(np.diff(smooth)) < moving.SIGMA)  # no step anywhere


def test_seasons_repeat_weekly_and_outliers_lie_far_out():
    season = _null("seasonal")
    assert _lag_corr(season, moving.SEASON) > 0.3 > _lag_corr(season, 3)
    out = _null("outliers")
    far = np.abs(out - np.median(out)) > 4.5 * moving.SIGMA
    assert 0.005 < far.mean() < 0.1


def test_the_plan_plants_steps_of_three_and_five_deviations_with_room_after():
    commits = 100
    truths = moving.plan(commits, per_cell=6, nulls=4, rng=np.random.default_rng(3))
    assert len(truths) == len(moving.KINDS) * (4 + 6 * len(moving.STEP_SIGMAS))
    steps = [t for t in truths if t.change == "step"]
    assert {round(t.size / moving.SIGMA, 6) for t in steps} == set(moving.STEP_SIGMAS)
    assert all(commits // 5 <= t.at <= commits - AFTER for t in steps)
    assert len({(t.benchmark, t.param) for t in truths}) == len(truths)
    drawn = moving.draw(steps[0], commits, np.random.default_rng(0))
    level = np.log(drawn)
    jump = np.mean(level[steps[0].at:steps[0].at + 5]) - np.mean(level[steps[0].at - 5:
                                                                        steps[0].at])
    assert jump > 0  # the planted step shows in the values


def test_evaluate_detection_scores_the_moving_family_against_its_targets(tmp_path, capsys):
    out = tmp_path / "moving.md"
    code = main(["evaluate-detection", "--family", "moving", "--per-cell", "2",
                 "--noise-series", "3", "--shape-commits", "40", "--keep",
                 str(tmp_path / "p"), "--output", str(out)])
    capsys.readouterr()
    text = out.read_text()
    truth = json.loads((tmp_path / "p" / "moving" / "truth.json").read_text())
    assert {t["shape"] for t in truth} == set(moving.KINDS)
    for kind in moving.KINDS:
        assert f"| {kind} | nothing | 3 |" in text
        assert f"| {kind}: null series with any change point |" in text
    assert "Series that move for other reasons" in text
    assert code == (1 if "| MISSED |" in text else 0)
