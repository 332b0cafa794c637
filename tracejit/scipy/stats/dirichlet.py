"""Dirichlet distribution (``jax.scipy.stats.dirichlet``).

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy.stats import dirichlet
>>> round(float(dirichlet.pdf(np.array([0.2, 0.8]), np.array([1.0, 1.0]))), 12)
1.0
"""
import tracejit.numpy as jnp
from tracejit.scipy import special
from tracejit.scipy.stats._util import NEG_INF, promote, where

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
    """Log density; ``alpha`` has shape ``(K,)``, ``x`` shape ``(K, ...)`` or ``(K-1, ...)``
    (the last component is then ``1 - sum``), as SciPy. -inf off the simplex.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import dirichlet
    >>> round(float(dirichlet.logpdf(np.array([0.5, 0.5]), np.array([2.0, 2.0]))), 12)  # log(6 * 0.25)
    0.405465108108
    """
    x, alpha = promote(x, alpha)
    if jnp.ndim(alpha) != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={jnp.shape(alpha)}")
    k = jnp.shape(alpha)[0]
    if jnp.ndim(x) == 0 or jnp.shape(x)[0] not in (k, k - 1):
        raise ValueError(f"`x` must have either the same number of entries as `alpha` or one entry fewer; "
                         f"got x.shape={jnp.shape(x)}, alpha.shape={jnp.shape(alpha)}")
    if jnp.shape(x)[0] == k - 1:
        x = jnp.concatenate([x, 1.0 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    a = jnp.reshape(alpha, (k,) + (1,) * (jnp.ndim(x) - 1))
    norm = jnp.sum(special.gammaln(alpha)) - special.gammaln(jnp.sum(alpha))
    val = jnp.sum(special.xlogy(a - 1.0, x), axis=0) - norm
    ok = jnp.all(x >= 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1.0) < 1e-6)
    return where(ok, val, NEG_INF)


def pdf(x, alpha):
    """Density.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import dirichlet
    >>> round(float(dirichlet.pdf(np.array([0.5, 0.5]), np.array([2.0, 2.0]))), 12)
    1.5
    """
    return jnp.exp(logpdf(x, alpha))
