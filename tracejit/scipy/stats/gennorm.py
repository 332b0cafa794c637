"""Generalized normal distribution (``jax.scipy.stats.gennorm``), shape ``beta``.

Examples
--------
>>> from tracejit.scipy.stats import gennorm
>>> round(float(gennorm.pdf(0.0, 2.0)), 12)  # normal with variance 1/2
0.564189583548
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import promote, where

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
    """``log(beta / (2 Gamma(1/beta))) - |x|^beta``.

    Examples
    --------
    >>> from tracejit.scipy.stats import gennorm
    >>> round(float(gennorm.logpdf(1.0, 1.0)), 12)  # Laplace: log(1/2) - 1
    -1.69314718056
    """
    x, beta = promote(x, beta)
    return jnp.log(0.5 * beta) - special.gammaln(1.0 / beta) - jnp.abs(x) ** beta


def pdf(x, beta):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import gennorm
    >>> round(float(gennorm.pdf(0.0, 1.0)), 12)
    0.5
    """
    return jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    """``1/2 + sign(x) gammainc(1/beta, |x|^beta) / 2``.

    Examples
    --------
    >>> from tracejit.scipy.stats import gennorm
    >>> float(gennorm.cdf(0.0, 3.0))
    0.5
    """
    x, beta = promote(x, beta)
    a = 1.0 / beta
    u = jnp.abs(x) ** beta
    # below 0 the lower tail is gammaincc / 2 directly (0.5 - gammainc / 2 cancelled: cdf(-3.1, 3.5)
    # was 0.0 for 1.0e-25)
    neg = x < 0
    lower = 0.5 * special.gammaincc(a, where(neg, u, 1.0))
    half = 0.5 * special.gammainc(a, where(neg, 1.0, u))
    # |x|^beta below 1e-20: gammainc(a, u) = u^a / Gamma(1 + a) (1 + O(u)) with u^a = |x| (|x|^beta
    # underflowed: cdf(1e-10, 50) was 0.5 for 0.5 + 5.1e-11)
    tiny = u < 1e-20
    series = 0.5 * jnp.abs(x) * jnp.exp(-special.gammaln(1.0 + a))
    lower = where(tiny, 0.5 - series, lower)
    half = where(tiny, series, half)
    return where(neg, lower, 0.5 + half)
