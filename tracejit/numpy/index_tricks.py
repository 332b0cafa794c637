"""Index tricks: insert, delete, index generators (indices, tril_indices,
...), ix_, r_/c_/s_, unravel_index and ravel_multi_index.

Index generators take static sizes and return NumPy arrays (constants under
jit). ``insert``/``delete`` need static positions (``obj``); the values may
be traced: NumPy itself lays out the result on an array of element numbers,
which then becomes a static gather.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, convert, eager, is_tracer, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy.misc import where
from tracejit.numpy.shape import ravel, reshape

__all__ = ["insert", "delete", "indices", "diag_indices", "diag_indices_from", "tril_indices",
           "tril_indices_from", "triu_indices", "triu_indices_from", "mask_indices", "ix_", "r_", "c_", "s_",
           "index_exp", "unravel_index", "ravel_multi_index"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _static_obj(obj, fn):
    if is_tracer(obj) or (isinstance(obj, (list, tuple)) and any(is_tracer(o) for o in obj)):
        from tracejit.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(
            f"{fn}: the positions (obj) must be static under jit (they decide the output shape); "
            "pass Python ints, slices or NumPy arrays, or mark them static")
    return obj


def insert(arr, obj, values, axis=None):
    """Insert ``values`` before the positions ``obj`` along ``axis`` (``numpy.insert``).

    ``obj`` must be static under jit; ``arr`` and ``values`` may be traced.
    Values are cast to ``arr``'s dtype, as in NumPy.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.insert(jnp.array([1, 2, 3]), 1, jnp.array([9, 8]))
    Array([1, 9, 8, 2, 3])
    """
    if eager(arr, obj, values):
        return np.insert(arr, obj, values, axis=axis)
    _static_obj(obj, "insert")
    from tracejit.numpy.indexing_api import take
    a = _array(arr)
    v = _array(values)
    n_a, n_v = aval(a).size, aval(v).size
    # Element numbers: arr's as 0.., the values' as -1, -2, ...; NumPy does the layout.
    src = np.arange(n_a, dtype=np.int64).reshape(aval(a).shape)
    vals = (-1 - np.arange(n_v, dtype=np.int64)).reshape(aval(v).shape)
    layout = np.insert(src, obj, vals, axis=axis)
    flat_a = ravel(a)
    flat_v = convert(ravel(v), aval(a).dtype)
    from_a = take(flat_a, np.clip(layout, 0, max(n_a - 1, 0))) if n_a else None
    from_v = take(flat_v, np.clip(-1 - layout, 0, max(n_v - 1, 0))) if n_v else None
    if from_a is None:
        return reshape(from_v, layout.shape)
    if from_v is None:
        return reshape(from_a, layout.shape)
    return where(layout >= 0, from_a, from_v)


def delete(arr, obj, axis=None):
    """Remove the positions ``obj`` (ints, a slice or a boolean mask) along ``axis`` (``numpy.delete``).

    ``obj`` must be static under jit.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.delete(jnp.array([1, 2, 3, 4]), [0, 2])
    Array([2, 4])
    """
    if eager(arr, obj):
        return np.delete(arr, obj, axis=axis)
    _static_obj(obj, "delete")
    from tracejit.numpy.indexing_api import take
    a = _array(arr)
    layout = np.delete(np.arange(aval(a).size, dtype=np.int64).reshape(aval(a).shape), obj, axis=axis)
    return take(ravel(a), layout)


def indices(dimensions, dtype=int, sparse=False):
    """Grid of indices for an array of shape ``dimensions`` (``numpy.indices``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.indices((2, 2))[0].tolist()
    [[0, 0], [1, 1]]
    """
    return np.indices(dimensions, dtype=dtype, sparse=sparse)


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an ``n``-sized ``ndim``-dimensional array.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.diag_indices(2)
    (Array([0, 1]), Array([0, 1]))
    """
    return np.diag_indices(n, ndim)


def diag_indices_from(arr):
    """``diag_indices`` for ``arr``'s shape (all sides equal).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.diag_indices_from(jnp.zeros((2, 2)))[0]
    Array([0, 1])
    """
    shape = aval(to_operand(arr)).shape
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], len(shape))


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle of an ``(n, m)`` array.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.tril_indices(2)
    (Array([0, 1, 1]), Array([0, 0, 1]))
    """
    return np.tril_indices(n, k, m)


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle of an ``(n, m)`` array.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.triu_indices(2)
    (Array([0, 0, 1]), Array([0, 1, 1]))
    """
    return np.triu_indices(n, k, m)


