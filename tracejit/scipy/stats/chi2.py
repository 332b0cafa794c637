"""Chi-squared distribution (``jax.scipy.stats.chi2``).

Examples
--------
>>> from tracejit.scipy.stats import chi2
>>> round(float(chi2.cdf(2.0, 2.0)), 12)  # 1 - exp(-1)
0.632120558829
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, log_poisson_term, log_probability, promote, where

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
    """Log density of chi-squared with ``df`` degrees of freedom; -inf for y < 0.

    Examples
    --------
    >>> from tracejit.scipy.stats import chi2
    >>> round(float(chi2.logpdf(2.0, 2.0)), 12)  # log(exp(-1) / 2)
    -1.69314718056
    """
    x, df, loc, scale = promote(x, df, loc, scale)
    y = (x - loc) / scale
    ys = where(y < 0, jnp.ones_like(y), y)
    h = 0.5 * df
    val = special.xlogy(h - 1.0, ys) - 0.5 * ys - h * math.log(2.0) - special.gammaln(h)
    # for df >= 20, the gamma density of y / 2 in shape h as (h / (y/2)) p_h(y/2) / 2 in Loader's
    # saddle-point form (chi2.logpdf(2e20, 2e20) was 0.0 for -24.64)
    big = (h >= 10.0) & (ys > 0) & jnp.isfinite(ys)
    h_b = where(big, h, 10.0)
    y_b = where(big, 0.5 * ys, 10.0)
    val = where(big, jnp.log(h_b) - jnp.log(y_b) + log_poisson_term(h_b, y_b)[0] - math.log(2.0), val)
    return where(y < 0, NEG_INF, val - jnp.log(scale))


def pdf(x, df, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import chi2
    >>> round(float(chi2.pdf(2.0, 2.0)), 12)
    0.183939720586
    """
    return jnp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """``gammainc(df/2, y/2)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import chi2
    >>> round(float(chi2.cdf(3.84145882069412, 1.0)), 9)
    0.95
    """
    x, df, loc, scale = promote(x, df, loc, scale)
    return special.gammainc(0.5 * df, 0.5 * jnp.maximum((x - loc) / scale, 0.0))


def logcdf(x, df, loc=0, scale=1):
    """Log CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import chi2
    >>> round(float(chi2.logcdf(2.0, 2.0)), 12)
    -0.458675145387
    """
    return log_probability(cdf(x, df, loc, scale), sf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """``gammaincc(df/2, y/2)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import chi2
    >>> round(float(chi2.sf(2.0, 2.0)), 12)
    0.367879441171
    """
    x, df, loc, scale = promote(x, df, loc, scale)
    return special.gammaincc(0.5 * df, 0.5 * jnp.maximum((x - loc) / scale, 0.0))


def logsf(x, df, loc=0, scale=1):
    """Log survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import chi2
    >>> round(float(chi2.logsf(2.0, 2.0)), 12)
    -1.0
    """
    return log_probability(sf(x, df, loc, scale), cdf(x, df, loc, scale))
