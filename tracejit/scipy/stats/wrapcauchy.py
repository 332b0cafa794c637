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
    # for c >= 1/2: 1 - c^2 = (1 - c)(1 + c) and 1 + c^2 - 2c cos x = (1 - c)^2 + 4c sin^2(x/2), both
    # without cancellation (c = 1 - 1e-10 gave inf at x = 0 for 21.88)
    hi = c >= 0.5
    cl = where(hi, 0.0, c)
    ch = where(hi, c, 0.75)
    s = jnp.sin(0.5 * x)
    num = where(hi, jnp.log((1.0 - ch) * (1.0 + ch)), jnp.log1p(-cl * cl))
    den = where(hi, jnp.log((1.0 - ch) * (1.0 - ch) + 4.0 * ch * (s * s)), jnp.log1p(cl * cl - 2.0 * cl * jnp.cos(x)))
    val = num - math.log(2 * math.pi) - den
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
