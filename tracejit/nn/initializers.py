"""``tracejit.nn.initializers`` (as ``jax.nn.initializers``): functions ``init(key, shape, dtype) -> array``.

The samplers are ``tracejit.random``'s (bit-identical to ``jax.random`` streams), so an initializer
gives JAX's values for the same key, shape and dtype.  The default dtype is ``jnp.float_`` (float64,
tracejit's default float; JAX's is float32 unless x64 is enabled).

Examples
--------
>>> from tracejit import random
>>> from tracejit.nn import initializers
>>> w = initializers.glorot_normal()(random.PRNGKey(0), (3, 4))
>>> w.shape
(3, 4)
"""
from __future__ import annotations

import math
import operator
from typing import Any, Protocol

import numpy as np

import tracejit.numpy as jnp
from tracejit import random

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
    "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "ones", "orthogonal",
    "truncated_normal", "uniform", "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]


class Initializer(Protocol):
    """Type of initializers: ``(key, shape, dtype) -> Array``."""

    def __call__(self, key: Any, shape: Any, dtype: Any = ...) -> Any:
        ...


def _shape(shape) -> tuple:
    return (operator.index(shape),) if np.ndim(shape) == 0 and not isinstance(shape, tuple) else tuple(
        operator.index(d) for d in shape)


def _dtype(dtype):
    return np.dtype(jnp.float_ if dtype is None else dtype)


def zeros(key, shape, dtype=None):
    """An array of zeros (``key`` is unused).

    Examples
    --------
    >>> zeros(None, (2,))
    Array([0., 0.])
    """
    return jnp.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
    """An array of ones (``key`` is unused).

    Examples
    --------
    >>> ones(None, (2,), np.float32)
    Array([1., 1.], dtype=float32)
    """
    return jnp.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
    """Initializer returning arrays filled with ``value``.

    Examples
    --------
    >>> constant(-7)(None, (2,))
    Array([-7., -7.])
    """
    def init(key, shape, dtype=dtype):
        return jnp.full(_shape(shape), value, _dtype(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """Initializer sampling uniformly from ``[0, scale)``.

    Examples
    --------
    >>> w = uniform(2.0)(random.PRNGKey(0), (100,))
    >>> bool((w >= 0).all() and (w < 2).all())
    True
    """
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.uniform(key, _shape(shape), dtype) * np.asarray(scale, dtype)
    return init


def normal(stddev=1e-2, dtype=None):
    """Initializer sampling from a normal distribution with mean 0 and standard deviation ``stddev``.

    Examples
    --------
    >>> normal(1.0)(random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.normal(key, _shape(shape), dtype) * np.asarray(stddev, dtype)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """Initializer sampling ``stddev * N(0, 1)`` truncated to ``(lower, upper)`` (in standard deviations).

    Examples
    --------
    >>> w = truncated_normal(1.0)(random.PRNGKey(0), (1000,))
    >>> bool((abs(w) < 2).all())
    True
    """
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), dtype) * np.asarray(stddev, dtype)
    return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """``(fan_in, fan_out)`` of a weight shape: the in/out sizes times the receptive field size."""
    if len(shape) < 2:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor. "
                         "Must be at least 2D.")

    def size(axes):
        if isinstance(axes, int):
            return shape[axes]
        return math.prod(shape[a] for a in axes)

    in_size, out_size = size(in_axis), size(out_axis)
    batch_size = size(batch_axis) if not isinstance(batch_axis, int) else shape[batch_axis]
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Initializer whose samples have variance ``scale / n`` (``n`` set by ``mode``), shape-aware.

    Parameters
    ----------
    scale : float
    mode : {"fan_in", "fan_out", "fan_avg", "fan_geo_avg"}
        ``n`` is the fan-in, the fan-out, their mean or their geometric mean.
    distribution : {"truncated_normal", "normal", "uniform"}
        ``truncated_normal``: normal truncated at two standard deviations, rescaled so the variance is
        ``scale / n``; ``uniform``: on ``[-sqrt(3 scale / n), sqrt(3 scale / n))``.
    in_axis, out_axis : int or sequence of int
        Input and output dimensions; the others (but ``batch_axis``) form the receptive field.
    batch_axis : int or sequence of int
    dtype : dtype, optional

    Examples
    --------
    >>> w = variance_scaling(2.0, "fan_in", "normal")(random.PRNGKey(0), (400, 300))
    >>> bool(abs(w.var() * 400 / 2.0 - 1) < 0.05)
    True
    """
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]
        variance = np.asarray(scale / denominator, dtype=dtype)
        if np.issubdtype(dtype, np.complexfloating):
            if distribution != "normal":
                raise NotImplementedError(f"variance_scaling: complex {distribution} is not implemented")
            return random.normal(key, shape, dtype) * np.sqrt(variance)
        if distribution == "truncated_normal":
            stddev = np.sqrt(variance) / np.asarray(.87962566103423978, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * np.sqrt(variance)
        return random.uniform(key, shape, dtype, -1) * np.sqrt(3 * variance).astype(dtype)
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Glorot (Xavier) uniform: ``variance_scaling(1.0, "fan_avg", "uniform")``.

    Examples
    --------
    >>> glorot_uniform()(random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Glorot (Xavier) normal: ``variance_scaling(1.0, "fan_avg", "truncated_normal")``.

    Examples
    --------
    >>> glorot_normal()(random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """LeCun uniform: ``variance_scaling(1.0, "fan_in", "uniform")``.

    Examples
    --------
    >>> lecun_uniform()(random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """LeCun normal: ``variance_scaling(1.0, "fan_in", "truncated_normal")``.

    Examples
    --------
    >>> lecun_normal()(random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """He (Kaiming) uniform: ``variance_scaling(2.0, "fan_in", "uniform")``.

    Examples
    --------
    >>> he_uniform()(random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """He (Kaiming) normal: ``variance_scaling(2.0, "fan_in", "truncated_normal")``.

    Examples
    --------
    >>> he_normal()(random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Initializer of (scaled) orthogonal matrices: QR of a normal sample, signs fixed by ``diag(R)``.

    The array is viewed as a matrix with ``shape[column_axis]`` columns and the other dims as rows.

    Examples
    --------
    >>> w = orthogonal()(random.PRNGKey(0), (4, 3))
    >>> bool(np.allclose(w.T @ w, np.eye(3)))
    True
    """
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        a = random.normal(key, matrix_shape, dtype)
        q, r = jnp.linalg.qr(a)
        q = q * jnp.sign(jnp.diagonal(r))[None, :]
        if n_rows < n_cols:
            q = q.T
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = jnp.reshape(q, rest + (n_cols,))
        q = jnp.moveaxis(q, -1, column_axis)
        return np.asarray(scale, dtype) * q
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Delta-orthogonal initializer for 3-D/4-D/5-D convolution kernels (spatial dims first).

    The kernel is zero except at the spatial centre, which holds an orthogonal
    ``(in, out)`` matrix; needs ``in <= out``.

    Examples
    --------
    >>> w = delta_orthogonal()(random.PRNGKey(0), (3, 3, 2, 4))
    >>> bool(np.allclose(w[1, 1] @ w[1, 1].T, np.eye(2))), float(abs(w[0]).sum())
    (True, 0.0)
    """
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dtype = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        spatial = shape[:-2]
        ortho = jnp.reshape(ortho, (1,) * len(spatial) + tuple(shape[-2:]))
        widths = [((k - 1) // 2, k - 1 - (k - 1) // 2) for k in spatial] + [(0, 0), (0, 0)]
        return jnp.pad(ortho, widths)           # zero except the spatial centre
    return init
