"""Von Mises distribution (``jax.scipy.stats.vonmises``).

Examples
--------
>>> from tracejit.scipy.stats import vonmises
>>> round(float(vonmises.pdf(0.0, 0.0)), 12)  # uniform on the circle: 1 / (2 pi)
0.159154943092
"""
import math

import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    """``kappa (cos x - 1) - log(2 pi i0e(kappa))`` (overflow-free for large ``kappa``).

    Examples
    --------
    >>> from tracejit.scipy.stats import vonmises
    >>> round(float(vonmises.logpdf(0.0, 1.0)), 12)
    -1.073791424917
    """
    x, kappa = promote(x, kappa)
    # cos x - 1 = -2 sin^2(x / 2): the difference cancelled for small x, times a large kappa
    # (logpdf(1e-8, 1e12) was 5e-5 off)
    s = jnp.sin(0.5 * x)
    return -2.0 * kappa * (s * s) - math.log(2 * math.pi) - jnp.log(special.i0e(kappa))


def pdf(x, kappa):
    """Density.

    Examples
    --------
    >>> from tracejit.scipy.stats import vonmises
    >>> round(float(vonmises.pdf(0.0, 1.0)), 12)
    0.341710488623
    """
    return jnp.exp(logpdf(x, kappa))
