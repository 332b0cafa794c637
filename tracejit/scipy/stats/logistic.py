"""Logistic distribution (``jax.scipy.stats.logistic``).

Examples
--------
>>> from tracejit.scipy.stats import logistic
>>> float(logistic.cdf(0.0))
0.5
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def _softplus(v):
    return jnp.logaddexp(v, 0.0)


def logpdf(x, loc=0, scale=1):
    """``-|y| - 2 log1p(exp(-|y|)) - log(scale)`` (symmetric, overflow-free).

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> round(float(logistic.logpdf(0.0)), 12)
    -1.38629436112
    """
    x, loc, scale = promote(x, loc, scale)
    a = jnp.abs((x - loc) / scale)
    return -a - 2.0 * jnp.log1p(jnp.exp(-a)) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> float(logistic.pdf(0.0))
    0.25
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``expit(y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> round(float(logistic.cdf(1.0)), 12)
    0.73105857863
    """
    x, loc, scale = promote(x, loc, scale)
    return special.expit((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    """``-softplus(-y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> round(float(logistic.logcdf(-800.0)), 6)
    -800.0
    """
    x, loc, scale = promote(x, loc, scale)
    return -_softplus(-(x - loc) / scale)


def sf(x, loc=0, scale=1):
    """``expit(-y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> round(float(logistic.sf(1.0)), 12)
    0.26894142137
    """
    x, loc, scale = promote(x, loc, scale)
    return special.expit(-(x - loc) / scale)


def logsf(x, loc=0, scale=1):
    """``-softplus(y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> round(float(logistic.logsf(800.0)), 6)
    -800.0
    """
    x, loc, scale = promote(x, loc, scale)
    return -_softplus((x - loc) / scale)


def ppf(q, loc=0, scale=1):
    """``loc + scale * logit(q)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> float(logistic.ppf(0.5))
    0.0
    """
    q, loc, scale = promote(q, loc, scale)
    return loc + scale * special.logit(q)


def isf(q, loc=0, scale=1):
    """``loc - scale * logit(q)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import logistic
    >>> float(logistic.isf(0.5))
    0.0
    """
    q, loc, scale = promote(q, loc, scale)
    return loc - scale * special.logit(q)
