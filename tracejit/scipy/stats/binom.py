"""Binomial distribution (``jax.scipy.stats.binom``).

Examples
--------
>>> from tracejit.scipy.stats import binom
>>> round(float(binom.pmf(2, 4, 0.5)), 12)
0.375
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, log_poisson_term, promote, where

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
    direct = comb + special.xlogy(xs, p) + special.xlog1py(n - xs, -p)
    # for n >= 10 the terms (each ~n log n) cancel (binom.logpmf(5e14, 1e15, 0.5) was -21.25 for
    # -17.50): C(n, k) p^k q^(n-k) = p_k(n p) p_(n-k)(n q) / p_n(n) in Poisson terms p_k(mu) = mu^k e^-mu / k!
    use = ok & (n >= 10.0) & jnp.isfinite(n) & (p > 0) & (p < 1)
    n_, p_ = where(use, n, 10.0), where(use, p, 0.5)
    k_ = where(use, xs, 5.0)
    saddle = (log_poisson_term(k_, n_ * p_)[0] + log_poisson_term(n_ - k_, n_ * (1.0 - p_))[0]
              - log_poisson_term(n_, n_)[0])
    return where(ok, where(use, saddle, direct), NEG_INF)


def pmf(k, n, p, loc=0):
    """Probability mass.

    Examples
    --------
    >>> from tracejit.scipy.stats import binom
    >>> round(float(binom.pmf(0, 4, 0.5)), 12)
    0.0625
    """
    return jnp.exp(logpmf(k, n, p, loc))
