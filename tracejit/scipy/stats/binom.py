"""Binomial distribution (``jax.scipy.stats.binom``).

Examples
--------
>>> from tracejit.scipy.stats import binom
>>> round(float(binom.pmf(2, 4, 0.5)), 12)
0.375
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log mass at integers ``0 <= k - loc <= n``, -inf elsewhere.

    Examples
    --------
    >>> from tracejit.scipy.stats import binom
    >>> round(float(binom.logpmf(2, 4, 0.5)), 12)
    -0.980829253012
    """
    k, n, p, loc = promote(k, n, p, loc)
    x = k - loc
    ok = (x >= 0) & (x <= n) & (x == jnp.floor(x))
    xs = where(ok, x, jnp.zeros_like(x))
    comb = special.gammaln(n + 1.0) - special.gammaln(xs + 1.0) - special.gammaln(n - xs + 1.0)
    return where(ok, comb + special.xlogy(xs, p) + special.xlog1py(n - xs, -p), NEG_INF)


def pmf(k, n, p, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import binom
    >>> round(float(binom.pmf(0, 4, 0.5)), 12)
    0.0625
    """
    return jnp.exp(logpmf(k, n, p, loc))
