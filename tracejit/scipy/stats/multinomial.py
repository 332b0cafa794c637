"""Multinomial distribution (``jax.scipy.stats.multinomial``).

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy.stats import multinomial
>>> round(float(multinomial.pmf(np.array([1, 1]), 2, np.array([0.5, 0.5]))), 12)
0.5
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    """Log mass of counts ``x`` (last axis) summing to ``n`` with probabilities ``p``; -inf otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import multinomial
    >>> round(float(multinomial.logpmf(np.array([2, 0]), 2, np.array([0.5, 0.5]))), 12)
    -1.38629436112
    """
    x, n, p = promote(x, n, p)
    val = special.gammaln(n + 1.0) + jnp.sum(special.xlogy(x, p) - special.gammaln(x + 1.0), axis=-1)
    ok = (jnp.sum(x, axis=-1) == n) & jnp.all((x >= 0) & (x == jnp.floor(x)), axis=-1)
    return where(ok, val, NEG_INF)


def pmf(x, n, p):
    """Probability mass.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import multinomial
    >>> round(float(multinomial.pmf(np.array([2, 0]), 2, np.array([0.5, 0.5]))), 12)
    0.25
    """
    return jnp.exp(logpmf(x, n, p))
