"""Negative binomial distribution (``jax.scipy.stats.nbinom``): failures before ``n`` successes.

Examples
--------
>>> from tracejit.scipy.stats import nbinom
>>> round(float(nbinom.pmf(0, 2, 0.5)), 12)
0.25
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, log_poisson_term, promote, where

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
    direct = comb + special.xlogy(n, p) + special.xlog1py(xs, -p)
    # for k + n >= 10 the terms cancel (nbinom.logpmf(9.9e16, 1e15, 0.01) was -61.75 for -22.79): with
    # N = k + n, the mass is p_k(N q) p_n(N p) / p_N(N) * n / N in Poisson terms p_k(mu) = mu^k e^-mu / k!
    use = ok & (n > 0) & jnp.isfinite(n + xs) & (xs + n >= 10.0) & (p > 0) & (p < 1)
    n_, p_ = where(use, n, 5.0), where(use, p, 0.5)
    k_ = where(use, xs, 5.0)
    big = k_ + n_
    saddle = (log_poisson_term(k_, big * (1.0 - p_))[0] + log_poisson_term(n_, big * p_)[0]
              - log_poisson_term(big, big)[0] + jnp.log(n_) - jnp.log(big))
    return where(ok, where(use, saddle, direct), NEG_INF)


def pmf(k, n, p, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import nbinom
    >>> round(float(nbinom.pmf(1, 2, 0.5)), 12)
    0.25
    """
    return jnp.exp(logpmf(k, n, p, loc))
