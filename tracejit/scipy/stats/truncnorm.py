"""Truncated normal distribution on standardized bounds ``[a, b]`` (``jax.scipy.stats.truncnorm``).

The normalizer and CDFs are log-space differences of ``log_ndtr``, mirrored into
the lower tail, so far-out truncations (``a = 30``) stay accurate.

Examples
--------
>>> from tracejit.scipy.stats import truncnorm
>>> round(float(truncnorm.cdf(0.0, -1.0, 1.0)), 12)
0.5
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy.stats._util import NEG_INF, log_ndtr_diff, promote, where

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _std(x, a, b, loc, scale):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def _log_cdf_sf(y, a, b):
    """(log cdf, log sf) inside [a, b]; the one near 0 is formed as log1p(-exp(other))."""
    yc = jnp.clip(y, a, b)
    lz = log_ndtr_diff(b, a)
    lc = log_ndtr_diff(yc, a) - lz
    ls = log_ndtr_diff(b, yc) - lz
    half = -math.log(2.0)
    lc2 = where(lc > half, jnp.log1p(-jnp.exp(jnp.minimum(ls, half))), lc)
    ls2 = where(ls > half, jnp.log1p(-jnp.exp(jnp.minimum(lc, half))), ls)
    return lc2, ls2


def logpdf(x, a, b, loc=0, scale=1):
    """Log density, -inf outside ``[a, b]`` (standardized).

    Examples
    --------
    >>> from tracejit.scipy.stats import truncnorm
    >>> round(float(truncnorm.logpdf(0.0, -1.0, 1.0)), 12)
    -0.537223386903
    """
    y, a, b, scale = _std(x, a, b, loc, scale)
    val = -0.5 * y * y - _HALF_LOG_2PI - jnp.log(scale) - log_ndtr_diff(b, a)
    return where((y < a) | (y > b), NEG_INF, val)


def pdf(x, a, b, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import truncnorm
    >>> round(float(truncnorm.pdf(0.0, -1.0, 1.0)), 12)
    0.584368567257
    """
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """Log CDF: ``log(Phi(y) - Phi(a)) - log(Phi(b) - Phi(a))``.

    Examples
    --------
    >>> from tracejit.scipy.stats import truncnorm
    >>> round(float(truncnorm.logcdf(0.0, -1.0, 1.0)), 12)
    -0.69314718056
    """
    y, a, b, scale = _std(x, a, b, loc, scale)
    lc, ls = _log_cdf_sf(y, a, b)
    return where(y >= b, jnp.zeros_like(y), lc)


def cdf(x, a, b, loc=0, scale=1):
    """CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import truncnorm
    >>> float(truncnorm.cdf(2.0, -1.0, 1.0))
    1.0
    """
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """Log survival function: ``log(Phi(b) - Phi(y)) - log(Phi(b) - Phi(a))``.

    Examples
    --------
    >>> from tracejit.scipy.stats import truncnorm
    >>> round(float(truncnorm.logsf(0.0, -1.0, 1.0)), 12)
    -0.69314718056
    """
    y, a, b, scale = _std(x, a, b, loc, scale)
    lc, ls = _log_cdf_sf(y, a, b)
    return where(y <= a, jnp.zeros_like(y), ls)


def sf(x, a, b, loc=0, scale=1):
    """Survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import truncnorm
    >>> float(truncnorm.sf(-2.0, -1.0, 1.0))
    1.0
    """
    return jnp.exp(logsf(x, a, b, loc, scale))
