"""Multivariate normal distribution (``jax.scipy.stats.multivariate_normal``).

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy.stats import multivariate_normal
>>> round(float(multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2))), 12)
-1.837877066409
"""
import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
    """Log density; ``x`` has shape ``(..., n)``, ``mean`` ``(..., n)``, ``cov`` ``(..., n, n)``
    (a scalar ``cov`` means ``cov * I``; rank-0 ``mean`` is the univariate case).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import multivariate_normal
    >>> round(float(multivariate_normal.logpdf(np.ones(2), np.zeros(2), 2 * np.eye(2))), 12)
    -3.031024246969
    """
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote(x, mean, cov)
    if not jnp.shape(mean):
        d = x - mean
        return -0.5 * d * d / cov - 0.5 * (math.log(2 * math.pi) + jnp.log(cov))
    n = jnp.shape(mean)[-1]
    d = x - mean
    if not jnp.shape(cov):
        return -0.5 * jnp.sum(d * d, axis=-1) / cov - 0.5 * n * (math.log(2 * math.pi) + jnp.log(cov))
    L = jnp.linalg.cholesky(cov)
    batch = np.broadcast_shapes(jnp.shape(d)[:-1], jnp.shape(L)[:-2])
    Lb = jnp.broadcast_to(L, batch + (n, n))
    db = jnp.broadcast_to(d, batch + (n,))
    z = jnp.linalg.solve(jnp.tril(Lb), db[..., None])[..., 0]
    logdet = jnp.sum(jnp.log(jnp.diagonal(Lb, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(z * z, axis=-1) - logdet - 0.5 * n * math.log(2 * math.pi)


def pdf(x, mean, cov):
    """Density of the multivariate normal.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import multivariate_normal
    >>> round(float(multivariate_normal.pdf(np.zeros(2), np.zeros(2), np.eye(2))), 12)
    0.159154943092
    """
    return jnp.exp(logpdf(x, mean, cov))
