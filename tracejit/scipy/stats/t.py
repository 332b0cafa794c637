"""Student's t distribution (``jax.scipy.stats.t``).

Examples
--------
>>> from tracejit.scipy.stats import t
>>> round(float(t.pdf(0.0, 1.0)), 12)  # Cauchy at 0: 1/pi
0.318309886184
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """Log density of Student's t with ``df`` degrees of freedom.

    Examples
    --------
    >>> from tracejit.scipy.stats import t
    >>> round(float(t.logpdf(0.0, 1.0)), 12)
    -1.144729885849
    """
    x, df, loc, scale = promote(x, df, loc, scale)
    z = (x - loc) / scale
    half = 0.5 * (df + 1.0)
    return (special.gammaln(half) - special.gammaln(0.5 * df) - 0.5 * jnp.log(df * math.pi) - jnp.log(scale)
            - half * jnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    """Density of Student's t.

    Examples
    --------
    >>> from tracejit.scipy.stats import t
    >>> round(float(t.pdf(0.0, 1.0)), 12)
    0.318309886184
    """
    return jnp.exp(logpdf(x, df, loc, scale))
