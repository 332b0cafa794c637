"""Uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``).

Examples
--------
>>> from tracejit.scipy.stats import uniform
>>> float(uniform.pdf(0.5))
1.0
"""
import tracejit.numpy as jnp
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """``-log(scale)`` on the interval, -inf outside.

    Examples
    --------
    >>> from tracejit.scipy.stats import uniform
    >>> float(uniform.logpdf(2.0))
    -inf
    """
    x, loc, scale = promote(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return where(inside, -jnp.log(scale), NEG_INF)


def pdf(x, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import uniform
    >>> float(uniform.pdf(1.0, 0.0, 2.0))
    0.5
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``clip((x - loc) / scale, 0, 1)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import uniform
    >>> float(uniform.cdf(0.25))
    0.25
    """
    x, loc, scale = promote(x, loc, scale)
    return jnp.clip((x - loc) / scale, 0.0, 1.0)


def ppf(q, loc=0, scale=1):
    """``loc + q * scale`` (NaN outside [0, 1]).

    Examples
    --------
    >>> from tracejit.scipy.stats import uniform
    >>> float(uniform.ppf(0.25, 1.0, 2.0))
    1.5
    """
    q, loc, scale = promote(q, loc, scale)
    return where((q < 0) | (q > 1), jnp.nan, loc + q * scale)
