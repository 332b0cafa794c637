"""Cauchy distribution (``jax.scipy.stats.cauchy``).

Examples
--------
>>> from tracejit.scipy.stats import cauchy
>>> float(cauchy.cdf(0.0))
0.5
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy.stats._util import log_probability, promote, where

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """``-log(pi scale) - log1p(y^2)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.logpdf(0.0)), 12)
    -1.144729885849
    """
    x, loc, scale = promote(x, loc, scale)
    y = (x - loc) / scale
    # beyond |y| = 1e150, y * y overflows (-inf for -2 log|y| ~ -700): log1p(y^2) = 2 log|y| there
    big = jnp.abs(y) > 1e150
    ys = where(big, 0.0, y)
    yb = where(big, jnp.abs(y), 1.0)
    return -math.log(math.pi) - jnp.log(scale) - where(big, 2.0 * jnp.log(yb), jnp.log1p(ys * ys))


def pdf(x, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.pdf(0.0)), 12)
    0.318309886184
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``atan2(1, -y) / pi`` (accurate in the lower tail).

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> float(cauchy.cdf(1.0))
    0.75
    """
    x, loc, scale = promote(x, loc, scale)
    y = (x - loc) / scale
    return jnp.arctan2(jnp.ones_like(y), -y) / math.pi


def logcdf(x, loc=0, scale=1):
    """Log CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.logcdf(0.0)), 12)
    -0.69314718056
    """
    return log_probability(cdf(x, loc, scale), sf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """``cdf(-y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> float(cauchy.sf(1.0))
    0.25
    """
    x, loc, scale = promote(x, loc, scale)
    y = (x - loc) / scale
    return jnp.arctan2(jnp.ones_like(y), y) / math.pi


def logsf(x, loc=0, scale=1):
    """Log survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.logsf(1.0)), 12)
    -1.38629436112
    """
    return log_probability(sf(x, loc, scale), cdf(x, loc, scale))


def _standard_ppf(q):
    """tan(pi (q - 1/2)) without rounding q - 1/2: -1 / tan(pi q) below 1/4, 1 / tan(pi (1 - q))
    above 3/4 (1 - q exact there). The old tan(pi (q - 0.5)) was -1.6e16 for every q < 1e-16
    (ppf(1e-300) is -3.2e299) and lost digits all along both tails; NaN outside [0, 1]."""
    low = q < 0.25
    high = q > 0.75
    qm = where(low | high, 0.5, q)
    ql = where(low, q, 0.1)
    qh = where(high, q, 0.9)
    out = where(low, -1.0 / jnp.tan(math.pi * ql),
                where(high, 1.0 / jnp.tan(math.pi * (1.0 - qh)), jnp.tan(math.pi * (qm - 0.5))))
    return where((q < 0) | (q > 1), jnp.nan, out)


def ppf(q, loc=0, scale=1):
    """``loc + scale * tan(pi (q - 1/2))``.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.ppf(0.75)), 12)
    1.0
    """
    q, loc, scale = promote(q, loc, scale)
    return loc + scale * _standard_ppf(q)


def isf(q, loc=0, scale=1):
    """``loc - scale * tan(pi (q - 1/2))``.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.isf(0.25)), 12)
    1.0
    """
    q, loc, scale = promote(q, loc, scale)
    return loc - scale * _standard_ppf(q)
