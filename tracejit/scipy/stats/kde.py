"""Gaussian kernel density estimation (``jax.scipy.stats.gaussian_kde``).

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy.stats import gaussian_kde
>>> kde = gaussian_kde(np.array([-1.0, 0.0, 1.0]), bw_method=0.5)
>>> round(float(kde.evaluate(0.0)[0]), 12)
0.337949475619
"""
from __future__ import annotations

import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.core.pytree import register_pytree_node
from tracejit.numpy._util import to_operand
from tracejit.scipy import linalg, special
from tracejit.scipy._common import result_float_dtype
from tracejit.transforms.api_vmap import vmap

__all__ = ["gaussian_kde"]


def _inexact(*arrays):
    dt = result_float_dtype(*arrays)
    return [jnp.astype(jnp.asarray(to_operand(a)), dt) for a in arrays]


def _check_real(x, what):
    if np.dtype(jnp.result_type(to_operand(x))).kind == "c":
        raise NotImplementedError(f"gaussian_kde does not support complex {what}")


class gaussian_kde:
    """Gaussian kernel density estimator (``jax.scipy.stats.gaussian_kde``, after :class:`scipy.stats.gaussian_kde`).

    Parameters
    ----------
    dataset : array_like
        Data points: shape ``(n,)`` or ``(d, n)``.
    bw_method : {'scott', 'silverman'}, scalar or callable, optional
        Bandwidth factor: Scott's ``neff**(-1/(d+4))`` (default), Silverman's
        ``(neff (d+2) / 4)**(-1/(d+4))``, a number, or ``bw_method(kde) -> factor``.
    weights : array_like, optional
        Weights of the ``n`` points (normalized to sum to 1).

    Attributes
    ----------
    dataset, weights, neff, covariance, inv_cov, d, n

    Notes
    -----
    A pytree (its arrays are the leaves), so it can be passed through ``jit`` and ``vmap``. As in
    JAX, ``integrate_box`` and ``set_bandwidth`` raise ``NotImplementedError``; ``resample`` also
    does here, since ``tracejit.scipy`` may not import ``tracejit.random`` (draw
    ``random.choice(key, kde.n, shape, p=kde.weights)`` and add
    ``random.multivariate_normal(key2, zeros(d), kde.covariance, shape)`` instead).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import gaussian_kde
    >>> kde = gaussian_kde(np.array([[0.0, 1.0, 2.0, 4.0], [1.0, 0.0, 2.0, 3.0]]))
    >>> kde.d, kde.n
    (2, 4)
    >>> round(float(kde.integrate_gaussian(np.zeros(2), np.eye(2))), 12)
    0.03521463054
    """

    __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

    def __init__(self, dataset, bw_method=None, weights=None):
        _check_real(dataset, "data")
        dataset = jnp.atleast_2d(jnp.asarray(to_operand(dataset)))
        if not jnp.size(dataset) > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = jnp.shape(dataset)
        if weights is not None:
            dataset, weights = _inexact(dataset, weights)
            weights = jnp.atleast_1d(weights)
            weights = weights / jnp.sum(weights)
            if jnp.ndim(weights) != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if jnp.shape(weights)[0] != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = _inexact(dataset)
            weights = jnp.full((n,), 1.0 / n, dtype=dataset.dtype)
        object.__setattr__(self, "dataset", dataset)
        object.__setattr__(self, "weights", weights)
        neff = 1.0 / jnp.sum(weights ** 2)
        object.__setattr__(self, "neff", neff)
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = jnp.power(neff, -1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif not isinstance(bw_method, str) and not callable(bw_method) and np.ndim(bw_method) == 0:
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")
        data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
        data_inv_cov = jnp.linalg.inv(data_cov)
        object.__setattr__(self, "covariance", data_cov * factor ** 2)
        object.__setattr__(self, "inv_cov", data_inv_cov / factor ** 2)

    def __setattr__(self, name, value):
        raise AttributeError("gaussian_kde is immutable")

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        for name, value in zip(cls.__slots__, children):
            object.__setattr__(kde, name, value)
        return kde

    @property
    def d(self):
        """Number of dimensions."""
        return jnp.shape(self.dataset)[0]

    @property
    def n(self):
        """Number of data points."""
        return jnp.shape(self.dataset)[1]

    def _reshape_points(self, points):
        _check_real(points, "coordinates")
        points = jnp.atleast_2d(jnp.asarray(to_operand(points)))
        d, m = jnp.shape(points)
        if d != self.d:
            if d == 1 and m == self.d:
                points = jnp.reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _kernel_sums(self, points, in_log):
        points = self._reshape_points(points)
        data, w, xi, prec = _inexact(self.dataset, self.weights, points, self.inv_cov)
        whitening = linalg.cholesky(prec, lower=True)
        data = jnp.dot(data.T, whitening)             # (n, d)
        xi = jnp.dot(xi.T, whitening)                 # (m, d)
        log_norm = jnp.sum(jnp.log(jnp.diagonal(whitening))) - 0.5 * self.d * math.log(2 * math.pi)
        diff = xi[:, None, :] - data[None, :, :]
        arg = log_norm - 0.5 * jnp.sum(diff * diff, axis=-1)        # (m, n)
        if in_log:
            return special.logsumexp(jnp.log(w)[None, :] + arg, axis=1)
        return jnp.sum(w[None, :] * jnp.exp(arg), axis=1)

    def evaluate(self, points):
        """Density at ``points`` (shape ``(d, m)``, or ``(m,)`` when ``d == 1``); returns shape ``(m,)``.

        Examples
        --------
        >>> import numpy as np
        >>> from tracejit.scipy.stats import gaussian_kde
        >>> kde = gaussian_kde(np.array([0.0, 1.0]), bw_method=1.0)
        >>> round(float(kde.evaluate(0.5)[0]), 12)
        0.439391289468
        """
        return self._kernel_sums(points, in_log=False)

    __call__ = evaluate

    def pdf(self, x):
        """Density (same as :meth:`evaluate`).

        Examples
        --------
        >>> import numpy as np
        >>> from tracejit.scipy.stats import gaussian_kde
        >>> round(float(gaussian_kde(np.array([0.0, 1.0]), bw_method=1.0).pdf(0.5)[0]), 12)
        0.439391289468
        """
        return self.evaluate(x)

    def logpdf(self, x):
        """Log density, by ``logsumexp`` over the kernels (accurate far in the tails).

        Examples
        --------
        >>> import numpy as np
        >>> from tracejit.scipy.stats import gaussian_kde
        >>> round(float(gaussian_kde(np.array([0.0, 1.0]), bw_method=1.0).logpdf(0.5)[0]), 12)
        -0.822364942925
        """
        return self._kernel_sums(x, in_log=True)

    def integrate_gaussian(self, mean, cov):
        """Integral of the density times the Gaussian ``N(mean, cov)``.

        Examples
        --------
        >>> import numpy as np
        >>> from tracejit.scipy.stats import gaussian_kde
        >>> kde = gaussian_kde(np.array([0.0, 1.0]), bw_method=1.0)
        >>> round(float(kde.integrate_gaussian(0.5, 1.0)), 12)
        0.2996906747
        """
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(to_operand(mean))))
        cov = jnp.atleast_2d(jnp.asarray(to_operand(cov)))
        if jnp.shape(mean) != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if jnp.shape(cov) != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (math.sqrt(2 * math.pi) ** self.d * jnp.prod(jnp.diagonal(chol[0])))
        return _gaussian_kernel_convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """Integral of a 1-D density over ``[low, high]`` (scalars).

        Examples
        --------
        >>> import numpy as np
        >>> from tracejit.scipy.stats import gaussian_kde
        >>> kde = gaussian_kde(np.array([0.0, 1.0]), bw_method=1.0)
        >>> round(float(kde.integrate_box_1d(-np.inf, 0.5)), 12)
        0.5
        """
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        lo = jnp.squeeze((low - self.dataset) / sigma)
        hi = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

    def integrate_kde(self, other):
        """Integral of the product of this density and another ``gaussian_kde``'s.

        Examples
        --------
        >>> import numpy as np
        >>> from tracejit.scipy.stats import gaussian_kde
        >>> kde = gaussian_kde(np.array([0.0, 1.0]), bw_method=1.0)
        >>> round(float(kde.integrate_kde(kde)), 12)
        0.32045650246
        """
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (math.sqrt(2 * math.pi) ** self.d * jnp.prod(jnp.diagonal(chol[0])))
        sm, lg = (self, other) if self.n < other.n else (other, self)
        result = vmap(lambda m: _gaussian_kernel_convolve(chol, norm, lg.dataset, lg.weights, m),
                      in_axes=1)(sm.dataset)
        return jnp.sum(result * sm.weights)

    def resample(self, key, shape=()):
        """Not available: ``tracejit.scipy`` may not import ``tracejit.random`` (see the class notes)."""
        raise NotImplementedError(
            "gaussian_kde.resample is not available in tracejit.scipy (it may not import tracejit.random); "
            "sample ind = random.choice(k1, kde.n, shape, p=kde.weights) and "
            "eps = random.multivariate_normal(k2, zeros(kde.d), kde.covariance, shape).T, "
            "then kde.dataset[:, ind] + eps")

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not implemented (as JAX): use :meth:`integrate_box_1d`."""
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not implemented (as JAX): the bandwidth is fixed at construction."""
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")


register_pytree_node(gaussian_kde, gaussian_kde.tree_flatten, gaussian_kde.tree_unflatten)


def _gaussian_kernel_convolve(chol, norm, target, weights, mean):
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    arg = 0.5 * jnp.sum(diff * alpha, axis=0)
    return norm * jnp.sum(jnp.exp(-arg) * weights)