def _shape2(arr, fn):
    shape = aval(to_operand(arr)).shape
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return shape


def tril_indices_from(arr, k=0):
    """``tril_indices`` for a 2-D array's shape.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.tril_indices_from(jnp.zeros((2, 3)), 1)[1]
    Array([0, 1, 0, 1, 2])
    """
    n, m = _shape2(arr, "tril_indices_from")
    return np.tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    """``triu_indices`` for a 2-D array's shape.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.triu_indices_from(jnp.zeros((2, 2)))[1]
    Array([0, 1, 1])
    """
    n, m = _shape2(arr, "triu_indices_from")
    return np.triu_indices(n, k, m)


def mask_indices(n, mask_func, k=0):
    """Indices where ``mask_func(ones((n, n)), k)`` is nonzero (static).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.mask_indices(2, jnp.triu)
    (Array([0, 0, 1]), Array([0, 1, 1]))
    """
    m = mask_func(np.ones((n, n), int), k)
    if is_tracer(m):
        # Under jit jnp.triu & co. stage even constant inputs; their NumPy namesakes give the static mask.
        np_fn = getattr(np, getattr(mask_func, "__name__", ""), None)
        if np_fn is None:
            from tracejit.core.errors import ConcretizationTypeError
            raise ConcretizationTypeError("mask_indices: mask_func returned a traced array under jit; pass a "
                                          "NumPy function (np.triu, np.tril, ...)")
        m = np_fn(np.ones((n, n), int), k)
    return np.nonzero(np.asarray(m) != 0)


def ix_(*args):
    """Open mesh from 1-D sequences, for cross-product indexing (``numpy.ix_``).

    Boolean sequences become their nonzero indices (concrete only).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> [a.shape for a in jnp.ix_(jnp.array([0, 1]), jnp.array([2, 3, 4]))]
    [(2, 1), (1, 3)]
    """
    if eager(*args):
        return np.ix_(*args)
    out = []
    nd = len(args)
    for k, a in enumerate(args):
        x = _array(a)
        if aval(x).ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if dtypes.is_bool(aval(x).dtype):
            if is_tracer(x):
                from tracejit.core.errors import NonConcreteBooleanIndexError
                raise NonConcreteBooleanIndexError("ix_: a traced boolean sequence has a data-dependent number "
                                                   "of indices; use jnp.nonzero(mask, size=N) first")
            x = np.nonzero(x)[0]
        elif not dtypes.is_integer(aval(x).dtype) and aval(x).size == 0:
            x = convert(x, dtypes.int64)
        shape = [1] * nd
        shape[k] = aval(x).shape[0]
        out.append(reshape(x, tuple(shape)))
    return tuple(out)


