"""Laplace distribution (``jax.scipy.stats.laplace``).

Examples
--------
>>> from tracejit.scipy.stats import laplace
>>> float(laplace.cdf(0.0))
0.5
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy.stats._util import promote, where

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
    """``-log(2 scale) - |x - loc| / scale``.

    Examples
    --------
    >>> from tracejit.scipy.stats import laplace
    >>> round(float(laplace.logpdf(0.0)), 12)
    -0.69314718056
    """
    x, loc, scale = promote(x, loc, scale)
    return -math.log(2.0) - jnp.log(scale) - jnp.abs(x - loc) / scale


def pdf(x, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import laplace
    >>> float(laplace.pdf(0.0))
    0.5
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """CDF ``e^y / 2`` below ``loc``, ``1 - e^-y / 2`` above.

    Examples
    --------
    >>> from tracejit.scipy.stats import laplace
    >>> round(float(laplace.cdf(1.0)), 12)
    0.816060279414
    """
    x, loc, scale = promote(x, loc, scale)
    y = (x - loc) / scale
    return where(y < 0, 0.5 * jnp.exp(jnp.minimum(y, 0.0)), 1.0 - 0.5 * jnp.exp(-jnp.maximum(y, 0.0)))
