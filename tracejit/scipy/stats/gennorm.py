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
    half = 0.5 * special.gammainc(1.0 / beta, jnp.abs(x) ** beta)
    return where(x < 0, 0.5 - half, 0.5 + half)
