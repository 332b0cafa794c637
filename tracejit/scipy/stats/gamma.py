"""Gamma distribution (``jax.scipy.stats.gamma``), shape ``a``.

Examples
--------
>>> from tracejit.scipy.stats import gamma
>>> round(float(gamma.cdf(1.0, 1.0)), 12)  # 1 - exp(-1)
0.632120558829
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, log_poisson_term, log_probability, promote, where

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
    val = special.xlogy(a - 1.0, ys) - ys - special.gammaln(a)
    # for a >= 10 the three terms (each ~a log a) cancel: the density is (a / y) p_a(y) with
    # p_a(y) = y^a e^-y / Gamma(a + 1) in Loader's saddle-point form (gamma.logpdf(1e20, 1e20) was
    # 0.0 for -23.94)
    big = (a >= 10.0) & (ys > 0) & jnp.isfinite(ys)
    a_b = where(big, a, 10.0)
    y_b = where(big, ys, 10.0)
    val = where(big, jnp.log(a_b) - jnp.log(y_b) + log_poisson_term(a_b, y_b)[0], val)
    return where(y < 0, NEG_INF, val - jnp.log(scale))


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
