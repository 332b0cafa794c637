"""Sorting of ``jax.lax``: sort (one operand or several, lexicographic by the first
``num_keys``), sort_key_val and top_k, all on the ``sort`` primitive.

The ``sort`` primitive orders like NumPy's stable sort, which is JAX's order too: NaNs
last, ``-0.0`` equal to ``0.0`` (kept in input order), complex numbers by real then
imaginary part. Its derivative gathers the tangents by the sorting permutation.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.lax.ops import bitwise_not, broadcast_in_dim, broadcasted_iota, rev, select, slice_in_dim
from tracejit.numpy._util import aval, canonicalize_axis, to_operand
from tracejit.numpy.ufuncs import UFUNCS
from tracejit.ops.sorting import sort_p

isnan, signbit = UFUNCS["isnan"], UFUNCS["signbit"]

__all__ = ["sort", "sort_key_val", "top_k"]


def _array(x):
    x = to_operand(x)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sort along ``dimension`` (``jax.lax.sort``).

    ``operand`` is one array (the sorted array is returned) or a sequence of arrays of one
    shape, sorted together lexicographically by the first ``num_keys`` of them (a tuple is
    returned). Sorting is always stable here (``is_stable`` is accepted for JAX
    compatibility); NaNs sort last.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.sort(np.array([3.0, np.nan, 1.0]))
    Array([ 1.,  3., nan])
    >>> lax.sort((np.array([1, 0, 1]), np.array([2, 1, 0])), num_keys=2)
    (Array([0, 1, 1]), Array([1, 0, 2]))
    """
    single = not isinstance(operand, (tuple, list))
    ops = [_array(o) for o in ((operand,) if single else operand)]
    if not ops:
        raise TypeError("lax.sort needs at least one operand")
    shape = aval(ops[0]).shape
    if not shape:
        raise TypeError("lax.sort needs operands of rank >= 1, got a scalar")
    if any(aval(o).shape != shape for o in ops):
        raise TypeError(f"lax.sort: operands must have one shape, got {[aval(o).shape for o in ops]}")
    num_keys = operator.index(num_keys)
    if not 1 <= num_keys <= len(ops):
        raise ValueError(f"lax.sort: num_keys={num_keys} must be between 1 and the number of operands "
                         f"({len(ops)})")
    dim = canonicalize_axis(dimension, len(shape))
    out = sort_p.bind(*ops, dimension=dim, is_stable=True, num_keys=num_keys)
    return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sort ``keys`` along ``dimension`` and permute ``values`` alike (``jax.lax.sort_key_val``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.sort_key_val(np.array([3, 1, 2]), np.array([30.0, 10.0, 20.0]))
    (Array([1, 2, 3]), Array([10., 20., 30.]))
    """
    k, v = sort((keys, values), dimension, is_stable, num_keys=1)
    return k, v


def _total_order_keys(x):
    """Sort keys ranking floats in IEEE total order: sign class of NaNs, value, sign of zero."""
    nan, neg = isnan(x), signbit(x)
    nan_class = select(nan, select(neg, _full_like(x, 0, np.int8), _full_like(x, 2, np.int8)),
                       _full_like(x, 1, np.int8))
    value = select(nan, _full_like(x, 0, aval(x).dtype), x)
    return [nan_class, value, bitwise_not(neg)]


def _full_like(x, v, dt):
    return broadcast_in_dim(np.asarray(v, dt)[()], aval(x).shape, ())


def top_k(operand, k, *, axis=-1):
    """The ``k`` largest entries along ``axis`` and their int32 indices (``jax.lax.top_k``).

    Values come in descending order; equal values keep the lower index first. Floats are
    ranked in IEEE total order, as JAX: ``-NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.top_k(np.array([1.0, 3.0, 2.0, 3.0]), 3)
    (Array([3., 3., 2.]), Array([1, 3, 2], dtype=int32))
    """
    x = _array(operand)
    shape = aval(x).shape
    if not shape:
        raise TypeError("lax.top_k needs an operand of rank >= 1")
    axis = canonicalize_axis(axis, len(shape))
    k = operator.index(k)
    if not 0 <= k <= shape[axis]:
        raise ValueError(f"lax.top_k: k={k} must be between 0 and the axis size {shape[axis]}")
    # A stable ascending sort of the reversed axis, reversed back, is descending with ties
    # in increasing index order.
    xr = rev(x, (axis,))
    keys = _total_order_keys(xr) if aval(x).dtype.kind == "f" else [xr]
    idx = rev(broadcasted_iota(np.int32, shape, axis), (axis,))
    out = sort_p.bind(*keys, xr, idx, dimension=axis, is_stable=True, num_keys=len(keys))
    vals, idx = rev(out[-2], (axis,)), rev(out[-1], (axis,))
    return slice_in_dim(vals, 0, k, 1, axis), slice_in_dim(idx, 0, k, 1, axis)
