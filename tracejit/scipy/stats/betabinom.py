"""Beta-binomial distribution (``jax.scipy.stats.betabinom``).

Examples
--------
>>> from tracejit.scipy.stats import betabinom
>>> round(float(betabinom.pmf(1, 2, 1.0, 1.0)), 12)  # uniform on {0, 1, 2}
0.333333333333
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    """``log C(n, k) + betaln(k + a, n - k + b) - betaln(a, b)`` at integers ``0 <= k - loc <= n``.

    Examples
    --------
    >>> from tracejit.scipy.stats import betabinom
    >>> round(float(betabinom.logpmf(0, 2, 1.0, 1.0)), 12)
    -1.098612288668
    """
    k, n, a, b, loc = promote(k, n, a, b, loc)
    x = k - loc
    ok = (x >= 0) & (x <= n) & (x == jnp.floor(x))
    xs = where(ok, x, jnp.zeros_like(x))
    comb = special.gammaln(n + 1.0) - special.gammaln(xs + 1.0) - special.gammaln(n - xs + 1.0)
    val = comb + special.betaln(xs + a, n - xs + b) - special.betaln(a, b)
    return where(ok, val, NEG_INF)


def pmf(k, n, a, b, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import betabinom
    >>> round(float(betabinom.pmf(2, 2, 1.0, 1.0)), 12)
    0.333333333333
    """
    return jnp.exp(logpmf(k, n, a, b, loc))
