"""Gamma distribution (``jax.scipy.stats.gamma``), shape ``a``.

Examples
--------
>>> from tracejit.scipy.stats import gamma
>>> round(float(gamma.cdf(1.0, 1.0)), 12)  # 1 - exp(-1)
0.632120558829
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, log_probability, promote, where

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    """Log density ``(a-1) log y - y - gammaln(a) - log(scale)``, ``y = (x - loc) / scale``; -inf for y < 0.

    Examples
    --------
    >>> from tracejit.scipy.stats import gamma
    >>> float(gamma.logpdf(1.0, 1.0))
    -1.0
    """
    x, a, loc, scale = promote(x, a, loc, scale)
    y = (x - loc) / scale
    ys = where(y < 0, jnp.ones_like(y), y)
    val = special.xlogy(a - 1.0, ys) - ys - special.gammaln(a) - jnp.log(scale)
    return where(y < 0, NEG_INF, val)


def pdf(x, a, loc=0, scale=1):
    """Density. Examples: ``gamma.pdf(1.0, 1.0)`` is ``exp(-1)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import gamma
    >>> round(float(gamma.pdf(1.0, 1.0)), 12)
    0.367879441171
    """
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """CDF ``gammainc(a, y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import gamma
    >>> round(float(gamma.cdf(2.0, 1.0)), 12)
    0.864664716763
    """
    x, a, loc, scale = promote(x, a, loc, scale)
    return special.gammainc(a, jnp.maximum((x - loc) / scale, 0.0))


def logcdf(x, a, loc=0, scale=1):
    """Log CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import gamma
    >>> round(float(gamma.logcdf(2.0, 1.0)), 12)
    -0.145413457869
    """
    return log_probability(cdf(x, a, loc, scale), sf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """Survival function ``gammaincc(a, y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import gamma
    >>> round(float(gamma.sf(2.0, 1.0)), 12)
    0.135335283237
    """
    x, a, loc, scale = promote(x, a, loc, scale)
    return special.gammaincc(a, jnp.maximum((x - loc) / scale, 0.0))


def logsf(x, a, loc=0, scale=1):
    """Log survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import gamma
    >>> round(float(gamma.logsf(2.0, 1.0)), 12)
    -2.0
    """
    return log_probability(sf(x, a, loc, scale), cdf(x, a, loc, scale))
