"""Cauchy distribution (``jax.scipy.stats.cauchy``).

Examples
--------
>>> from tracejit.scipy.stats import cauchy
>>> float(cauchy.cdf(0.0))
0.5
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy.stats._util import log_probability, promote

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
    return -math.log(math.pi) - jnp.log(scale) - jnp.log1p(y * y)


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


def ppf(q, loc=0, scale=1):
    """``loc + scale * tan(pi (q - 1/2))``.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.ppf(0.75)), 12)
    1.0
    """
    q, loc, scale = promote(q, loc, scale)
    return loc + scale * jnp.tan(math.pi * (q - 0.5))


def isf(q, loc=0, scale=1):
    """``loc - scale * tan(pi (q - 1/2))``.

    Examples
    --------
    >>> from tracejit.scipy.stats import cauchy
    >>> round(float(cauchy.isf(0.25)), 12)
    1.0
    """
    q, loc, scale = promote(q, loc, scale)
    return loc - scale * jnp.tan(math.pi * (q - 0.5))
