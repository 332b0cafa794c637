"""Selection and rearrangement: ``choose``, ``compress``, ``extract``, ``place``,
``put``, ``fill_diagonal``, ``trim_zeros``, ``resize``, ``block``, ``rollaxis``,
``unstack``, ``matrix_transpose``, ``array_equiv``, ``sort_complex``, ``unwrap``,
``fromfunction``.

As in ``jax.numpy``, the functions that NumPy defines as in-place updates (``place``,
``put``, ``fill_diagonal``) return a new array and require ``inplace=False``. Functions
whose result length depends on the data (``compress``, ``extract``) take a static
``size=`` (and ``fill_value=``) under ``jit``; without it they raise
``ConcretizationTypeError``. ``trim_zeros`` has no ``size=`` in JAX: it needs a
concrete input.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.errors import ConcretizationTypeError
from tracejit.numpy._util import (aval, broadcast_shapes, canonicalize_axis, concrete, convert, eager, is_tracer, promote,
                                  to_operand)
from tracejit.numpy import reductions as R
from tracejit.numpy import ufuncs as U
from tracejit.numpy.shape import (broadcast_arrays, broadcast_to, concatenate, moveaxis, ravel, reshape,
                                  swapaxes)
from tracejit.transforms.api_vmap import vmap

__all__ = ["choose", "compress", "extract", "place", "put", "fill_diagonal", "trim_zeros", "resize", "block",
           "rollaxis", "unstack", "matrix_transpose", "array_equiv", "sort_complex", "unwrap", "fromfunction"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _where(c, x, y):
    from tracejit.numpy.misc import where
    return where(c, x, y)


def _iota(shape, dimension):
    from tracejit.numpy.sorting import _iota as iota
    return iota(dtypes.int64, shape, dimension)


def _tile_to_size(v, n):
    """``v`` (1-D) repeated cyclically to length ``n``."""
    from tracejit.numpy.extra import tile
    m = aval(v).shape[0]
    return tile(v, -(-n // m))[:n] if n != m else v


def _immutable(fn, inplace, error=ValueError):
    if inplace:
        raise error(f"jax.numpy.{fn} cannot modify arrays in-place, because JAX arrays are immutable. "
                    f"Pass inplace=False to instead return an updated array.")


# --------------------------------------------------------------------------- choose / compress / extract

def choose(a, choices, out=None, mode="raise"):
    """Build an array from ``choices``: ``out[i] = choices[a[i]][i]`` (all broadcast together).

    ``mode``: ``'raise'`` (out-of-range indices raise; needs a concrete ``a`` under jit),
    ``'wrap'`` (indices modulo ``len(choices)``) or ``'clip'``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.choose(jnp.array([0, 1, 2, 1]), [10, 20, jnp.array([30, 31, 32, 33])])
    Array([10, 20, 32, 20])
    """
    if out is not None:
        raise NotImplementedError("choose: the out= argument is not supported; use the returned array")
    choices = list(choices)
    if eager(a, choices):
        return np.choose(a, choices, mode=mode)
    idx = _array(a)
    if not dtypes.is_integer(aval(idx).dtype):
        raise ValueError("choose: `a` array must be integer typed")
    n = len(choices)
    if n == 0:
        raise ValueError("choose: choices must not be empty")
    if mode == "raise":
        if is_tracer(idx):
            raise ConcretizationTypeError(
                "jnp.choose with mode='raise' checks the index values, which are not known under jit. "
                "Use mode='wrap' or mode='clip' instead.")
        if np.any((idx < 0) | (idx >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = U.remainder(idx, np.asarray(n, aval(idx).dtype)[()])
    elif mode == "clip":
        idx = U.minimum(U.maximum(idx, np.asarray(0, aval(idx).dtype)[()]), np.asarray(n - 1, aval(idx).dtype)[()])
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    ops = [_array(c) for c in promote(*choices)]
    idx, *ops = broadcast_arrays(idx, *ops)
    result = ops[0]
    for i in range(1, n):
        result = _where(U.equal(idx, np.asarray(i, aval(idx).dtype)[()]), ops[i], result)
    return result


def _sized_selection(values, cond, size, fill_value, fn):
    """Rows of ``values`` (axis 0) where ``cond``, in order, padded/truncated to ``size`` rows."""
    from tracejit.numpy.sorting import _check_size, _data_dependent, nonzero
    from tracejit.numpy.indexing_api import take
    if size is None:
        raise _data_dependent(fn, "the number of selected elements",
                              f"Pass a static size=N (the result is truncated or padded with fill_value), "
                              f"e.g. jnp.{fn}(condition, a, size=a.size).")
    size = _check_size(size, fn)
    (idx,) = nonzero(cond, size=size)
    count = R.sum(convert(cond, dtypes.int64))
    picked = take(values, idx, axis=0)
    valid = U.less(_iota((size,), 0), count)
    valid = reshape(valid, (size,) + (1,) * (aval(values).ndim - 1))
    return _where(valid, picked, convert(to_operand(fill_value), aval(values).dtype))


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` (flattened when None) where ``condition`` is true.

    Under jit the number of selected slices must be static: pass ``size=N``; the result is
    truncated or padded to ``N`` with ``fill_value``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.compress(jnp.array([True, False, True]), jnp.array([[1, 2, 3], [4, 5, 6]]), axis=1)
    Array([[1, 3],
           [4, 6]])
    >>> jnp.compress(jnp.array([False, True]), jnp.array([7, 8, 9]), size=3, fill_value=-1)
    Array([ 8, -1, -1])
    """
    if out is not None:
        raise NotImplementedError("compress: the out= argument is not supported; use the returned array")
    if concrete(condition, a) and size is None:
        return np.compress(condition, a, axis)
    cond = convert(_array(condition), dtypes.bool_)
    if aval(cond).ndim != 1:
        raise ValueError("condition must be a 1D array")
    x = _array(a)
    if axis is None:
        x, axis = ravel(x), 0
    axis = canonicalize_axis(axis, aval(x).ndim)
    x = moveaxis(x, axis, 0)
    n, m = aval(x).shape[0], aval(cond).shape[0]
    if m > n:
        extra = cond[n:]
        if is_tracer(extra):
            raise ValueError(f"compress: condition has {m} entries but the axis has length {n}; under jit "
                             "the condition may not be longer than the axis")
        if np.any(extra):
            raise ValueError("condition contains entries that are out of bounds")
        cond = cond[:n]
    elif m < n:
        x = x[:m]
    return moveaxis(_sized_selection(x, cond, size, fill_value, "compress"), 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``arr`` (flattened) where ``condition`` (flattened) is nonzero.

    Under jit pass a static ``size=N`` (the result is truncated or padded with ``fill_value``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> x = jnp.arange(6).reshape(2, 3)
    >>> jnp.extract(x % 2 == 0, x)
    Array([0, 2, 4])
    """
    if concrete(condition, arr) and size is None:
        return np.extract(condition, arr)
    return compress(ravel(U.not_equal(_array(condition), 0)), ravel(_array(arr)), size=size,
                    fill_value=fill_value)


# --------------------------------------------------------------------------- functional in-place updates

def place(arr, mask, vals, *, inplace=True):
    """A copy of ``arr`` with the elements where ``mask`` is true replaced by ``vals`` in order
    (``vals`` repeats cyclically). JAX's form: pass ``inplace=False``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.place(jnp.zeros(5, int), jnp.array([1, 0, 1, 1, 0]), jnp.array([7, 8]), inplace=False)
    Array([7, 0, 8, 7, 0])
    """
    _immutable("place", inplace)
    x, m, v = _array(arr), _array(mask), ravel(_array(vals))
    if aval(x).size != aval(m).size:
        raise ValueError("place: arr and mask must be the same size")
    if aval(v).size == 0:
        raise ValueError("Cannot place values from an empty array")
    if aval(x).size == 0:
        return x
    if eager(x, m, v):
        out = np.array(x, copy=True)
        np.place(out, m, v)
        return out
    from tracejit.numpy.indexing_api import take
    flat_m = convert(ravel(m), dtypes.bool_)
    rank = U.subtract(R.cumsum(convert(flat_m, dtypes.int64)), np.int64(1))   # which value each True takes
    nv = aval(v).shape[0]
    picked = take(convert(v, aval(x).dtype), U.remainder(rank, np.int64(nv)), mode="clip")
    return reshape(_where(flat_m, picked, ravel(x)), aval(x).shape)


def put(a, ind, v, mode=None, *, inplace=True):
    """A copy of ``a`` with the flat positions ``ind`` set to ``v`` (repeated cyclically).
    JAX's form: pass ``inplace=False``.

    ``mode``: None (JAX's default: negative indices count from the end, out-of-range ones are
    dropped), ``'clip'`` or ``'wrap'``; ``'raise'`` is not supported.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.put(jnp.zeros(5, int), jnp.array([0, -1, 9]), jnp.array([3, 4, 5]), inplace=False)
    Array([3, 0, 0, 0, 4])
    """
    _immutable("put", inplace)
    x, idx, vals = _array(a), ravel(_array(ind)), ravel(_array(v))
    if not dtypes.is_integer(aval(idx).dtype) and aval(idx).size:
        raise TypeError(f"put: indices must be integers, got {aval(idx).dtype}")
    n = aval(x).size
    if aval(idx).size == 0 or aval(vals).size == 0:
        return x
    vals = _tile_to_size(vals, aval(idx).shape[0])
    idx = convert(idx, dtypes.int64)
    if mode is None:
        keep = U.logical_and(U.greater_equal(idx, np.int64(-n)), U.less(idx, np.int64(n)))
        idx = _where(keep, U.remainder(idx, np.int64(max(n, 1))), np.int64(n))    # n: dropped
    elif mode == "clip":
        idx = U.minimum(U.maximum(idx, np.int64(0)), np.int64(n - 1))
    elif mode == "wrap":
        idx = U.remainder(idx, np.int64(n))
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    flat = ravel(x)
    if eager(flat, idx, vals):
        out = np.array(flat, copy=True)
        keep = np.asarray(idx) < n
        out[np.asarray(idx)[keep]] = np.asarray(vals).astype(out.dtype)[keep]
    else:
        from tracejit.numpy.advanced_indexing import scatter
        out = scatter(flat, idx, vals, "set", mode="drop")
    return reshape(out, aval(x).shape)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """A copy of ``a`` with its main diagonal set to ``val`` (repeated cyclically along the
    diagonal). JAX's form: pass ``inplace=False``; ``wrap=True`` is not implemented (as JAX).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fill_diagonal(jnp.zeros((3, 3), int), jnp.array([1, 2]), inplace=False)
    Array([[1, 0, 0],
           [0, 2, 0],
           [0, 0, 1]])
    """
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    x, v = _array(a), _array(val)
    shape = aval(x).shape
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and not all(s == shape[0] for s in shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    if eager(x, v):
        out = np.array(x, copy=True)
        np.fill_diagonal(out, v)
        return out
    from tracejit.numpy.extra import pad
    n = min(shape)
    v = convert(v, aval(x).dtype)
    if aval(v).ndim:
        if aval(v).size == 0:
            return x
        v = _tile_to_size(ravel(v), n)
        v = reshape(pad(v, [(0, shape[0] - n)]), (shape[0],) + (1,) * (len(shape) - 1))
    on_diagonal = None
    for d in range(1, len(shape)):
        eq = U.equal(_iota(shape, 0), _iota(shape, d))
        on_diagonal = eq if on_diagonal is None else U.logical_and(on_diagonal, eq)
    return _where(on_diagonal, v, x)


# --------------------------------------------------------------------------- shape

def trim_zeros(filt, trim="fb"):
    """``filt`` (1-D) without its leading (``'f'``) and/or trailing (``'b'``) zeros.

    The result length depends on the values, so ``filt`` must be concrete (not traced).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]))
    Array([1, 2])
    """
    if is_tracer(filt):
        raise ConcretizationTypeError(
            "jnp.trim_zeros: the length of the result depends on the values of `filt`, which are not known "
            "under jit. Call it outside jit, or mask the zeros instead (e.g. with jnp.where).")
    arr = np.asarray(_array(filt))
    if arr.ndim != 1:
        raise TypeError("'filt' must be 1-D array")
    return np.array(np.trim_zeros(arr, trim), copy=True)


def resize(a, new_shape):
    """An array of ``new_shape`` filled with ``a``'s elements (flattened) repeated cyclically.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.resize(jnp.array([1, 2, 3]), (2, 4))
    Array([[1, 2, 3, 1],
           [2, 3, 1, 2]])
    """
    shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    if eager(a):
        return np.resize(a, shape)
    x = ravel(_array(a))
    size = math.prod(shape)
    if aval(x).size == 0 or size == 0:
        from tracejit.numpy.creation import zeros
        return zeros(shape, aval(x).dtype)
    return reshape(_tile_to_size(x, size), shape)


def _block(xs):
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if len(xs) == 0:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        parts, depths = zip(*(_block(x) for x in xs))
        if any(d != depths[0] for d in depths[1:]):
            raise ValueError("Mismatched list depths in jax.numpy.block")
        rank = max(depths[0], max(aval(p).ndim for p in parts))
        parts = [reshape(p, (1,) * (rank - aval(p).ndim) + aval(p).shape) for p in parts]
        return concatenate(parts, axis=-depths[0]), depths[0] + 1
    return _array(xs), 1


def block(arrays):
    """Assemble an array from nested lists of blocks (the innermost lists join along the last axis).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.block([[jnp.eye(2, dtype=int), jnp.zeros((2, 1), int)], [jnp.ones((1, 3), int)]])
    Array([[1, 0, 0],
           [0, 1, 0],
           [1, 1, 1]])
    """
    out, _ = _block(arrays)
    return out


def rollaxis(a, axis, start=0):
    """Move ``axis`` to position ``start`` (``moveaxis`` is preferred).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.rollaxis(jnp.ones((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    x = _array(a)
    nd = aval(x).ndim
    axis = canonicalize_axis(axis, nd)
    if not -nd <= start <= nd:
        raise np.exceptions.AxisError(f"start={start} must satisfy {-nd}<=start<={nd}")
    if start < 0:
        start += nd
    if start > axis:
        start -= 1
    return moveaxis(x, axis, start)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> [s.tolist() for s in jnp.unstack(jnp.array([[1, 2], [3, 4]]), axis=1)]
    [[1, 3], [2, 4]]
    """
    x = _array(x)
    if aval(x).ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
    y = moveaxis(x, canonicalize_axis(axis, aval(x).ndim), 0)
    return tuple(y[i] for i in range(aval(y).shape[0]))


def matrix_transpose(x, /):
    """Swap the last two axes (a stack of matrices transposed).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.matrix_transpose(jnp.ones((5, 2, 3))).shape
    (5, 3, 2)
    """
    x = _array(x)
    if aval(x).ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={aval(x).ndim}")
    return swapaxes(x, -1, -2)


# --------------------------------------------------------------------------- comparison, sorting, phase

def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast to a common shape and are equal elementwise.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> bool(jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 2]])))
    True
    """
    if eager(a1, a2):
        return np.bool_(np.array_equiv(a1, a2))
    x, y = _array(a1), _array(a2)
    try:
        broadcast_shapes(aval(x).shape, aval(y).shape)
    except ValueError:
        return np.bool_(False)
    return R.all(U.equal(x, y))


def sort_complex(a):
    """``a`` sorted along its last axis (real part first, then imaginary), as a complex array.

    Real inputs become complex as NumPy's ``sort_complex`` does (int8/int16/uint8/uint16 to
    complex64, other real dtypes to complex128).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.sort_complex(jnp.array([3, 1, 2]))
    Array([1.+0.j, 2.+0.j, 3.+0.j])
    """
    if eager(a):
        return np.sort_complex(a)
    from tracejit.numpy.sorting import sort
    x = _array(a)
    d = aval(x).dtype
    out = sort(x, axis=-1)
    if dtypes.is_complex(d):
        return out
    return convert(out, dtypes.complex64 if d.char in "bhBH" else dtypes.complex128)


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """Unwrap a phase: add multiples of ``period`` so consecutive differences along ``axis`` stay
    within ``max(discont, period / 2)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.unwrap(jnp.array([0.0, 3.0, 6.5, 0.5]), period=4.0).tolist()
    [0.0, -1.0, -1.5, -3.5]
    """
    if eager(p, discont, period):
        return np.unwrap(p, discont, axis, period=period)
    from tracejit.numpy.extra import diff
    x = _array(p)
    nd = aval(x).ndim
    axis = canonicalize_axis(axis, nd)
    dd = diff(x, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = dtypes.canonical(np.result_type(aval(dd).dtype, period if not is_tracer(period) else aval(period).dtype))
    if dtypes.is_integer(dtype):
        interval_high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        interval_high, ambiguous = period / 2, True
    interval_low = -interval_high
    ddmod = U.add(U.remainder(U.subtract(dd, interval_low), period), interval_low)
    if ambiguous:
        ddmod = _where(U.logical_and(U.equal(ddmod, interval_low), U.greater(dd, 0)), interval_high, ddmod)
    correct = U.subtract(ddmod, dd)
    correct = _where(U.less(U.absolute(dd), discont), 0, correct)
    head = [slice(None)] * nd
    head[axis] = slice(0, 1)
    tail = list(head)
    tail[axis] = slice(1, None)
    rest = U.add(x[tuple(tail)], R.cumsum(correct, axis=axis))
    return concatenate([convert(x[tuple(head)], dtype), convert(rest, dtype)], axis=axis)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """An array whose element at index ``i`` is ``function(*i)``.

    As in ``jax.numpy``, ``function`` is applied with ``vmap`` over each axis, so it is called on
    scalar coordinates (of ``dtype``); it must be traceable. Keyword arguments are passed through
    unmapped.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.fromfunction(lambda i, j: i + 10 * j, (2, 3), dtype=int)
    Array([[ 0, 10, 20],
           [ 1, 11, 21]])
    """
    import functools
    from tracejit.numpy.creation import arange
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = tuple(operator.index(s) for s in shape)
    fn = functools.partial(function, **kwargs) if kwargs else function   # keyword arguments are not mapped
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        fn = vmap(fn, in_axes=tuple(in_axes[::-1]))
    return fn(*(arange(s, dtype=dtype) for s in shape))
