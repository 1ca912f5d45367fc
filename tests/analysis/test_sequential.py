import math

import numpy as np
import pytest
from scipy import stats

from torchpulse.analysis import sequential
from torchpulse.analysis.sequential import Pool, change, interval, looks, side


def test_looks_grow_geometrically_and_end_at_the_cap():
    assert looks(20) == [3, 5, 8, 12, 18, 20]
    assert looks(3) == [3]
    assert looks(4) == [3, 4]
    with pytest.raises(ValueError):
        looks(2)


def test_interval_is_the_student_t_interval_of_the_mean():
    rng = np.random.default_rng(1)
    diffs = list(rng.normal(0.1, 0.03, 7))
    iv = interval(diffs, 0.05)
    low, high = stats.t.interval(0.95, 6, loc=np.mean(diffs), scale=stats.sem(diffs))
    assert iv.low == pytest.approx(low) and iv.high == pytest.approx(high)
    assert iv.level == pytest.approx(0.95) and iv.n == 7
    assert iv.ratio == pytest.approx(math.exp(np.mean(diffs)))


def test_identical_differences_give_a_point_interval():
    iv = interval([0.2, 0.2, 0.2], 0.01)
    assert iv.low == pytest.approx(0.2) and iv.high == pytest.approx(0.2)


def test_a_pool_of_earlier_tests_narrows_the_interval_with_the_same_data():
    rng = np.random.default_rng(2)
    own = list(rng.normal(0.0, 0.02, 3))
    earlier = Pool().add(list(rng.normal(0.5, 0.02 * math.sqrt(2), 12)), factor=2.0)
    assert earlier.df == 11
    alone, pooled = interval(own, 0.001), interval(own, 0.001, earlier)
    assert pooled.high - pooled.low < (alone.high - alone.low) / 2
    assert pooled.mean == alone.mean
    # the pool's variance is per run: the earlier differences had twice that variance
    assert earlier.ss / earlier.df == pytest.approx(0.02 ** 2, rel=0.6)


def _iv(low: float, high: float) -> sequential.Interval:
    return sequential.Interval(5, (low + high) / 2, low, high, 0.99)


@pytest.mark.parametrize(("low", "high", "expected"), [
    (math.log(1.06), math.log(1.3), sequential.SLOWER),
    (math.log(0.7), math.log(0.94), sequential.FASTER),
    (math.log(0.97), math.log(1.04), sequential.EQUIVALENT),
    (math.log(1.01), math.log(1.10), None),  # slower, but maybe not beyond 5 %
    (math.log(0.90), math.log(1.10), None),
])
def test_change_reads_the_interval_against_the_threshold(low, high, expected):
    assert change(_iv(low, high), 0.05) == expected


def test_side_needs_the_interval_on_one_side_of_zero():
    assert side(_iv(0.01, 0.2)) == sequential.BAD
    assert side(_iv(-0.2, -0.01)) == sequential.GOOD
    assert side(_iv(-0.01, 0.2)) is None


def test_sprt_decides_for_the_side_the_evidence_leans_to():
    # half step 0.05, variance 0.01: each round at the bad place adds 2 * 0.05 * 0.05 / 0.01
    # = 0.5 to the log likelihood ratio; the bound at alpha 0.01 is log(99) = 4.6
    assert sequential.sprt([0.05] * 9, 0.05, 0.01, 0.01) is None
    assert sequential.sprt([0.05] * 10, 0.05, 0.01, 0.01) == sequential.BAD
    assert sequential.sprt([-0.05] * 10, 0.05, 0.01, 0.01) == sequential.GOOD
    assert sequential.sprt([0.05, -0.05] * 20, 0.05, 0.01, 0.01) is None
    assert sequential.sprt([1.0] * 5, 0.05, 0.0, 0.01) is None  # no variance known: no claim


def test_the_variance_bound_lies_above_the_estimate():
    pool = Pool().add([0.1, -0.1, 0.05, -0.05, 0.0], factor=1.0)
    estimate = pool.ss / pool.df
    assert sequential.variance_bound(pool) > estimate
    assert sequential.variance_bound(pool, 0.5) < sequential.variance_bound(pool, 0.9)
