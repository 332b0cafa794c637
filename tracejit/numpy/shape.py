"""Array manipulation: reshape, transpose, axes moves, broadcasting, joining."""
from __future__ import annotations

import math
import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, reshape_p, rev_p, squeeze_p,
                                     transpose_p)
from tracejit.numpy._util import (aval, broadcast_shapes, broadcast_to_shape, canonicalize_axes,
                                  canonicalize_axis, convert, eager, promote, to_operand)


def _shape_arg(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    try:
        return tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of Python ints, got {shape!r} (shapes are static "
                        "under jit; a traced value cannot be a shape)") from None


def _resolve_reshape(old_shape, new_shape):
    size = math.prod(old_shape)
    unknown = [i for i, s in enumerate(new_shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if unknown:
        known = math.prod(s for s in new_shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(new_shape)}")
        new_shape = tuple(size // known if s == -1 else s for s in new_shape)
    if math.prod(new_shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(new_shape)}")
    return tuple(new_shape)


def reshape(a, shape=None, order="C", *, newshape=None):
    """Give ``a`` a new shape without changing its data (``order`` ``'C'``: row-major, ``'F'``:
    column-major index order).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> import tracejit.numpy as jnp
    >>> tracejit.jit(lambda x: jnp.reshape(x, (3, 2), order="F"))(np.arange(6).reshape(2, 3))
    Array([[0, 4],
           [3, 2],
           [1, 5]])
    """
    if shape is None:
        shape = newshape
    if eager(a):
        return np.reshape(a, shape, order=order)
    if order == "F":
        # Column-major: the reversed shapes in row-major order, between two transposes.
        x = to_operand(a)
        new = _resolve_reshape(aval(x).shape, _shape_arg(shape))
        return transpose(reshape(transpose(x), tuple(reversed(new))))
    if order != "C":
        raise NotImplementedError(f"reshape with order={order!r} is not supported on traced arrays (it depends on "
                                  "memory layout, which traced arrays do not have); use 'C' or 'F'")
    x = to_operand(a)
    new = _resolve_reshape(aval(x).shape, _shape_arg(shape))
    if new == aval(x).shape:
        return x
    return reshape_p.bind(x, new_sizes=new)


def ravel(a, order="C"):
    """Flatten to 1-D (``order`` ``'C'`` or ``'F'``)."""
    if eager(a):
        return np.ravel(a, order=order)
    return reshape(a, (-1,), order=order)


def transpose(a, axes=None):
    """Permute the axes (reverse them when ``axes`` is None)."""
    if eager(a):
        return np.transpose(a, axes)
    x = to_operand(a)
    nd = aval(x).ndim
    perm = tuple(reversed(range(nd))) if axes is None else tuple(canonicalize_axis(i, nd) for i in axes)
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"axes {axes} don't match array of dimension {nd}")
    if perm == tuple(range(nd)):
        return x
    return transpose_p.bind(x, permutation=perm)


def permute_dims(a, axes):
    """Array-API name of :func:`transpose`."""
    return transpose(a, axes)


def swapaxes(a, axis1, axis2):
    """Interchange two axes."""
    if eager(a):
        return np.swapaxes(a, axis1, axis2)
    x = to_operand(a)
    nd = aval(x).ndim
    perm = list(range(nd))
    i, j = canonicalize_axis(axis1, nd), canonicalize_axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


def moveaxis(a, source, destination):
    """Move axes to new positions; other axes keep their order."""
    if eager(a):
        return np.moveaxis(a, source, destination)
    x = to_operand(a)
    nd = aval(x).ndim
    src = [canonicalize_axis(s, nd) for s in np.atleast_1d(source).tolist()]
    dst = [canonicalize_axis(d, nd) for d in np.atleast_1d(destination).tolist()]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def expand_dims(a, axis):
    """Insert size-1 axes at the given positions."""
    if eager(a):
        return np.expand_dims(a, axis)
    x = to_operand(a)
    shape = list(aval(x).shape)
    axes = canonicalize_axes(axis, len(shape) + (len(axis) if isinstance(axis, (tuple, list)) else 1))
    for ax in axes:
        shape.insert(ax, 1)
    return reshape(x, tuple(shape))


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those named)."""
    if eager(a):
        return np.squeeze(a, axis)
    x = to_operand(a)
    shape = aval(x).shape
    if axis is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        dims = canonicalize_axes(axis, len(shape))
        for d in dims:
            if shape[d] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one "
                                 f"(axis {d} of shape {shape})")
    if not dims:
        return x
    return squeeze_p.bind(x, dimensions=dims)


def broadcast_to(array, shape):
    """Broadcast to a new shape (NumPy broadcasting rules)."""
    if eager(array):
        return np.broadcast_to(array, shape)
    shape = _shape_arg(shape)
    x = to_operand(array)
    if broadcast_shapes(aval(x).shape, shape) != shape:
        raise ValueError(f"cannot broadcast shape {aval(x).shape} to {shape}")
    if aval(x).shape == ():
        return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=())
    return broadcast_to_shape(x, shape)


def broadcast_arrays(*args):
    """Broadcast arrays against each other."""
    if eager(*args):
        return list(np.broadcast_arrays(*args))
    ops = [to_operand(a) for a in args]
    shape = broadcast_shapes(*(aval(o).shape for o in ops))
    return [broadcast_to(o, shape) for o in ops]


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (``axis=None`` flattens first)."""
    if eager(*arrays):
        return np.concatenate(arrays, axis=axis, dtype=dtype)
    ops = [to_operand(a) for a in arrays]
    if not ops:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        ops, axis = [ravel(o) for o in ops], 0
    ops = promote(*ops)
    if dtype is not None:
        ops = [convert(o, dtype) for o in ops]
    ops = [o if not dtypes.is_python_scalar(o) else np.asarray(o) for o in ops]
    nd = aval(ops[0]).ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = canonicalize_axis(axis, nd)
    for o in ops:
        s = aval(o).shape
        if len(s) != nd or any(a != b for i, (a, b) in enumerate(zip(s, aval(ops[0]).shape)) if i != ax):
            raise ValueError("concatenate: all the input array dimensions except for the concatenation axis "
                             f"must match exactly, but got shapes {[aval(x).shape for x in ops]}")
    if len(ops) == 1:
        return ops[0]
    return concatenate_p.bind(*ops, dimension=ax)


concat = concatenate


def stack(arrays, axis=0, dtype=None):
    """Join arrays along a new axis."""
    if eager(*arrays):
        return np.stack(arrays, axis=axis, dtype=dtype)
    ops = [to_operand(a) for a in arrays]
    if not ops:
        raise ValueError("need at least one array to stack")
    shapes = {aval(o).shape for o in ops}
    if len(shapes) > 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    nd = aval(ops[0]).ndim + 1
    ax = canonicalize_axis(axis, nd)
    return concatenate([expand_dims(o, ax) for o in ops], axis=ax, dtype=dtype)


def atleast_1d(*arys):
    """View inputs as arrays with at least one dimension."""
    res = [a if aval(to_operand(a)).ndim >= 1 else reshape(a, (1,)) for a in map(to_operand, arys)]
    return res[0] if len(res) == 1 else res


def atleast_2d(*arys):
    """View inputs as arrays with at least two dimensions."""
    res = []
    for a in map(to_operand, arys):
        s = aval(a).shape
        res.append(a if len(s) >= 2 else reshape(a, (1,) * (2 - len(s)) + s))
    return res[0] if len(res) == 1 else res


def atleast_3d(*arys):
    """View inputs as arrays with at least three dimensions."""
    res = []
    for a in map(to_operand, arys):
        s = aval(a).shape
        res.append(a if len(s) >= 3 else reshape(a, {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)]))
    return res[0] if len(res) == 1 else res


def hstack(tup, dtype=None):
    """Stack arrays horizontally (column-wise)."""
    if eager(*tup):
        return np.hstack(tup, dtype=dtype)
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if aval(arrs[0]).ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Stack arrays vertically (row-wise)."""
    if eager(*tup):
        return np.vstack(tup, dtype=dtype)
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    """Stack arrays along the third axis."""
    if eager(*tup):
        return np.dstack(tup)
    return concatenate([atleast_3d(a) for a in tup], axis=2, dtype=dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array."""
    if eager(*tup):
        return np.column_stack(tup)
    cols = [reshape(a, (-1, 1)) if aval(to_operand(a)).ndim < 2 else a for a in tup]
    return concatenate(cols, axis=1)


def flip(m, axis=None):
    """Reverse the order of elements along the given axes."""
    if eager(m):
        return np.flip(m, axis)
    x = to_operand(m)
    axes = canonicalize_axes(axis, aval(x).ndim)
    return rev_p.bind(x, dimensions=axes) if axes else x


def fliplr(m):
    """Reverse along axis 1."""
    return flip(m, 1)


def flipud(m):
    """Reverse along axis 0."""
    return flip(m, 0)


def shape(a):
    """Shape of an array (static)."""
    return aval(to_operand(a)).shape


def ndim(a):
    """Number of dimensions (static)."""
    return aval(to_operand(a)).ndim


def size(a, axis=None):
    """Number of elements (static)."""
    s = aval(to_operand(a)).shape
    return math.prod(s) if axis is None else s[axis]
