"""Pareto distribution (``jax.scipy.stats.pareto``).

Examples
--------
>>> from tracejit.scipy.stats import pareto
>>> float(pareto.pdf(1.0, 2.0))
2.0
"""
import tracejit.numpy as jnp
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
    """``log b - log(scale) - (b + 1) log y`` for ``y = (x - loc) / scale >= 1``, else -inf.

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> round(float(pareto.logpdf(2.0, 1.0)), 12)  # log(1/4)
    -1.38629436112
    """
    x, b, loc, scale = promote(x, b, loc, scale)
    y = (x - loc) / scale
    ys = where(y < 1, jnp.ones_like(y), y)
    return where(y < 1, NEG_INF, jnp.log(b) - jnp.log(scale) - (b + 1.0) * jnp.log(ys))


def pdf(x, b, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> float(pareto.pdf(2.0, 1.0))
    0.25
    """
    return jnp.exp(logpdf(x, b, loc, scale))


def _log_y(x, b, loc, scale):
    """(below, log y) with y = (x - loc) / scale; ``below`` marks x < loc + scale (JAX's test)."""
    x, b, loc, scale = promote(x, b, loc, scale)
    below = x < loc + scale
    y = (x - loc) / scale
    return x, b, below, jnp.log(where(below, jnp.ones_like(y), y))


def cdf(x, b, loc=0, scale=1):
    """Cumulative distribution ``1 - y**-b`` for ``y = (x - loc) / scale >= 1``, else 0.

    Computed as ``-expm1(-b log y)``, accurate also just above ``y = 1``.

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> float(pareto.cdf(2.0, 1.0))
    0.5
    """
    x, b, below, ly = _log_y(x, b, loc, scale)
    return where(below, jnp.zeros_like(x), -jnp.expm1(-b * ly))


def logcdf(x, b, loc=0, scale=1):
    """Log of the CDF, ``log(1 - y**-b)`` (``-inf`` below ``loc + scale``).

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> round(float(pareto.logcdf(2.0, 1.0)), 12)  # log(1/2)
    -0.69314718056
    """
    x, b, below, ly = _log_y(x, b, loc, scale)
    u = -b * ly
    # log(-expm1(u)) near u = 0, log1p(-exp(u)) in the upper tail (u very negative)
    val = where(u > -0.6931471805599453, jnp.log(-jnp.expm1(u)), jnp.log1p(-jnp.exp(u)))
    return where(below, NEG_INF, val)


def sf(x, b, loc=0, scale=1):
    """Survival function ``y**-b`` (1 below ``loc + scale``).

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> float(pareto.sf(2.0, 2.0))
    0.25
    """
    return jnp.exp(logsf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    """Log of the survival function, ``-b log y`` (0 below ``loc + scale``).

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> round(float(pareto.logsf(4.0, 0.5)), 12)  # -0.5 log 4
    -0.69314718056
    """
    x, b, below, ly = _log_y(x, b, loc, scale)
    return where(below, jnp.zeros_like(x), -b * ly)


def ppf(q, b, loc=0, scale=1):
    """Quantile function ``loc + scale * (1 - q)**(-1/b)``; NaN outside ``[0, 1]`` (``inf`` at 1).

    Computed as ``exp(-log1p(-q) / b)``, accurate for small ``q``.

    Examples
    --------
    >>> from tracejit.scipy.stats import pareto
    >>> float(pareto.ppf(0.75, 2.0))
    2.0
    """
    q, b, loc, scale = promote(q, b, loc, scale)
    val = loc + scale * jnp.exp(-jnp.log1p(-q) / b)
    return where(jnp.isnan(q) | (q < 0) | (q > 1), jnp.nan, val)
