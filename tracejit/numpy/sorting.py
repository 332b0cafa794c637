"""Sorting, searching and counting: sort, argsort, lexsort, searchsorted,
digitize, nonzero/argwhere/flatnonzero (``size=`` under jit), unique
(``size=`` under jit), bincount (``length=`` under jit), histogram.

Under ``jit`` every output shape must be known from the input shapes. Where
NumPy's result size depends on the data, pass the static ``size=`` (or
``length=``) argument, as in ``jax.numpy``; without it these functions raise
an error that says so.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.errors import ConcretizationTypeError
from tracejit.ops.elementwise import iota_p
from tracejit.ops.sorting import bincount_p, nonzero_p, searchsorted_p, sort_p, unique_p
from tracejit.ops.structural import rev_p
from tracejit.numpy._util import aval, canonicalize_axis, concrete, convert, eager, is_tracer, promote, to_operand
from tracejit.numpy import ufuncs as U

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "searchsorted", "digitize",
           "nonzero", "argwhere", "flatnonzero", "count_nonzero", "unique", "unique_values",
           "unique_counts", "unique_inverse", "unique_all", "bincount", "histogram", "histogram_bin_edges"]


def _data_dependent(fn, what, fix):
    return ConcretizationTypeError(
        f"{fn}: {what} depends on the values of the input, but under jit every shape must be static. "
        f"{fix}")


def _array(x):
    x = to_operand(x)
    return np.asarray(x) if not is_tracer(x) and not isinstance(x, np.ndarray) else x


def _iota(dtype, shape, dimension):
    return iota_p.bind(dtype=dtypes.canonical(dtype), shape=tuple(shape), dimension=dimension)


def _flatten_axis(x, axis):
    from tracejit.numpy.shape import ravel
    if axis is None:
        return ravel(x), 0
    return x, canonicalize_axis(axis, max(aval(x).ndim, 1))


# --------------------------------------------------------------------------- sort

def _argsort_traced(x, axis, descending):
    from tracejit.numpy.shape import reshape
    if aval(x).ndim == 0:
        x = reshape(x, (1,))
    n = aval(x).shape[axis]
    if descending:
        # Reverse, sort ascending (stable), map back: ties keep their original order, as jax.numpy.
        idx = sort_p.bind(rev_p.bind(x, dimensions=(axis,)), _iota(dtypes.int64, aval(x).shape, axis),
                          dimension=axis, is_stable=True, num_keys=1)[1]
        return U.subtract(np.int64(n - 1), rev_p.bind(idx, dimensions=(axis,)))
    return sort_p.bind(x, _iota(dtypes.int64, aval(x).shape, axis), dimension=axis, is_stable=True,
                       num_keys=1)[1]


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Sorted copy of ``a`` along ``axis`` (flattened when ``axis`` is None).

    NaNs sort to the end, as in NumPy. ``descending=True`` (as jax.numpy)
    reverses the order, so NaNs come first.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.sort(jnp.array([3.0, jnp.nan, 1.0]))
    Array([ 1.,  3., nan])
    """
    if order is not None:
        raise NotImplementedError("sort(order=...) (structured arrays) is not supported")
    if eager(a) and not descending:
        return np.sort(a, axis=axis, kind=kind, stable=stable if kind is None else None)
    x, ax = _flatten_axis(_array(a), axis)
    if aval(x).ndim == 0:
        return x
    out = sort_p.bind(x, dimension=ax, is_stable=True, num_keys=1)[0]
    return rev_p.bind(out, dimensions=(ax,)) if descending else out


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort ``a`` along ``axis`` (always stable; int64).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.argsort(jnp.array([3, 1, 2]))
    Array([1, 2, 0])
    """
    if order is not None:
        raise NotImplementedError("argsort(order=...) (structured arrays) is not supported")
    if eager(a) and not descending:
        return np.argsort(a, axis=axis, kind="stable")
    x, ax = _flatten_axis(_array(a), axis)
    return _argsort_traced(x, ax, descending)


def lexsort(keys, axis=-1):
    """Indirect stable sort by several keys; the last key is the primary one.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.lexsort((jnp.array([1, 0, 1]), jnp.array([0, 0, 1])))
    Array([1, 0, 2])
    """
    if eager(*keys):
        return np.lexsort(keys, axis=axis)
    ks = [_array(k) for k in keys]
    if not ks:
        raise TypeError("lexsort: need at least one key")
    from tracejit.numpy.shape import broadcast_arrays
    ks = broadcast_arrays(*ks)
    ax = canonicalize_axis(axis, aval(ks[0]).ndim)
    iota = _iota(dtypes.int64, aval(ks[0]).shape, ax)
    return sort_p.bind(*reversed(ks), iota, dimension=ax, is_stable=True, num_keys=len(ks))[-1]


def partition(a, kth, axis=-1):
    """Partially sorted copy; traced arrays are fully sorted (a valid partition).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.partition(jnp.array([3, 1, 2]), 1)[1]
    np.int64(2)
    """
    if eager(a):
        return np.partition(a, kth, axis=axis)
    return sort(a, axis=axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a``; traced arrays get a full (stable) argsort.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> int(jnp.argpartition(jnp.array([3, 1, 2]), 0)[0])
    1
    """
    if eager(a):
        return np.argpartition(a, kth, axis=axis)
    return argsort(a, axis=axis)


