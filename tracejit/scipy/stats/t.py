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
from tracejit.scipy._common import log1pmx
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
    # log(Gamma(h + 1/2) / (Gamma(h) sqrt(h))), h = df / 2, without the cancelling gammaln
    # difference (t.logpdf(0, 1e15) was 2.16 for -0.919): from Stirling's series for h >= 10,
    # h log1pmx(1 / (2h)) + stirling(h + 1/2) - stirling(h); below, -betaln(1/2, h) - log(h) / 2 + log(pi) / 2
    h = 0.5 * df
    hb = jnp.maximum(h, 10.0)
    ratio = jnp.where(h >= 10.0,
                      hb * log1pmx(0.5 / hb) + special._stirling_correction(hb + 0.5) - special._stirling_correction(hb),
                      -special.betaln(0.5, h) - 0.5 * jnp.log(h) + 0.5 * math.log(math.pi))
    return ratio - 0.5 * math.log(2.0 * math.pi) - jnp.log(scale) - half * jnp.log1p(z * z / df)


def pdf(x, df, loc=0, scale=1):
    """Density of Student's t.

    Examples
    --------
    >>> from tracejit.scipy.stats import t
    >>> round(float(t.pdf(0.0, 1.0)), 12)
    0.318309886184
    """
    return jnp.exp(logpdf(x, df, loc, scale))
