"""The distribution functions the detector evaluates, thousands of times a series: the
normal's, Student's t's, the chi-squared's and a fair coin's tails, through scipy.special.

They are the functions scipy.stats itself calls (norm.sf is ndtr(-x), norm.ppf is ndtri(q),
t.sf is stdtr(df, -x), chi2.sf is chdtrc(df, x); binom.sf evaluates the regularised
incomplete beta, betainc), so they give its values to the bit (tests/analysis/
test_distributions.py holds that), without its per-call handling of arguments: about 0.1 ms
a call, which was 60 % of the detector's time on a series of 100 commits, and without
importing scipy.stats (0.5-0.9 s of an alert that analyses anything). scipy.special is
imported on first use: an alert whose verdicts all come from the cache never needs it.
"""

from __future__ import annotations

import math

import numpy as np

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_special = None


def _sc():  # noqa: ANN202 (the scipy.special module)
    global _special
    if _special is None:
        from scipy import special

        _special = special
    return _special


def norm_pdf(x: float | np.ndarray) -> np.floating | np.ndarray:
    x = np.asarray(x, dtype=float)
    return np.exp(-x ** 2 / 2.0) / _SQRT_2PI


def norm_cdf(x: float | np.ndarray) -> np.floating | np.ndarray:
    return _sc().ndtr(x)


def norm_sf(x: float | np.ndarray) -> np.floating | np.ndarray:
    return _sc().ndtr(-np.asarray(x, dtype=float))


def norm_ppf(q: float | np.ndarray) -> np.floating | np.ndarray:
    return _sc().ndtri(q)


def norm_isf(q: float | np.ndarray) -> np.floating | np.ndarray:
    return -norm_ppf(q)


def t_sf(x: float | np.ndarray, df: float) -> np.floating | np.ndarray:
    return _sc().stdtr(df, -np.asarray(x, dtype=float))


def chi2_sf(x: float | np.ndarray, df: float) -> np.floating | np.ndarray:
    return _sc().chdtrc(df, x)


def binom_sf_half(k: int, n: int) -> float:
    """P(X > k) for X the heads of ``n`` fair coin tosses: scipy.stats.binom.sf(k, n, 0.5)."""
    if k < 0:
        return 1.0
    if k >= n:
        return 0.0
    return float(_sc().betainc(k + 1.0, float(n - k), 0.5))