# --------------------------------------------------------------------------- searching

def searchsorted(a, v, side="left", sorter=None, *, method=None):
    """Indices where ``v`` would be inserted into the sorted 1-D ``a`` (int64).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.searchsorted(jnp.array([1, 2, 3]), 2, side="right")
    Array(2)
    """
    if eager(a, v, sorter):
        return np.searchsorted(a, v, side=side, sorter=sorter)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a, v = promote(_array(a), v)
    v = _array(v)
    if aval(a).ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {aval(a).shape}")
    if sorter is not None:
        if is_tracer(sorter):
            from tracejit.numpy import indexing_api
            if not hasattr(indexing_api, "take"):
                raise NotImplementedError("searchsorted: a traced sorter needs jnp.take (gather), which is "
                                          "not available yet; apply the permutation before calling")
            a = indexing_api.take(a, sorter)
        else:
            from tracejit.numpy.extra import take_static
            a = take_static(a, np.asarray(sorter).tolist(), 0)
    if dtypes.is_complex(aval(a).dtype):
        raise NotImplementedError("searchsorted of complex traced arrays is not supported")
    return searchsorted_p.bind(a, v, side=side)


def digitize(x, bins, right=False):
    """Index of the bin each value of ``x`` falls in (``numpy.digitize``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.digitize(jnp.array([0.5, 1.5]), jnp.array([0.0, 1.0, 2.0]))
    Array([1, 2])
    """
    if eager(x, bins):
        return np.digitize(x, bins, right=right)
    bins = _array(bins)
    if aval(bins).ndim != 1:
        raise ValueError("digitize: bins must be 1-D")
    n = aval(bins).shape[0]
    if n == 0:
        from tracejit.numpy.creation import zeros_like
        return convert(zeros_like(x), dtypes.int64)
    side = "left" if right else "right"
    up = searchsorted(bins, x, side=side)
    down = U.subtract(np.int64(n), searchsorted(rev_p.bind(bins, dimensions=(0,)), x, side=side))
    from tracejit.numpy.misc import where
    from tracejit.numpy.indexing import getitem
    # Monotonic direction is decided at run time when the bins are traced, as jax.numpy.
    return where(U.greater_equal(getitem(bins, -1), getitem(bins, 0)), up, down)


# --------------------------------------------------------------------------- nonzero family

