"""The tail functions the detector evaluates thousands of times a series: the normal's,
Student's t's and the chi-squared's, through scipy.special.

They are the functions scipy.stats itself calls (norm.sf is ndtr(-x), t.sf is stdtr(df, -x),
chi2.sf is chdtrc(df, x)), so they give its values to the bit (a test holds that), without
its per-call handling of arguments: about 0.1 ms a call, which was 60 % of the detector's
time on a series of 100 commits. scipy.special is imported on first use, as scipy.stats was
(significance._Stats): an alert whose verdicts all come from the cache never needs it.
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


def norm_isf(q: float | np.ndarray) -> np.floating | np.ndarray:
    return -_sc().ndtri(q)


def t_sf(x: float | np.ndarray, df: float) -> np.floating | np.ndarray:
    return _sc().stdtr(df, -np.asarray(x, dtype=float))


def chi2_sf(x: float | np.ndarray, df: float) -> np.floating | np.ndarray:
    return _sc().chdtrc(df, x)
