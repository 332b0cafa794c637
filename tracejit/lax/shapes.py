"""Array construction and shape manipulation of ``jax.lax`` built on the structural primitives:
full, full_like, empty, broadcast_shapes, broadcast_to_rank, broadcast_like, collapse, split,
tile, stack, unstack, batch_matmul, dynamic_update_index_in_dim, optimization_barrier, dtype,
shape_as_value.

All are compositions of ``broadcast_in_dim``, ``reshape``, ``slice``, ``concatenate`` and
``dot_general``, so they differentiate, batch and compile like those.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.trace import EVAL_TRACE, current_trace
from tracejit.core.tracer import Tracer, jax_value
from tracejit.core.pytree import tree_map
from tracejit.lax.indexing import dynamic_update_slice_in_dim
from tracejit.ops.elementwise import binary_prims
from tracejit.ops.operands import lift
from tracejit.lax.ops import (broadcast, broadcast_in_dim, concatenate, convert_element_type, dot_general, reshape,
                              slice_in_dim, transpose)
from tracejit.numpy.advanced_indexing import getitem
from tracejit.numpy._util import aval, canonicalize_axis, is_tracer, to_operand

__all__ = ["full", "full_like", "empty", "broadcast_shapes", "broadcast_to_rank", "broadcast_like", "collapse",
           "split", "tile", "stack", "unstack", "batch_matmul", "dynamic_update_index_in_dim",
           "optimization_barrier", "dtype", "shape_as_value", "index_take", "stage"]


def _shape(shape, fn):
    try:
        out = tuple(operator.index(d) for d in (shape if np.iterable(shape) else (shape,)))
    except TypeError:
        raise TypeError(f"lax.{fn}: shape must be a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise TypeError(f"lax.{fn}: shape {out} has a negative dimension")
    return out


def _array(x):
    x = to_operand(x)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (``jax.lax.full``).

    ``dtype`` defaults to the fill value's (Python scalars: the default int/float/complex
    dtype). ``fill_value`` may be traced. ``sharding`` is accepted and ignored (one device).

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.full((2, 3), 1.5)
    Array([[1.5, 1.5, 1.5],
           [1.5, 1.5, 1.5]])
    """
    shape = _shape(shape, "full")
    v = _array(fill_value)
    if aval(v).shape:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape {aval(v).shape}.")
    if dtype is not None:
        v = convert_element_type(v, dtype)
    return broadcast(v, shape)


