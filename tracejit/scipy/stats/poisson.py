"""Poisson distribution (``jax.scipy.stats.poisson``).

Examples
--------
>>> from tracejit.scipy.stats import poisson
>>> round(float(poisson.pmf(0, 2.0)), 12)  # exp(-2)
0.135335283237
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpmf", "pmf", "cdf"]


def logpmf(k, mu, loc=0):
    """``k log(mu) - mu - gammaln(k + 1)`` at non-negative integers ``k - loc``, else -inf.

    Examples
    --------
    >>> from tracejit.scipy.stats import poisson
    >>> round(float(poisson.logpmf(3, 2.0)), 12)
    -1.712317927548
    """
    k, mu, loc = promote(k, mu, loc)
    x = k - loc
    ok = (x >= 0) & (x == jnp.floor(x))
    xs = where(ok, x, jnp.zeros_like(x))
    return where(ok, special.xlogy(xs, mu) - mu - special.gammaln(xs + 1.0), NEG_INF)


def pmf(k, mu, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import poisson
    >>> round(float(poisson.pmf(1, 2.0)), 12)
    0.270670566473
    """
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """``gammaincc(floor(k - loc) + 1, mu)`` (0 below ``loc``).

    Examples
    --------
    >>> from tracejit.scipy.stats import poisson
    >>> round(float(poisson.cdf(1, 2.0)), 12)  # 3 exp(-2)
    0.40600584971
    """
    k, mu, loc = promote(k, mu, loc)
    x = k - loc
    xs = jnp.floor(jnp.maximum(x, 0.0))
    return where(x < 0, jnp.zeros_like(x), special.gammaincc(xs + 1.0, mu))