def _fill_values(fill_value, n, fn):
    if fill_value is None:
        return (0,) * n
    if isinstance(fill_value, (tuple, list)):
        if len(fill_value) != n:
            raise ValueError(f"{fn}: fill_value must be a scalar or a tuple of length {n}, got {fill_value!r}")
        return tuple(fill_value)
    return (fill_value,) * n


def _check_size(size, fn):
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"{fn}: size must be a static Python int, got {size!r}") from None
    if size < 0:
        raise ValueError(f"{fn}: size must be non-negative, got {size}")
    return size


def _mask_padding(values, count, fill, size):
    """``values`` where the position is below ``count``, else ``fill``."""
    from tracejit.numpy.misc import where
    valid = U.less(_iota(dtypes.int64, (size,), 0), count)
    if aval(values).ndim > 1:
        from tracejit.numpy.shape import reshape
        valid = reshape(valid, (size,) + (1,) * (aval(values).ndim - 1))
    fill = convert(to_operand(fill), aval(values).dtype)
    return where(valid, values, fill)


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements, one int64 array per axis.

    Under jit the number of results must be static: pass ``size=N``; the
    result is truncated or padded to ``N`` with ``fill_value`` (default 0).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.nonzero(jnp.array([0, 3, 0, 4]), size=3)
    (Array([1, 3, 0]),)
    """
    if concrete(a) and size is None:
        return np.nonzero(a)
    x = _array(a)
    nd = aval(x).ndim
    if nd == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
                         "instead.")
    if size is None:
        raise _data_dependent("nonzero", "the number of nonzero elements",
                              "Pass a static size=N (results are truncated or padded with fill_value), "
                              "e.g. jnp.nonzero(x, size=x.size, fill_value=-1).")
    size = _check_size(size, "nonzero")
    *idx, count = nonzero_p.bind(x, size=size)
    if fill_value is None:
        return tuple(idx)
    fills = _fill_values(fill_value, nd, "nonzero")
    return tuple(_mask_padding(i, count, f, size) for i, f in zip(idx, fills))


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of the flattened array.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.flatnonzero(jnp.array([[0, 1], [1, 0]]))
    Array([1, 2])
    """
    if concrete(a) and size is None:
        return np.flatnonzero(a)
    from tracejit.numpy.shape import ravel
    if size is None:
        raise _data_dependent("flatnonzero", "the number of nonzero elements", "Pass a static size=N.")
    return nonzero(ravel(_array(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements, grouped by element: shape ``(N, a.ndim)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.argwhere(jnp.array([[0, 1], [1, 0]])).tolist()
    [[0, 1], [1, 0]]
    """
    if concrete(a) and size is None:
        return np.argwhere(a)
    if size is None:
        raise _data_dependent("argwhere", "the number of nonzero elements", "Pass a static size=N.")
    from tracejit.numpy.shape import reshape, stack
    x = _array(a)
    if aval(x).ndim == 0:
        keep = nonzero(reshape(x, (1,)), size=size)[0]
        return reshape(keep, (size, 1))[:, :0]
    return stack(nonzero(x, size=size, fill_value=fill_value), axis=1)


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of nonzero values along ``axis`` (int64).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> int(jnp.count_nonzero(jnp.array([0, 2, 3])))
    2
    """
    if eager(a):
        return np.count_nonzero(a, axis=axis, keepdims=keepdims)
    from tracejit.numpy.reductions import sum as sum_
    x = _array(a)
    return sum_(convert(U.not_equal(x, convert(np.asarray(0), aval(x).dtype)), dtypes.int64),
                axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------- unique

def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """Sorted unique elements (``numpy.unique``; NaNs collapse when ``equal_nan``).

    Under jit the number of unique values must be static: pass ``size=N``.
    Results are truncated or padded to ``N``; padded values are ``fill_value``
    (default: the smallest unique value), padded indices repeat the first
    index and padded counts are 0, as in ``jax.numpy``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.unique(jnp.array([3, 1, 3, 2]))
    Array([1, 2, 3])
    >>> jnp.unique(jnp.array([3, 3]), size=3, fill_value=0)
    Array([3, 0, 0])
    """
    flags = dict(return_index=return_index, return_inverse=return_inverse, return_counts=return_counts)
    if concrete(ar) and size is None:
        return np.unique(ar, axis=axis, equal_nan=equal_nan, **flags)
    if size is None:
        raise _data_dependent("unique", "the number of unique values",
                              "Pass a static size=N (results are padded with fill_value), e.g. "
                              "jnp.unique(x, size=x.size, fill_value=0).")
    if axis is not None:
        raise NotImplementedError("unique(axis=...) is not supported on traced arrays; use axis=None")
    size = _check_size(size, "unique")
    if size == 0:
        raise ValueError("unique: size must be at least 1")
    from tracejit.numpy.shape import ravel, reshape
    x = _array(ar)
    shape = aval(x).shape
    outs = unique_p.bind(ravel(x), size=size, equal_nan=equal_nan, **flags)
    values, count, rest = outs[0], outs[1], list(outs[2:])
    if fill_value is not None:
        values = _mask_padding(values, count, fill_value, size)
    if return_inverse:
        i = int(return_index)
        rest[i] = reshape(rest[i], shape)
    return (values, *rest) if rest else values


def unique_values(x, *, size=None, fill_value=None):
    """Array-API ``unique_values``: sorted unique elements.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.unique_values(jnp.array([2, 1, 2]))
    Array([1, 2])
    """
    return unique(x, size=size, fill_value=fill_value)


def unique_counts(x, *, size=None, fill_value=None):
    """Array-API ``unique_counts``: ``(values, counts)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.unique_counts(jnp.array([2, 1, 2]))[1]
    Array([1, 2])
    """
    return unique(x, return_counts=True, size=size, fill_value=fill_value)


def unique_inverse(x, *, size=None, fill_value=None):
    """Array-API ``unique_inverse``: ``(values, inverse_indices)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.unique_inverse(jnp.array([2, 1, 2]))[1]
    Array([1, 0, 1])
    """
    return unique(x, return_inverse=True, size=size, fill_value=fill_value)


def unique_all(x, *, size=None, fill_value=None):
    """Array-API ``unique_all``: ``(values, indices, inverse_indices, counts)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.unique_all(jnp.array([2, 1, 2]))[3]
    Array([1, 2])
    """
    return unique(x, return_index=True, return_inverse=True, return_counts=True, size=size,
                  fill_value=fill_value)


# --------------------------------------------------------------------------- counting

def bincount(x, weights=None, minlength=0, *, length=None):
    """Count occurrences of each value in a non-negative int array.

    Under jit the output length must be static: pass ``length=N``; then, as
    in jax.numpy, negative values count as 0 and values ``>= N`` are dropped.
    Weighted counts are float64, as in NumPy.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.bincount(jnp.array([0, 1, 1, 3]))
    Array([1, 2, 0, 1])
    """
    if concrete(x, weights) and length is None:
        return np.bincount(x, weights=weights, minlength=minlength)
    if length is None:
        raise _data_dependent("bincount", "the output length (max(x) + 1)",
                              "Pass a static length=N (values >= N are dropped), e.g. "
                              "jnp.bincount(x, length=10).")
    length = _check_size(length, "bincount")
    v = _array(x)
    if aval(v).ndim != 1:
        raise ValueError(f"bincount: object too deep for desired array (x must be 1-D, got {aval(v).shape})")
    if not (dtypes.is_integer(aval(v).dtype) or dtypes.is_bool(aval(v).dtype)):
        raise TypeError(f"bincount: cannot cast array data from dtype('{aval(v).dtype.name}') to "
                        "dtype('int64') according to the rule 'safe'")
    if weights is None:
        return bincount_p.bind(v, length=length)
    w = _array(weights)
    if dtypes.is_complex(aval(w).dtype):
        raise TypeError("bincount: weights must be real (NumPy casts them to float64)")
    if aval(w).shape != aval(v).shape:
        raise ValueError("bincount: the weights and list don't have the same length.")
    return bincount_p.bind(v, convert(w, dtypes.float64), length=length)


def _static_edges(a_dtype, bins, range_):
    """Bin edges exactly as NumPy computes them, for static ``bins`` and ``range``."""
    probe = np.zeros((0,), a_dtype)
    return np.histogram_bin_edges(probe, bins=bins, range=range_)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """Bin edges used by :func:`histogram`.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.histogram_bin_edges(jnp.array([0.0, 1.0]), bins=2)
    Array([0. , 0.5, 1. ])
    """
    if eager(a, bins, weights):
        return np.histogram_bin_edges(a, bins=bins, range=range, weights=weights)
    x = _array(a)
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram: bins={bins!r} estimates the bin count from the data; under "
                                  "jit pass an int or an array of edges")
    if not isinstance(bins, (int, np.integer)):
        edges = _array(bins)
        if aval(edges).ndim != 1:
            raise ValueError("histogram: `bins` must be 1d, when an array")
        return edges
    if operator.index(bins) < 1:
        raise ValueError("histogram: `bins` must be positive, when an integer")
    d = aval(x).dtype
    if range is not None or aval(x).size == 0:
        return _static_edges(d, bins, range)
    from tracejit.numpy.creation import linspace
    from tracejit.numpy.misc import where
    from tracejit.numpy.reductions import max as max_, min as min_
    lo, hi = min_(x), max_(x)
    bin_type = np.result_type(d, d) if dtypes.is_inexact(d) else dtypes.float64
    lo, hi = convert(lo, bin_type), convert(hi, bin_type)
    same = U.equal(lo, hi)
    half = np.asarray(0.5, bin_type)[()]
    lo = where(same, U.subtract(lo, half), lo)
    hi = where(same, U.add(hi, half), hi)
    return linspace(lo, hi, operator.index(bins) + 1, dtype=bin_type)


def histogram(a, bins=10, range=None, density=None, weights=None):
    """Histogram of ``a`` (``numpy.histogram``): ``(counts, bin_edges)``.

    Under jit ``bins`` must be an int or an array of edges (string estimators
    need the data); the range defaults to ``(a.min(), a.max())``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.histogram(jnp.array([0.0, 0.2, 1.0]), bins=2)[0]
    Array([2, 1])
    """
    if eager(a, bins, weights):
        return np.histogram(a, bins=bins, range=range, density=density, weights=weights)
    from tracejit.numpy.shape import ravel
    from tracejit.numpy.misc import where
    from tracejit.numpy.indexing import getitem
    x = ravel(_array(a))
    edges = histogram_bin_edges(x, bins, range)
    edges = _array(edges)
    n_edges = aval(edges).shape[0]
    e, v = promote(edges, x)
    idx = searchsorted_p.bind(e, _array(v), side="right")
    # The last bin is closed on the right.
    idx = where(U.equal(v, getitem(e, -1)), np.int64(n_edges - 1), idx)
    if weights is None:
        counts = bincount_p.bind(idx, length=n_edges + 1)
    else:
        w = ravel(_array(weights))
        if aval(w).shape != aval(x).shape:
            raise ValueError("histogram: weights should have the same shape as a.")
        counts = bincount_p.bind(idx, w, length=n_edges + 1)
    counts = getitem(counts, slice(1, -1))
    if density:
        from tracejit.numpy.reductions import sum as sum_
        widths = convert(U.subtract(getitem(edges, slice(1, None)), getitem(edges, slice(None, -1))),
                         dtypes.float64)
        # As NumPy: counts / widths / counts.sum(), the sum in the counts' own dtype.
        return U.true_divide(U.true_divide(counts, widths), sum_(counts)), edges
    return counts, edges
