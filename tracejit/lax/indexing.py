"""Dynamic slicing: ``dynamic_slice``, ``dynamic_update_slice`` and their one-axis forms.

Start indices may be traced integer scalars. As in ``jax.lax``, a negative
start is first wrapped once (``i + n``), then every start is clamped to
``[0, n - size]`` so the window always lies inside the operand (XLA
semantics): an out-of-range start never reads or writes out of bounds.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.indexing import dynamic_slice_p, dynamic_update_slice_p
from tracejit.numpy._util import aval, canonicalize_axis, convert, is_tracer, to_operand

__all__ = ["dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim", "dynamic_update_slice_in_dim",
           "dynamic_index_in_dim", "index_in_dim"]


def _start_list(start_indices, ndim, fn):
    """Starts as a list of integer scalars (a 1-D array of starts is split)."""
    if is_tracer(start_indices) or isinstance(start_indices, np.ndarray):
        a = to_operand(start_indices)
        if aval(a).shape != (ndim,):
            raise TypeError(f"{fn}: start_indices must have one entry per operand axis ({ndim}), "
                            f"got shape {aval(a).shape}")
        starts = [a[i] for i in range(ndim)]
    else:
        starts = list(start_indices)
    if len(starts) != ndim:
        raise TypeError(f"{fn}: start_indices must have one entry per operand axis ({ndim}), got {len(starts)}")
    out = []
    for s in starts:
        s = to_operand(s)
        a = aval(s)
        if a.shape != () or not dtypes.is_integer(a.dtype):
            raise TypeError(f"{fn}: start indices must be integer scalars, got {a.str_short()}")
        out.append(s)
    return out


def _wrap_negative(starts, shape, allow_negative_indices):
    if not allow_negative_indices:
        return starts
    import tracejit.numpy as jnp
    out = []
    for s, n in zip(starts, shape):
        if not is_tracer(s):
            v = int(s)
            out.append(v + n if v < 0 else v)
        elif aval(s).dtype.kind == "u":
            out.append(s)
        else:
            out.append(jnp.where(s < 0, s + n, s))
    return out


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """Slice of static size ``slice_sizes`` starting at (possibly traced) ``start_indices``.

    Negative starts wrap once; then each start is clamped to ``[0, n - size]``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.dynamic_slice(np.arange(10), (8,), (4,))   # start clamped to 6
    Array([6, 7, 8, 9])
    """
    x = to_operand(operand)
    shape = aval(x).shape
    sizes = tuple(operator.index(s) for s in slice_sizes)
    if len(sizes) != len(shape) or any(not 0 <= s <= n for s, n in zip(sizes, shape)):
        raise TypeError(f"dynamic_slice: slice_sizes {sizes} must have one entry per axis, each within the "
                        f"operand shape {shape}")
    starts = _wrap_negative(_start_list(start_indices, len(shape), "dynamic_slice"), shape,
                            allow_negative_indices)
    return dynamic_slice_p.bind(x, *starts, slice_sizes=sizes)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with the window at ``start_indices`` replaced by ``update``.

    ``update`` is cast to the operand's dtype. Negative starts wrap once; then
    each start is clamped to ``[0, n - update.shape[i]]``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.dynamic_update_slice(np.zeros(5), np.ones(2), (4,))  # start clamped to 3
    Array([0., 0., 0., 1., 1.])
    """
    x = to_operand(operand)
    shape = aval(x).shape
    u = convert(to_operand(update), aval(x).dtype)
    if np.ndim(u) == 0 and not is_tracer(u):
        u = np.asarray(u)
    if aval(u).ndim != len(shape):
        raise TypeError(f"dynamic_update_slice: update of shape {aval(u).shape} must have the operand's rank "
                        f"{len(shape)}")
    starts = _wrap_negative(_start_list(start_indices, len(shape), "dynamic_update_slice"), shape,
                            allow_negative_indices)
    return dynamic_update_slice_p.bind(x, u, *starts)


def dynamic_slice_in_dim(operand, start_index, slice_size=1, axis=0, *, allow_negative_indices=True):
    """``dynamic_slice`` along one axis: ``slice_size`` elements from ``start_index``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.dynamic_slice_in_dim(np.arange(6).reshape(2, 3), 1, 2, axis=1)
    Array([[1, 2],
           [4, 5]])
    """
    x = to_operand(operand)
    shape = aval(x).shape
    axis = canonicalize_axis(axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *, allow_negative_indices=True):
    """``dynamic_update_slice`` along one axis (other axes start at 0).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.dynamic_update_slice_in_dim(np.zeros((2, 3)), np.ones((2, 1)), 2, axis=1)
    Array([[0., 0., 1.],
           [0., 0., 1.]])
    """
    x = to_operand(operand)
    shape = aval(x).shape
    axis = canonicalize_axis(axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """Element ``index`` (possibly traced, clamped) along ``axis``; the axis is kept if ``keepdims``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.dynamic_index_in_dim(np.arange(6).reshape(2, 3), -1, axis=1, keepdims=False)
    Array([2, 5])
    """
    from tracejit.numpy.shape import squeeze
    x = to_operand(operand)
    axis = canonicalize_axis(axis, aval(x).ndim)
    out = dynamic_slice_in_dim(x, index, 1, axis, allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, axis)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """Static element ``index`` along ``axis`` (kept as a length-1 axis if ``keepdims``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.index_in_dim(np.arange(6).reshape(2, 3), 1, axis=1, keepdims=False)
    Array([1, 4])
    """
    x = to_operand(operand)
    nd = aval(x).ndim
    axis = canonicalize_axis(axis, nd)
    n = aval(x).shape[axis]
    i = operator.index(index)
    if not -n <= i < n:
        raise IndexError(f"index_in_dim: index {i} is out of bounds for axis {axis} with size {n}")
    i %= n
    from tracejit.lax.ops import slice_in_dim
    out = slice_in_dim(x, i, i + 1, 1, axis)
    if keepdims:
        return out
    from tracejit.numpy.shape import squeeze
    return squeeze(out, axis)
