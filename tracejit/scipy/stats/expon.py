"""Exponential distribution (``jax.scipy.stats.expon``).

Examples
--------
>>> from tracejit.scipy.stats import expon
>>> float(expon.logpdf(2.0))
-2.0
"""
import tracejit.numpy as jnp
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """``-y - log(scale)`` for ``y = (x - loc) / scale >= 0``, else -inf.

    Examples
    --------
    >>> from tracejit.scipy.stats import expon
    >>> float(expon.logpdf(-1.0))
    -inf
    """
    x, loc, scale = promote(x, loc, scale)
    y = (x - loc) / scale
    return where(y < 0, NEG_INF, -y - jnp.log(scale))


def pdf(x, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import expon
    >>> float(expon.pdf(0.0))
    1.0
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``1 - exp(-y)`` (expm1 form).

    Examples
    --------
    >>> from tracejit.scipy.stats import expon
    >>> float(expon.cdf(1e-20))
    1e-20
    """
    x, loc, scale = promote(x, loc, scale)
    y = jnp.maximum((x - loc) / scale, 0.0)
    return -jnp.expm1(-y)


def logcdf(x, loc=0, scale=1):
    """Log CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import expon
    >>> float(expon.logcdf(0.0))
    -inf
    """
    x, loc, scale = promote(x, loc, scale)
    y = jnp.maximum((x - loc) / scale, 0.0)
    # log(1 - e^-y): log1p(-e^-y) once e^-y <= 1/2 (log of the cdf rounded to 1 was 0.0 for
    # -4.2e-18 at y = 40)
    big = y > 0.6931471805599453
    ys = where(big, 0.6931471805599453, y)
    yb = where(big, y, 1.0)
    return where(big, jnp.log1p(-jnp.exp(-yb)), jnp.log(-jnp.expm1(-ys)))


def sf(x, loc=0, scale=1):
    """``exp(-y)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import expon
    >>> round(float(expon.sf(1.0)), 12)
    0.367879441171
    """
    return jnp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """``-y`` (0 for y < 0).

    Examples
    --------
    >>> from tracejit.scipy.stats import expon
    >>> float(expon.logsf(3.0))
    -3.0
    """
    x, loc, scale = promote(x, loc, scale)
    return -jnp.maximum((x - loc) / scale, 0.0)


def ppf(q, loc=0, scale=1):
    """Quantile ``-log1p(-q) * scale + loc`` (NaN outside [0, 1]).

    Examples
    --------
    >>> from tracejit.scipy.stats import expon
    >>> round(float(expon.ppf(0.5)), 12)
    0.69314718056
    """
    q, loc, scale = promote(q, loc, scale)
    return where((q < 0) | (q > 1), jnp.nan, -jnp.log1p(-q) * scale + loc)
