"""Wrapped Cauchy distribution on [0, 2 pi] (``jax.scipy.stats.wrapcauchy``).

Examples
--------
>>> from tracejit.scipy.stats import wrapcauchy
>>> round(float(wrapcauchy.pdf(0.0, 0.5)), 12)  # (1 - c^2) / (2 pi (1 - c)^2)
0.477464829276
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    """``log((1 - c^2) / (2 pi (1 + c^2 - 2 c cos x)))`` on [0, 2 pi], -inf outside; ``0 < c < 1``.

    Examples
    --------
    >>> from tracejit.scipy.stats import wrapcauchy
    >>> round(float(wrapcauchy.logpdf(0.0, 0.5)), 12)
    -0.739264777741
    """
    x, c = promote(x, c)
    val = jnp.log1p(-c * c) - math.log(2 * math.pi) - jnp.log1p(c * c - 2.0 * c * jnp.cos(x))
    inside = (x >= 0) & (x <= 2 * math.pi) & (c > 0) & (c < 1)
    return where(inside, val, where((c > 0) & (c < 1), NEG_INF, jnp.nan))


def pdf(x, c):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import wrapcauchy
    >>> round(float(wrapcauchy.pdf(0.0, 0.5)), 12)
    0.477464829276
    """
    return jnp.exp(logpdf(x, c))
