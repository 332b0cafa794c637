"""Geometric distribution on 1, 2, ... (``jax.scipy.stats.geom``).

Examples
--------
>>> from tracejit.scipy.stats import geom
>>> float(geom.pmf(1, 0.25))
0.25
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    """``(k-1) log1p(-p) + log p`` at integers ``k - loc >= 1``, else -inf.

    Examples
    --------
    >>> from tracejit.scipy.stats import geom
    >>> round(float(geom.logpmf(2, 0.5)), 12)
    -1.38629436112
    """
    k, p, loc = promote(k, p, loc)
    x = k - loc
    ok = (x >= 1) & (x == jnp.floor(x))
    xs = where(ok, x, jnp.ones_like(x))
    return where(ok, special.xlog1py(xs - 1.0, -p) + jnp.log(p), NEG_INF)


def pmf(k, p, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import geom
    >>> float(geom.pmf(2, 0.5))
    0.25
    """
    return jnp.exp(logpmf(k, p, loc))