class _AxisConcatenator:
    """``r_``/``c_``: concatenation by index expressions (``numpy.r_``/``numpy.c_``).

    Slices become ``arange``/``linspace`` ranges (static); traced items are
    concatenated with ``jnp.concatenate``. The ``'r'``/``'c'`` matrix
    directives are not supported.
    """

    def __init__(self, axis, matrix, ndmin, trans1d, name):
        self.axis, self.matrix, self.ndmin, self.trans1d, self._name = axis, matrix, ndmin, trans1d, name

    def __repr__(self):
        return f"tracejit.numpy.{self._name}"

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if not any(is_tracer(k) for k in key):
            return getattr(np, self._name)[key]
        from tracejit.numpy.shape import concatenate, transpose
        from tracejit.numpy.creation import array
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, scalars = [], []
        for i, item in enumerate(key):
            scalar = False
            if isinstance(item, slice):
                newobj = np.r_[item]
            elif isinstance(item, str):
                if i != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    raise NotImplementedError(f"{self._name}: the matrix directives 'r'/'c' are not supported")
                vals = [int(v) for v in item.split(",")]
                axis = vals[0]
                if len(vals) > 1:
                    ndmin = vals[1]
                if len(vals) > 2:
                    trans1d = vals[2]
                continue
            else:
                newobj = _array(item)
                scalar = aval(newobj).ndim == 0
                if scalar:
                    scalars.append(len(objs))
            x = _array(newobj)
            if ndmin > 1 and aval(x).ndim < ndmin:
                # np.array(x, ndmin=ndmin), then NumPy's trans1d axis placement.
                k2 = ndmin - aval(x).ndim
                x = reshape(x, (1,) * k2 + aval(x).shape)
                if trans1d != -1:
                    k1 = trans1d if trans1d >= 0 else trans1d + k2 + 1
                    defaxes = list(range(ndmin))
                    x = transpose(x, defaxes[:k1] + defaxes[k2:] + defaxes[k1:k2])
            elif aval(x).ndim == 0:
                x = reshape(x, (1,))
            objs.append(x)
        from tracejit.numpy._util import promote
        objs = promote(*objs) if objs else objs
        objs = [reshape(o, (1,)) if aval(_array(o)).ndim == 0 else o for o in objs]
        return concatenate([array(o) if not is_tracer(o) else o for o in objs], axis=axis)

    def __len__(self):
        return 0


r_ = _AxisConcatenator(0, False, 1, -1, "r_")
c_ = _AxisConcatenator(-1, False, 2, 0, "c_")
s_ = np.s_
index_exp = np.index_exp


def unravel_index(indices, shape, order="C"):
    """Convert flat indices to a tuple of coordinate arrays (``numpy.unravel_index``).

    Under jit out-of-bounds indices cannot raise; as in ``jax.numpy`` they are
    clipped into the valid range (negative ones too).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.unravel_index(jnp.array([5, 1]), (2, 3))
    (Array([1, 0]), Array([2, 1]))
    """
    if eager(indices):
        return np.unravel_index(indices, shape, order=order)
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(operator.index(s) for s in shape)
    idx = _array(indices)
    if not (dtypes.is_integer(aval(idx).dtype)):
        raise TypeError("only int indices permitted")
    idx = convert(idx, dtypes.int64)
    total = int(np.prod(shape))
    from tracejit.numpy.misc import clip
    idx = clip(idx, np.int64(0), np.int64(max(total - 1, 0)))
    out = []
    dims = shape if order == "F" else shape[::-1]
    for s in dims:
        out.append(U.remainder(idx, np.int64(s)) if s else idx)
        idx = U.floor_divide(idx, np.int64(s)) if s else idx
    return tuple(out if order == "F" else out[::-1])


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices from a tuple of coordinate arrays (``numpy.ravel_multi_index``).

    ``mode`` is 'raise', 'wrap' or 'clip' (one per dimension or one for
    all). Under jit 'raise' cannot check the bounds (the values are not
    known), so, as in ``jax.numpy``, it needs concrete indices: pass
    ``mode='clip'`` or ``'wrap'`` for traced ones.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.ravel_multi_index((jnp.array([1, 0]), jnp.array([2, 1])), (2, 3))
    Array([5, 1])
    """
    if eager(*multi_index):
        return np.ravel_multi_index(multi_index, dims, mode=mode, order=order)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if "raise" in modes:
        from tracejit.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(
            "ravel_multi_index: mode='raise' checks the index values, which are traced under jit; "
            "pass mode='clip' or mode='wrap'")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    from tracejit.numpy.misc import clip
    from tracejit.numpy.shape import broadcast_arrays
    idxs = broadcast_arrays(*[_array(i) for i in multi_index])
    out = np.int64(0)
    items = list(zip(idxs, dims, modes))
    if order == "F":
        items = items[::-1]
    for i, d, md in items:
        if not dtypes.is_integer(aval(i).dtype):
            raise TypeError("only int indices permitted")
        i = convert(i, dtypes.int64)
        if md == "clip":
            i = clip(i, np.int64(0), np.int64(max(d - 1, 0)))
        elif md == "wrap":
            i = U.remainder(i, np.int64(d)) if d else i
        else:
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {md!r})")
        out = U.add(U.multiply(out, np.int64(d)), i)
    return out
