"""Gumbel distribution, left-skewed (min) form (``jax.scipy.stats.gumbel_l``).

Examples
--------
>>> from tracejit.scipy.stats import gumbel_l
>>> round(float(gumbel_l.pdf(0.0)), 12)  # exp(-1)
0.367879441171
"""
import tracejit.numpy as jnp
from tracejit.scipy.stats._gumbel import log_lower, log_upper, standardized
from tracejit.scipy.stats._util import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]
_S = -1.0   # z = _S * (x - loc) / scale is the standardized right-skewed variable


def logpdf(x, loc=0, scale=1):
    """``-z - exp(-z) - log(scale)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_l
    >>> float(gumbel_l.logpdf(0.0))
    -1.0
    """
    x, loc, scale = promote(x, loc, scale)
    z = _S * (x - loc) / scale
    return -z - jnp.exp(-z) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_l
    >>> round(float(gumbel_l.pdf(0.0)), 12)
    0.367879441171
    """
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """Log CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_l
    >>> float(gumbel_l.logcdf(0.0)) == float(gumbel_l.logcdf(0.0))
    True
    """
    z = standardized(x, loc, scale, _S)
    return log_lower(z) if _S > 0 else log_upper(z)


def logsf(x, loc=0, scale=1):
    """Log survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_l
    >>> float(gumbel_l.logsf(0.0)) == float(gumbel_l.logsf(0.0))
    True
    """
    z = standardized(x, loc, scale, _S)
    return log_upper(z) if _S > 0 else log_lower(z)


def cdf(x, loc=0, scale=1):
    """CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_l
    >>> round(float(gumbel_l.cdf(0.0) + gumbel_l.sf(0.0)), 12)
    1.0
    """
    return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """Survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_l
    >>> round(float(gumbel_l.sf(0.0) + gumbel_l.cdf(0.0)), 12)
    1.0
    """
    return jnp.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """Quantile function.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_l
    >>> round(float(gumbel_l.cdf(gumbel_l.ppf(0.3))), 12)
    0.3
    """
    q, loc, scale = promote(q, loc, scale)
    # right-skewed: z = -log(-log q); left-skewed: P(X <= x) = q  <=>  z = -log(-log1p(-q))
    z = -jnp.log(-jnp.log(q)) if _S > 0 else -jnp.log(-jnp.log1p(-q))
    return loc + scale * _S * z
