"""Pareto distribution (``jax.scipy.stats.pareto``).

Examples
--------
>>> from tracejit.scipy.stats import pareto
>>> float(pareto.pdf(1.0, 2.0))
2.0
"""
import tracejit.numpy as jnp
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpdf", "pdf"]


def logpdf(x, b, loc=0, scale=1):
    """``log b - log(scale) - (b + 1) log y`` for ``y = (x - loc) / scale >= 1``, else -inf.

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> round(float(pareto.logpdf(2.0, 1.0)), 12)  # log(1/4)
    -1.38629436112
    """
    x, b, loc, scale = promote(x, b, loc, scale)
    y = (x - loc) / scale
    ys = where(y < 1, jnp.ones_like(y), y)
    return where(y < 1, NEG_INF, jnp.log(b) - jnp.log(scale) - (b + 1.0) * jnp.log(ys))


def pdf(x, b, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> float(pareto.pdf(2.0, 1.0))
    0.25
    """
    return jnp.exp(logpdf(x, b, loc, scale))
