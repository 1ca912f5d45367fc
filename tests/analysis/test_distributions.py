"""The detector's tail functions give scipy.stats' values to the bit: every p-value, and so
every verdict, is what it was when the detector called scipy.stats."""

import numpy as np
import pytest
from scipy import stats

from torchpulse.analysis.detector import distributions as dist

EDGES = [0.0, -0.0, 1e-300, -1e-300, 1e-8, 0.5, 1.0, 2.5, 8.0, 37.0, 40.0, 1e6, -1e6,
         np.inf, -np.inf, np.nan]


def _values(seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return [*EDGES, *rng.normal(0, 3, 2000), *rng.standard_cauchy(500)]


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize(("mine", "theirs"), [
    (dist.norm_pdf, stats.norm.pdf), (dist.norm_cdf, stats.norm.cdf),
    (dist.norm_sf, stats.norm.sf)])
def test_the_normals_functions_are_scipy_stats_to_the_bit(mine, theirs):
    values = _values()
    assert all(_same(mine(x), theirs(x)) for x in values)
    assert _same(mine(np.array(values)), theirs(np.array(values)))  # and on arrays


def test_the_normals_inverse_tails_are_scipy_stats_to_the_bit():
    rng = np.random.default_rng(1)
    tails = [0.0, 1.0, 0.5, 1e-300, 1e-17, 1e-9, 0.999999, np.nan, *rng.uniform(0, 1, 2000),
             *10.0 ** -rng.uniform(0, 300, 500)]
    assert all(_same(dist.norm_isf(q), stats.norm.isf(q)) for q in tails)
    assert all(_same(dist.norm_ppf(q), stats.norm.ppf(q)) for q in tails)


@pytest.mark.parametrize("df", [1, 2, 3, 7, 30, 98, 1000])
def test_students_and_chi_squared_tails_are_scipy_stats_to_the_bit(df):
    values = _values(df)
    assert all(_same(dist.t_sf(x, df), stats.t.sf(x, df)) for x in values)
    assert all(_same(dist.chi2_sf(abs(x) * df, df), stats.chi2.sf(abs(x) * df, df))
               for x in values)


def test_a_fair_coins_tail_is_scipy_stats_to_the_bit():
    for n in [*range(1, 300), 500, 999, 1000, 2000]:
        for k in range(-1, n + 1):
            assert dist.binom_sf_half(k, n) == stats.binom.sf(k, n, 0.5), (k, n)
