"""Negative binomial distribution (``jax.scipy.stats.nbinom``): failures before ``n`` successes.

Examples
--------
>>> from tracejit.scipy.stats import nbinom
>>> round(float(nbinom.pmf(0, 2, 0.5)), 12)
0.25
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log mass at non-negative integers ``k - loc``, -inf elsewhere.

    Examples
    --------
    >>> from tracejit.scipy.stats import nbinom
    >>> round(float(nbinom.logpmf(1, 2, 0.5)), 12)
    -1.38629436112
    """
    k, n, p, loc = promote(k, n, p, loc)
    x = k - loc
    ok = (x >= 0) & (x == jnp.floor(x))
    xs = where(ok, x, jnp.zeros_like(x))
    comb = special.gammaln(n + xs) - special.gammaln(n) - special.gammaln(xs + 1.0)
    return where(ok, comb + special.xlogy(n, p) + special.xlog1py(xs, -p), NEG_INF)


def pmf(k, n, p, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import nbinom
    >>> round(float(nbinom.pmf(1, 2, 0.5)), 12)
    0.25
    """
    return jnp.exp(logpmf(k, n, p, loc))