def _is_shape_dtype(x):
    """Objects with ``shape`` and ``dtype`` that are not arrays (``ShapeDtypeStruct``, avals)."""
    return hasattr(x, "shape") and hasattr(x, "dtype") and not is_tracer(x) and not isinstance(x, (np.ndarray, np.generic))


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like ``x`` (its dtype and shape unless given) filled with ``fill_value``
    (``jax.lax.full_like``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.full_like(np.zeros((2,), np.int32), 7)
    Array([7, 7], dtype=int32)
    """
    a = x if _is_shape_dtype(x) else aval(_array(x))
    return full(a.shape if shape is None else shape, fill_value, a.dtype if dtype is None else dtype)


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` whose values must not be relied on (``jax.lax.empty``).

    tracejit fills it with zeros.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.empty((2,), np.float32).shape
    (2,)
    """
    return full(shape, np.zeros((), dtypes.canonical(dtype))[()])


def broadcast_shapes(*shapes):
    """The NumPy broadcast of integer ``shapes`` (``jax.lax.broadcast_shapes``).

    Raises ``ValueError`` for incompatible shapes.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        raise TypeError("broadcast_shapes needs at least one shape")
    shapes = [_shape(s, "broadcast_shapes") for s in shapes]
    ndim = max(len(s) for s in shapes)
    out = []
    for dims in zip(*((1,) * (ndim - len(s)) + s for s in shapes)):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to_rank(x, rank):
    """Add leading size-1 dimensions so ``x`` has rank ``rank`` (``jax.lax.broadcast_to_rank``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.broadcast_to_rank(np.ones(3), 3).shape
    (1, 1, 3)
    """
    x = _array(x)
    nd = aval(x).ndim
    if rank < nd:
        raise ValueError(f"broadcast_to_rank: rank {rank} is below the operand's rank {nd}")
    return x if nd == rank else broadcast(x, (1,) * (rank - nd))


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (NumPy rules) to the shape of ``like_arr`` (``jax.lax.broadcast_like``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.broadcast_like(np.arange(3), np.zeros((2, 3)))
    Array([[0, 1, 2],
           [0, 1, 2]])
    """
    x = _array(arr)
    shape = aval(_array(like_arr)).shape
    xs = aval(x).shape
    if len(xs) > len(shape) or broadcast_shapes(xs, shape) != shape:
        raise ValueError(f"broadcast_like: cannot broadcast shape {xs} to {shape}")
    lead = len(shape) - len(xs)
    squeezed = [i for i, d in enumerate(xs) if d != shape[lead + i]]
    if squeezed:
        x = reshape(x, tuple(d for i, d in enumerate(xs) if i not in squeezed))
    dims = tuple(lead + i for i in range(len(xs)) if i not in squeezed)
    return broadcast_in_dim(x, shape, dims)


def collapse(operand, start_dimension, stop_dimension=None):
    """Merge dimensions ``[start_dimension, stop_dimension)`` into one (``jax.lax.collapse``).

    The bounds follow Python slice rules (negative values count from the end).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.collapse(np.zeros((2, 3, 4)), 1).shape
    (2, 12)
    """
    x = _array(operand)
    shape = aval(x).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"Invalid dimension range passed to collapse: {shape}[{start_dimension}:{stop_dimension}]")
    return reshape(x, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def split(operand, sizes, axis=0):
    """Split ``operand`` along ``axis`` into pieces of the given ``sizes`` (``jax.lax.split``).

    The sizes must be non-negative and sum to the axis length.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> [p.tolist() for p in lax.split(np.arange(5), (2, 0, 3))]
    [[0, 1], [], [2, 3, 4]]
    """
    x = _array(operand)
    shape = aval(x).shape
    axis = canonicalize_axis(axis, len(shape))
    sizes = tuple(operator.index(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if sum(sizes) != shape[axis]:
        raise ValueError(f"Sum of sizes passed to split must be equal to the dimension being split, got "
                         f"dimension size {shape[axis]} and sizes {list(sizes)}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(x, start, start + s, 1, axis))
        start += s
    return out


def tile(operand, reps):
    """Repeat ``operand`` ``reps[i]`` times along each axis ``i`` (``jax.lax.tile``).

    ``reps`` must have one entry per axis.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.tile(np.array([[1], [2]]), (1, 3))
    Array([[1, 1, 1],
           [2, 2, 2]])
    """
    x = _array(operand)
    shape = aval(x).shape
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != len(shape) or any(r < 0 for r in reps):
        raise TypeError(f"lax.tile: reps {reps} must have one non-negative entry per axis of shape {shape}")
    # Broadcast to (r0, n0, r1, n1, ...) and merge each pair.
    inter = tuple(v for r, n in zip(reps, shape) for v in (r, n))
    y = broadcast_in_dim(x, inter, tuple(range(1, 2 * len(shape), 2)))
    return reshape(y, tuple(r * n for r, n in zip(reps, shape)))


def stack(operands, axis=0):
    """Join arrays of one shape and dtype along a new ``axis`` (``jax.lax.stack``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.stack([np.array([1, 2]), np.array([3, 4])], axis=1)
    Array([[1, 3],
           [2, 4]])
    """
    arrays = [_array(o) for o in operands]
    if not arrays:
        raise ValueError("lax.stack needs at least one operand")
    shape = aval(arrays[0]).shape
    axis = canonicalize_axis(axis, len(shape) + 1)
    new = shape[:axis] + (1,) + shape[axis:]
    return concatenate([reshape(a, new) for a in arrays], axis)


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple (``jax.lax.unstack``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.unstack(np.array([[1, 2], [3, 4]]), axis=1)
    (Array([1, 3]), Array([2, 4]))
    """
    x = _array(x)
    shape = aval(x).shape
    axis = canonicalize_axis(axis, len(shape))
    rest = shape[:axis] + shape[axis + 1:]
    return tuple(reshape(slice_in_dim(x, i, i + 1, 1, axis), rest) for i in range(shape[axis]))


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over matching leading batch axes (``jax.lax.batch_matmul``).

    Both operands have one rank ``>= 2``; the last axis of ``lhs`` contracts with the
    second-to-last of ``rhs``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.batch_matmul(np.ones((4, 2, 3)), np.ones((4, 3, 5))).shape
    (4, 2, 5)
    """
    lhs, rhs = _array(lhs), _array(rhs)
    ln, rn = aval(lhs).ndim, aval(rhs).ndim
    if min(ln, rn) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ln}, {rn}")
    if ln != rn:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ln}, {rn}")
    batch = tuple(range(ln - 2))
    return dot_general(lhs, rhs, (((ln - 1,), (rn - 2,)), (batch, batch)), precision=precision)


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
    """``operand`` with its slice at (possibly traced) ``index`` along ``axis`` replaced by
    ``update`` (``jax.lax.dynamic_update_index_in_dim``).

    ``update`` may lack the indexed axis; the index is clamped into range.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.dynamic_update_index_in_dim(np.zeros(6), 1.0, 10, axis=0)
    Array([0., 0., 0., 0., 0., 1.])
    """
    x = _array(operand)
    nd = aval(x).ndim
    axis = canonicalize_axis(axis, nd)
    u = _array(update)
    if aval(u).ndim == nd - 1:
        us = aval(u).shape
        u = reshape(u, us[:axis] + (1,) + us[axis:])
    return dynamic_update_slice_in_dim(x, u, index, axis, allow_negative_indices=allow_negative_indices)


def optimization_barrier(operand, /):
    """The identity on a pytree of arrays (``jax.lax.optimization_barrier``).

    In XLA it stops values being moved across the barrier; tracejit's compiler does not
    reorder across it either way, so it returns its argument (leaves as arrays).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.optimization_barrier((np.ones(2), 3.0))
    (Array([1., 1.]), 3.0)
    """
    return tree_map(lambda v: jax_value(v) if is_tracer(v) or dtypes.is_python_scalar(v) else to_operand(v), operand)


def stage(x):
    """The identity, lifting ``x`` into the active trace (``jax.lax.stage``).

    A Python scalar or NumPy array becomes a traced value of the trace running now (under
    ``jit``: a value of the program, not a constant folded into it); outside any trace the
    result is an Array.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> lax.stage(np.arange(3))
    Array([0, 1, 2])
    >>> _ = tracejit.jit(lambda: print(type(lax.stage(2.0)).__name__) or 0)()
    Tracer
    """
    trace = current_trace()
    if trace is EVAL_TRACE:
        return np.asarray(to_operand(x))
    if isinstance(x, Tracer) and x._trace is trace:
        return jax_value(x)
    if not hasattr(trace, "to_atom"):
        # (a batching or other interpreting trace: its values are its inputs' values)
        return jax_value(x) if isinstance(x, Tracer) else to_operand(x)
    return lift(to_operand(x), trace)


def dtype(x):
    """The (canonical) dtype of an array, scalar or dtype-like ``x`` (``jax.lax.dtype``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.dtype(1.0), lax.dtype(np.int8(3)), lax.dtype("float32")
    (dtype('float64'), dtype('int8'), dtype('float32'))
    """
    if isinstance(x, (type, np.dtype, str)):
        return dtypes.canonical(np.dtype(x))
    return aval(_array(x)).dtype


def shape_as_value(shape):
    """A static shape as a 1-D integer array (``jax.lax.shape_as_value``): int32 unless a
    dimension needs int64.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.shape_as_value((2, 3))
    Array([2, 3], dtype=int32)
    """
    shape = _shape(shape, "shape_as_value")
    dt = np.int32 if all(d <= np.iinfo(np.int32).max for d in shape) else np.int64
    return np.asarray(shape, dtype=dt).reshape(len(shape))


def index_take(src, idxs, axes):
    """Rows of ``src`` picked by one index array per axis in ``axes`` (``jax.lax.index_take``).

    ``result[i, ...] = src[..., idxs[0][i] at axes[0], idxs[1][i] at axes[1], ...]``: the
    picked position comes first, the remaining axes follow in order. Indices wrap modulo
    the axis size, as JAX.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.index_take(np.arange(12).reshape(3, 4), (np.array([0, 2]), np.array([1, -1])), (0, 1))
    Array([ 1, 11])
    """
    x = _array(src)
    shape = aval(x).shape
    axes = tuple(canonicalize_axis(a, len(shape)) for a in axes)
    idxs = [_array(i) for i in idxs]
    if len(idxs) != len(axes):
        raise TypeError(f"lax.index_take: {len(idxs)} index arrays for {len(axes)} axes")
    if len(set(axes)) != len(axes):
        raise TypeError(f"lax.index_take: repeated axes {axes}")
    rest = [a for a in range(len(shape)) if a not in axes]
    xt = transpose(x, axes + tuple(rest))
    # Python's modulo (the sign of the divisor), as JAX's ``indices % size``: not lax.rem.
    wrapped = tuple(binary_prims["rem"].bind(i, np.asarray(shape[a], aval(i).dtype)[()]) if shape[a] else i
                    for i, a in zip(idxs, axes))
    return getitem(xt, wrapped, mode="clip")
