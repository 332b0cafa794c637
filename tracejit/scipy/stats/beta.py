"""Beta distribution (``jax.scipy.stats.beta``).

Examples
--------
>>> from tracejit.scipy.stats import beta
>>> float(beta.cdf(0.25, 1.0, 1.0))
0.25
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, log_poisson_term, log_probability, promote, where

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
    """Log density on [0, 1] (after ``(x - loc) / scale``), -inf outside.

    Examples
    --------
    >>> from tracejit.scipy.stats import beta
    >>> round(float(beta.logpdf(0.5, 2.0, 2.0)), 12)  # log(1.5)
    0.405465108108
    """
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    y = (x - loc) / scale
    inside = (y >= 0) & (y <= 1)
    ys = where(inside, y, 0.5 * jnp.ones_like(y))
    val = special.xlogy(a - 1.0, ys) + special.xlog1py(b - 1.0, -ys) - special.betaln(a, b)
    # for a + b >= 10 the terms cancel (beta.logpdf(0.5, 1e15, 1e15) was 17.5 for 17.39): with
    # n = a + b the density is p_a(n y) p_b(n (1 - y)) / p_n(n) * a b / (n y (1 - y)) in Poisson
    # terms p_k(mu) = mu^k e^-mu / Gamma(k + 1)
    use = inside & (ys > 0) & (ys < 1) & (a > 0) & (b > 0) & (a + b >= 10.0) & jnp.isfinite(a + b)
    a_, b_, y_ = where(use, a, 5.0), where(use, b, 5.0), where(use, ys, 0.5)
    n = a_ + b_
    saddle = (log_poisson_term(a_, n * y_)[0] + log_poisson_term(b_, n * (1.0 - y_))[0] - log_poisson_term(n, n)[0]
              + jnp.log(a_) + jnp.log(b_) - jnp.log(n) - jnp.log(y_) - jnp.log1p(-y_))
    return where(inside, where(use, saddle, val), NEG_INF) - jnp.log(scale)


def pdf(x, a, b, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import beta
    >>> round(float(beta.pdf(0.5, 2.0, 2.0)), 12)
    1.5
    """
    return jnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """CDF ``betainc(a, b, y)`` (y clipped to [0, 1]).

    Examples
    --------
    >>> from tracejit.scipy.stats import beta
    >>> round(float(beta.cdf(0.5, 2.0, 3.0)), 12)
    0.6875
    """
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return special.betainc(a, b, jnp.clip((x - loc) / scale, 0.0, 1.0))


def logcdf(x, a, b, loc=0, scale=1):
    """Log CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import beta
    >>> round(float(beta.logcdf(0.5, 2.0, 3.0)), 12)
    -0.374693449441
    """
    return log_probability(cdf(x, a, b, loc, scale), sf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """Survival function ``betainc(b, a, 1 - y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import beta
    >>> round(float(beta.sf(0.5, 2.0, 3.0)), 12)
    0.3125
    """
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return special.betainc(b, a, 1.0 - jnp.clip((x - loc) / scale, 0.0, 1.0))


def logsf(x, a, b, loc=0, scale=1):
    """Log survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import beta
    >>> round(float(beta.logsf(0.5, 2.0, 3.0)), 12)
    -1.163150809806
    """
    return log_probability(sf(x, a, b, loc, scale), cdf(x, a, b, loc, scale))
