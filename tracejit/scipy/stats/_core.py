"""Module-level statistics of ``jax.scipy.stats``: ``mode``, ``rankdata``, ``sem``.

Written on ``tracejit.numpy`` (sorting and ``unique`` with a static size), so they run eagerly, under
``jit`` and ``vmap``; ``sem`` is differentiable.

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy.stats import rankdata
>>> rankdata(np.array([10, 30, 20, 20]))
Array([1. , 4. , 2.5, 2.5])
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import tracejit.numpy as jnp
from tracejit.numpy._util import canonicalize_axis, convert, to_operand
from tracejit.scipy._common import result_float_dtype
from tracejit.transforms.api_vmap import vmap

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
    """``(mode, count)`` returned by :func:`mode`."""
    mode: object
    count: object


def _check_nan_policy(name, nan_policy, *, omit=False):
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of {set(_NAN_POLICIES)!r}")
    if nan_policy == "omit" and not omit:
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
            "Please check if nans exist in `x` outside of the `" + name + "` function.")


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """Most common value along an axis and its count (``jax.scipy.stats.mode``).

    Parameters
    ----------
    a : array_like
    axis : int or None
        Axis to reduce (default 0); ``None`` flattens first.
    nan_policy : {'propagate'}
        Only ``'propagate'`` is supported (as JAX): NaNs count as one value.
    keepdims : bool
        Keep the reduced axis with size 1.

    Returns
    -------
    ModeResult
        ``(mode, count)``; ties resolve to the smallest value (as SciPy and JAX).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import mode
    >>> mode(np.array([2, 4, 1, 1, 3, 4, 4, 2, 3]))
    ModeResult(mode=Array(4), count=Array(3))
    """
    x = jnp.atleast_1d(jnp.asarray(to_operand(a)))
    _check_nan_policy("mode", nan_policy)
    if axis is not None:
        axis = canonicalize_axis(axis, jnp.ndim(x))
    shape = jnp.shape(x)
    if keepdims:
        out_shape = tuple(1 for _ in shape) if axis is None else tuple(1 if i == axis else s
                                                                        for i, s in enumerate(shape))
    else:
        out_shape = () if axis is None else tuple(s for i, s in enumerate(shape) if i != axis)
    if axis is None:
        axis = 0
        x = jnp.ravel(x)
    x = jnp.moveaxis(x, axis, 0)
    n = jnp.shape(x)[0]
    x = jnp.reshape(x, (n, math.prod(jnp.shape(x)[1:])))

    def helper(col):
        if n == 0:
            return jnp.asarray(np.nan), jnp.asarray(0.0)
        vals, counts = jnp.unique(col, return_counts=True, size=n)
        return vals[jnp.argmax(counts)], jnp.max(counts)
    vals, counts = vmap(helper, in_axes=1)(x)
    return ModeResult(jnp.reshape(vals, out_shape), jnp.reshape(counts, out_shape))


def _invert_permutation(p):
    return jnp.zeros_like(p).at[p].set(jnp.arange(jnp.shape(p)[0], dtype=p.dtype))


def _rank_1d(a, method):
    n = jnp.shape(a)[0]
    sorter = jnp.argsort(a, stable=True)
    arr = a[sorter]
    inv = _invert_permutation(sorter)
    if method == "ordinal":
        ranks = jnp.astype(inv + 1, np.float64)
    else:
        obs = jnp.concatenate([jnp.ones((1,), dtype=bool), arr[1:] != arr[:-1]])
        dense = jnp.cumsum(obs)[inv]
        if method == "dense":
            ranks = jnp.astype(dense, np.float64)
        else:
            count = jnp.astype(jnp.nonzero(obs, size=n + 1, fill_value=n)[0], np.float64)
            if method == "max":
                ranks = count[dense]
            elif method == "min":
                ranks = count[dense - 1] + 1.0
            else:
                ranks = 0.5 * (count[dense] + count[dense - 1] + 1.0)
    return jnp.where(jnp.any(jnp.isnan(a)), np.nan, ranks)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of the data, from 1 (``jax.scipy.stats.rankdata``).

    Parameters
    ----------
    a : array_like
    method : {'average', 'min', 'max', 'dense', 'ordinal'}
        How ties are ranked (as :func:`scipy.stats.rankdata`).
    axis : int, optional
        Rank along this axis; by default the array is flattened.
    nan_policy : {'propagate'}
        Only ``'propagate'`` (as JAX): any NaN makes every rank (of that slice) NaN.

    Returns
    -------
    array of float64

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import rankdata
    >>> rankdata(np.array([1, 3, 2, 3]), method="min")
    Array([1., 3., 2., 3.])
    """
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    a = jnp.asarray(to_operand(a))
    if axis is not None:
        axis = canonicalize_axis(axis, jnp.ndim(a))
        moved = jnp.moveaxis(a, axis, -1)
        lead = jnp.shape(moved)[:-1]
        flat = jnp.reshape(moved, (math.prod(lead), jnp.shape(moved)[-1]))
        out = vmap(lambda r: _rank_1d(r, method))(flat) if flat.shape[0] else jnp.zeros(flat.shape)
        return jnp.moveaxis(jnp.reshape(out, jnp.shape(moved)), -1, axis)
    return _rank_1d(jnp.ravel(a), method)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """Standard error of the mean, ``std(a, ddof) / sqrt(n)`` (``jax.scipy.stats.sem``).

    Parameters
    ----------
    a : array_like
    axis : int or None
        Axis (default 0); ``None`` uses all elements.
    ddof : int
        Delta degrees of freedom of the standard deviation (default 1).
    nan_policy : {'propagate', 'omit'}
        ``'omit'`` ignores NaNs (``nanstd`` over the count of non-NaN values).
    keepdims : bool

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.stats import sem
    >>> round(float(sem(np.array([2, 4, 1, 1, 3, 4, 4, 2, 3]))), 12)
    0.408248290464
    """
    if nan_policy not in ("propagate", "omit"):
        raise ValueError(f"{nan_policy} is not supported")
    x = to_operand(a)
    b = jnp.asarray(convert(x, result_float_dtype(x)))
    if nan_policy == "propagate":
        size = jnp.size(b) if axis is None else jnp.shape(b)[axis]
        return jnp.std(b, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.astype(jnp.sqrt(float(size)), b.dtype)
    count = jnp.sum(~jnp.isnan(b), axis=axis, keepdims=keepdims)
    return jnp.nanstd(b, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.astype(jnp.sqrt(count), b.dtype)
