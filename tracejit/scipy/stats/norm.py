"""Normal distribution (``jax.scipy.stats.norm``).

Examples
--------
>>> from tracejit.scipy.stats import norm
>>> float(norm.cdf(0.0))
0.5
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x, loc=0, scale=1):
    """Log of the normal density.

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> round(float(norm.logpdf(0.0)), 12)
    -0.918938533205
    """
    x, loc, scale = promote(x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - jnp.log(scale) - _HALF_LOG_2PI


def pdf(x, loc=0, scale=1):
    """Normal density.

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> round(float(norm.pdf(0.0)), 12)
    0.398942280401
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """Normal CDF (accurate in both tails).

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> round(float(norm.cdf(1.96)), 6)
    0.975002
    """
    x, loc, scale = promote(x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    """Log of the normal CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> round(float(norm.logcdf(-10.0)), 6)
    -53.231285
    """
    x, loc, scale = promote(x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """Survival function ``1 - cdf``, accurate in the upper tail.

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> float(norm.sf(0.0))
    0.5
    """
    x, loc, scale = promote(x, loc, scale)
    return special.ndtr(-(x - loc) / scale)


def logsf(x, loc=0, scale=1):
    """Log of the survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> round(float(norm.logsf(10.0)), 6)
    -53.231285
    """
    x, loc, scale = promote(x, loc, scale)
    return special.log_ndtr(-(x - loc) / scale)


def ppf(q, loc=0, scale=1):
    """Quantile function (inverse CDF).

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> round(float(norm.ppf(0.975)), 6)
    1.959964
    """
    q, loc, scale = promote(q, loc, scale)
    return loc + scale * special.ndtri(q)


def isf(q, loc=0, scale=1):
    """Inverse survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import norm
    >>> round(float(norm.isf(0.025)), 6)
    1.959964
    """
    q, loc, scale = promote(q, loc, scale)
    return loc - scale * special.ndtri(q)
