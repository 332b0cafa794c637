"""Chi-squared distribution (``jax.scipy.stats.chi2``).

Examples
--------
>>> from tracejit.scipy.stats import chi2
>>> round(float(chi2.cdf(2.0, 2.0)), 12)  # 1 - exp(-1)
0.632120558829
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats import gamma
from tracejit.scipy.stats._util import log_probability, promote

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
    # the gamma density of shape df / 2 and scale 2 (its saddle-point form for large shapes included)
    return gamma.logpdf(x, 0.5 * df, loc, 2.0 * scale)


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
