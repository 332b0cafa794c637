"""Gumbel distribution, right-skewed (max) form (``jax.scipy.stats.gumbel_r``).

Examples
--------
>>> from tracejit.scipy.stats import gumbel_r
>>> round(float(gumbel_r.pdf(0.0)), 12)  # exp(-1)
0.367879441171
"""
import tracejit.numpy as jnp
from tracejit.scipy.stats._util import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]
_S = 1.0   # z = _S * (x - loc) / scale is the standardized right-skewed variable


def logpdf(x, loc=0, scale=1):
    """``-z - exp(-z) - log(scale)``.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_r
    >>> float(gumbel_r.logpdf(0.0))
    -1.0
    """
    x, loc, scale = promote(x, loc, scale)
    z = _S * (x - loc) / scale
    return -z - jnp.exp(-z) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_r
    >>> round(float(gumbel_r.pdf(0.0)), 12)
    0.367879441171
    """
    return jnp.exp(logpdf(x, loc, scale))


def _log_lower(x, loc, scale):
    """log P(Z <= z) for the right-skewed variable: -exp(-z)."""
    x, loc, scale = promote(x, loc, scale)
    z = _S * (x - loc) / scale
    return -jnp.exp(-z)


def _log_upper(x, loc, scale):
    """log P(Z > z) = log(1 - exp(-exp(-z))) for the right-skewed variable, without the rounding of
    the inner probability to 1: log1p(-exp(-t)) for t = exp(-z) >= log 2 (it was 0.0 for
    -1.4e-39 at z = -4.49), and -z - t/2 once t < 1e-8 (exp(-z) underflowing to 0 gave -inf for
    -750 at z = 750)."""
    x, loc, scale = promote(x, loc, scale)
    z = _S * (x - loc) / scale
    t = jnp.exp(-z)
    tiny = t < 1e-8
    big = t >= 0.6931471805599453
    tm = jnp.where(tiny | big, 1.0, t)
    tb = jnp.where(big, t, 1.0)
    mid = jnp.log(-jnp.expm1(-tm))
    return jnp.where(tiny, -z - 0.5 * t, jnp.where(big, jnp.log1p(-jnp.exp(-tb)), mid))


def logcdf(x, loc=0, scale=1):
    """Log CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_r
    >>> float(gumbel_r.logcdf(0.0)) == float(gumbel_r.logcdf(0.0))
    True
    """
    return _log_lower(x, loc, scale) if _S > 0 else _log_upper(x, loc, scale)


def logsf(x, loc=0, scale=1):
    """Log survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_r
    >>> float(gumbel_r.logsf(0.0)) == float(gumbel_r.logsf(0.0))
    True
    """
    return _log_upper(x, loc, scale) if _S > 0 else _log_lower(x, loc, scale)


def cdf(x, loc=0, scale=1):
    """CDF.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_r
    >>> round(float(gumbel_r.cdf(0.0) + gumbel_r.sf(0.0)), 12)
    1.0
    """
    return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """Survival function.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_r
    >>> round(float(gumbel_r.sf(0.0) + gumbel_r.cdf(0.0)), 12)
    1.0
    """
    return jnp.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """Quantile function.

    Examples
    --------
    >>> from tracejit.scipy.stats import gumbel_r
    >>> round(float(gumbel_r.cdf(gumbel_r.ppf(0.3))), 12)
    0.3
    """
    q, loc, scale = promote(q, loc, scale)
    # right-skewed: z = -log(-log q); left-skewed: P(X <= x) = q  <=>  z = -log(-log1p(-q))
    z = -jnp.log(-jnp.log(q)) if _S > 0 else -jnp.log(-jnp.log1p(-q))
    return loc + scale * _S * z
