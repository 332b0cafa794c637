"""Bernoulli distribution (``jax.scipy.stats.bernoulli``).

Examples
--------
>>> from tracejit.scipy.stats import bernoulli
>>> float(bernoulli.pmf(1, 0.3))
0.3
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    """``log p`` at ``k - loc == 1``, ``log1p(-p)`` at 0, -inf elsewhere.

    Examples
    --------
    >>> from tracejit.scipy.stats import bernoulli
    >>> round(float(bernoulli.logpmf(0, 0.25)), 12)
    -0.287682072452
    """
    k, p, loc = promote(k, p, loc)
    x = k - loc
    ok = (x == 0) | (x == 1)
    return where(ok, special.xlogy(x, p) + special.xlog1py(1.0 - x, -p), NEG_INF)


def pmf(k, p, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import bernoulli
    >>> float(bernoulli.pmf(0, 0.25))
    0.75
    """
    return jnp.exp(logpmf(k, p, loc))


def cdf(k, p, loc=0):
    """0 below 0, ``1 - p`` on [0, 1), 1 from 1 (NaN for p outside [0, 1]).

    Examples
    --------
    >>> from tracejit.scipy.stats import bernoulli
    >>> float(bernoulli.cdf(0.5, 0.25))
    0.75
    """
    k, p, loc = promote(k, p, loc)
    x = k - loc
    out = where(x < 0, jnp.zeros_like(x), where(x < 1, 1.0 - p, jnp.ones_like(x)))
    return where((p < 0) | (p > 1) | jnp.isnan(x), jnp.nan, out)


def ppf(q, p):
    """Smallest k in {0, 1} with ``cdf(k) >= q`` (NaN outside [0, 1]).

    Examples
    --------
    >>> from tracejit.scipy.stats import bernoulli
    >>> float(bernoulli.ppf(0.9, 0.25))
    1.0
    """
    q, p = promote(q, p)
    out = where(q > 1.0 - p, jnp.ones_like(q), jnp.zeros_like(q))
    return where((q < 0) | (q > 1) | (p < 0) | (p > 1) | jnp.isnan(q), jnp.nan, out)
