"""Index-based functions of the NumPy API: ``take``, ``take_along_axis``, ``put_along_axis``.

Out-of-bounds indices follow ``jax.numpy`` (the default ``mode="fill"`` of
the take functions returns ``fill_value``: NaN for inexact dtypes, the
minimum signed / maximum unsigned integer, True for bool), so eager calls and
jitted calls agree; for in-bounds indices the results equal NumPy's.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy import advanced_indexing as _adv
from tracejit.numpy._util import aval, canonicalize_axis, is_tracer, to_operand
from tracejit.numpy.shape import ravel
from tracejit.numpy.ufuncs import UFUNCS as _U

__all__ = ["take", "take_along_axis", "put_along_axis"]


def _index_operand(indices, fn):
    if is_tracer(indices):
        idx = indices
    else:
        was_list = isinstance(indices, (list, tuple))
        idx = to_operand(indices)
        if not is_tracer(idx):
            idx = np.asarray(idx)
            if was_list and idx.size == 0:
                idx = idx.astype(np.int64)
    if not dtypes.is_integer(aval(idx).dtype):
        raise IndexError(f"{fn}: indices must be integers, got dtype {aval(idx).dtype.name}")
    return idx


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (``a`` flattened when ``axis`` is None).

    ``mode``: ``None``/``"fill"`` (default, as JAX): negative indices wrap once and
    out-of-range ones give ``fill_value``; ``"clip"``: indices clamp into ``[0, n-1]``
    (negative ones clamp to 0, as NumPy); ``"wrap"``: indices are taken modulo ``n``.
    ``mode="raise"`` is not supported (values are not known under jit).

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.take(np.array([10., 20., 30.]), np.array([2, -1, 5]))
    Array([30., 30., nan])
    >>> jnp.take(np.array([10, 20, 30]), [4, -4], mode="clip")
    Array([30, 10])
    """
    if out is not None:
        raise NotImplementedError("jnp.take: the out= argument is not supported; use the returned array")
    x = to_operand(a)
    if not is_tracer(x):
        x = np.asarray(x)
    if axis is None:
        x, axis = ravel(x), 0
    nd = aval(x).ndim
    axis = canonicalize_axis(axis, nd)
    idx = _index_operand(indices, "take")
    n = aval(x).shape[axis]
    wrap_negative = False
    if mode == "wrap":
        if n == 0:
            raise IndexError("jnp.take: cannot do a non-empty take from an empty axis with mode='wrap'")
        idx, gmode = _U["remainder"](idx, n), "clip"
    elif mode == "clip":
        gmode = "clip"
    elif mode in (None, "fill"):
        gmode, wrap_negative = "fill", True
    elif mode == "raise":
        raise NotImplementedError("jnp.take: mode='raise' is not supported (index values are unknown under "
                                  "jit); use mode='fill' (default), 'clip' or 'wrap'")
    else:
        raise ValueError(f"jnp.take: invalid mode {mode!r}; expected 'fill', 'clip' or 'wrap'")
    full = (_adv._SLICE, slice(None))
    entries = [full] * axis + [(_adv._ARR, idx)] + [full] * (nd - axis - 1)
    return _adv.gather_entries(x, entries, mode=gmode, fill_value=fill_value, wrap_negative=wrap_negative)


def _along_axis_index(x, idx, axis, fn):
    """NumPy's fancy-index tuple for ``*_along_axis``: aranges on the other axes, ``idx`` on ``axis``."""
    nd = aval(x).ndim
    if aval(idx).ndim != nd:
        raise ValueError(f"{fn}: `indices` and `arr` must have the same number of dimensions, got "
                         f"{aval(idx).ndim} and {nd}")
    xs, ish = aval(x).shape, aval(idx).shape
    for d in range(nd):
        if d != axis and xs[d] != ish[d] and 1 not in (xs[d], ish[d]):
            raise ValueError(f"{fn}: shape mismatch: arr {xs} and indices {ish} do not broadcast outside axis {axis}")
    itype = np.int32 if aval(idx).dtype in _adv._SMALL_INTS else np.int64
    index = []
    for d in range(nd):
        if d == axis:
            index.append(idx)
        else:
            view = [1] * nd
            view[d] = xs[d]
            index.append(np.arange(xs[d], dtype=itype).reshape(view))
    return tuple(index)


def _along_axis_args(arr, indices, axis, fn):
    x = to_operand(arr)
    if not is_tracer(x):
        x = np.asarray(x)
    idx = _index_operand(indices, fn)
    if axis is None:
        if aval(idx).ndim != 1:
            raise ValueError(f"{fn}: when axis=None, `indices` must have a single dimension")
        x, axis = ravel(x), 0
    axis = canonicalize_axis(axis, aval(x).ndim)
    return x, _along_axis_index(x, idx, axis, fn)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    """``arr[..., indices, ...]`` matched element-wise along ``axis`` (``numpy.take_along_axis``).

    ``indices`` has ``arr``'s rank and broadcasts with it on the other axes.
    Negative indices wrap once; out-of-range ones give ``fill_value`` (default
    ``mode="fill"``, as JAX) or are clamped with ``mode="clip"``.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> x = np.array([[10, 30, 20], [60, 40, 50]])
    >>> jnp.take_along_axis(x, np.argsort(x, axis=1), axis=1)
    Array([[10, 20, 30],
           [40, 50, 60]])
    """
    x, index = _along_axis_args(arr, indices, axis, "take_along_axis")
    if mode not in (None, "fill", "clip"):
        raise ValueError(f"take_along_axis: invalid mode {mode!r}; expected 'fill' or 'clip'")
    return _adv.getitem(x, index, mode="fill" if mode is None else mode, fill_value=fill_value)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (functional ``numpy.put_along_axis``).

    Arrays are immutable under jit, so pass ``inplace=False`` (as in ``jax.numpy``);
    the updated array is returned. Out-of-range indices are dropped.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.put_along_axis(np.zeros((2, 3)), np.array([[2], [0]]), 1.0, axis=1, inplace=False)
    Array([[0., 0., 1.],
           [1., 0., 0.]])
    """
    if inplace:
        raise ValueError("jnp.put_along_axis: in-place updates are not possible (arrays are immutable under "
                         "jit); call it with inplace=False and use the returned array")
    x, index = _along_axis_args(arr, indices, axis, "put_along_axis")
    return _adv.scatter(x, index, values, "set", mode=mode)
