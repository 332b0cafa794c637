"""Sorting, searching and counting primitives.

Each is a *library step*: the impl rule calls NumPy (``np.argsort``,
``np.searchsorted``, ``np.unique``, ...) and the compiled backend runs it as a
NumPy step. Outputs whose size would depend on the data (``nonzero``,
``unique``) take a static ``size`` and also return the true count, so
``tracejit.numpy`` can mask the padding with a (possibly traced) fill value.
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, def_rules


def _err(name, msg):
    return TypeError(f"{name}: {msg}")


def _nlogn_cost(in_avals, out_avals, **_):
    n = in_avals[0].size
    return {"flops": int(n * max(1.0, math.log2(max(n, 2)))), "transcendentals": 0}


def _linear_cost(in_avals, out_avals, **_):
    return {"flops": sum(a.size for a in in_avals), "transcendentals": 0}


# --------------------------------------------------------------------------- sort

def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise _err("sort", "needs at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        raise _err("sort", f"operands must share a shape, got {[o.shape for o in operands]}")
    if not 0 <= dimension < max(len(shape), 1) or not shape:
        raise _err("sort", f"dimension {dimension} is out of range for shape {shape}")
    if not 1 <= num_keys <= len(operands):
        raise _err("sort", f"num_keys={num_keys} must be between 1 and the number of operands")
    return list(operands)


def sort_permutation(keys, dimension):
    """Stable permutation ordering ``keys`` lexicographically along ``dimension``
    (NumPy order: NaN last)."""
    if len(keys) == 1:
        return np.argsort(keys[0], axis=dimension, kind="stable")
    # lexsort takes its primary key last.
    return np.lexsort(tuple(reversed(keys)), axis=dimension)


def _sort_impl(*operands, dimension, is_stable, num_keys):
    if len(operands) == 1:
        # A stable sort of the values themselves: the elements argsort + take would give (equal
        # values, -0.0 and 0.0 too, keep their order), several times faster.
        return [np.sort(np.asarray(operands[0]), axis=dimension, kind="stable")]
    perm = sort_permutation(operands[:num_keys], dimension)
    return [np.take_along_axis(np.asarray(o), perm, axis=dimension) for o in operands]


sort_p = def_rules(Primitive("sort", multiple_results=True), abstract_eval=_sort_abstract_eval,
                   impl=_sort_impl, cost=_nlogn_cost)


# --------------------------------------------------------------------------- searchsorted

def _searchsorted_abstract_eval(a, v, *, side):
    if a.ndim != 1:
        raise _err("searchsorted", f"the sorted array must be 1-D, got shape {a.shape}")
    if a.dtype != v.dtype:
        raise _err("searchsorted", f"operands must share a dtype, got {a.dtype.name} and {v.dtype.name}")
    if side not in ("left", "right"):
        raise _err("searchsorted", f"side must be 'left' or 'right', got {side!r}")
    return [ShapedArray(v.shape, dtypes.int64)]


searchsorted_p = def_rules(
    Primitive("searchsorted"), abstract_eval=_searchsorted_abstract_eval,
    impl=lambda a, v, *, side: [np.asarray(np.searchsorted(a, v, side=side), dtypes.int64)],
    cost=_nlogn_cost)


# --------------------------------------------------------------------------- nonzero

def _nonzero_abstract_eval(x, *, size):
    if size < 0:
        raise _err("nonzero", f"size must be non-negative, got {size}")
    nd = max(x.ndim, 1)
    return [ShapedArray((size,), dtypes.int64) for _ in range(nd)] + [ShapedArray((), dtypes.int64)]


def _nonzero_impl(x, *, size):
    idx = np.nonzero(np.atleast_1d(x))
    out = []
    for ix in idx:
        padded = np.zeros(size, dtypes.int64)
        k = min(size, ix.size)
        padded[:k] = ix[:k]
        out.append(padded)
    return out + [np.asarray(idx[0].size, dtypes.int64)]


nonzero_p = def_rules(Primitive("nonzero", multiple_results=True), abstract_eval=_nonzero_abstract_eval,
                      impl=_nonzero_impl, cost=_linear_cost)
"""``nonzero[size]`` -> (index per axis padded with 0 to ``size``, count of nonzeros)."""


# --------------------------------------------------------------------------- unique

def _unique_abstract_eval(x, *, size, return_index, return_inverse, return_counts, equal_nan):
    if x.ndim != 1:
        raise _err("unique", f"operand must be 1-D (flatten first), got shape {x.shape}")
    if size < 1:
        raise _err("unique", f"size must be at least 1, got {size}")
    outs = [ShapedArray((size,), x.dtype), ShapedArray((), dtypes.int64)]
    if return_index:
        outs.append(ShapedArray((size,), dtypes.int64))
    if return_inverse:
        outs.append(ShapedArray(x.shape, dtypes.int64))
    if return_counts:
        outs.append(ShapedArray((size,), dtypes.int64))
    return outs


def _pad_to(a, size, fill):
    out = np.full((size,), fill, dtype=a.dtype)
    k = min(size, a.size)
    out[:k] = a[:k]
    return out


def _unique_impl(x, *, size, return_index, return_inverse, return_counts, equal_nan):
    res = np.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=equal_nan)
    vals, index, inverse, counts = res
    # As jax.numpy: padding repeats the first (smallest) unique value and its index;
    # counts are padded with 0. An empty input pads with zeros.
    first_val = vals[0] if vals.size else np.zeros((), x.dtype)
    first_idx = index[0] if index.size else 0
    outs = [_pad_to(vals, size, first_val), np.asarray(vals.size, dtypes.int64)]
    if return_index:
        outs.append(_pad_to(index.astype(dtypes.int64), size, first_idx))
    if return_inverse:
        outs.append(np.asarray(inverse, dtypes.int64).reshape(x.shape))
    if return_counts:
        outs.append(_pad_to(counts.astype(dtypes.int64), size, 0))
    return outs


unique_p = def_rules(Primitive("unique", multiple_results=True), abstract_eval=_unique_abstract_eval,
                     impl=_unique_impl, cost=_nlogn_cost)
"""``unique[size, ...]`` on a 1-D operand -> (values padded to ``size``, number of
unique values, [first indices], [inverse], [counts])."""


# --------------------------------------------------------------------------- bincount

def _bincount_abstract_eval(x, *weights, length):
    if x.ndim != 1 or not dtypes.is_integer(x.dtype) and not dtypes.is_bool(x.dtype):
        raise _err("bincount", f"operand must be a 1-D integer array, got {x.str_short()}")
    if length < 0:
        raise _err("bincount", f"length must be non-negative, got {length}")
    if weights:
        (w,) = weights
        if w.shape != x.shape:
            raise _err("bincount", f"weights shape {w.shape} must equal the operand shape {x.shape}")
        return [ShapedArray((length,), w.dtype)]
    return [ShapedArray((length,), dtypes.int64)]


def bincount_impl(x, *weights, length):
    """Counts (or weight sums) of each value in ``[0, length)``, as jax.numpy:
    negative values count as 0, values ``>= length`` are dropped."""
    x = np.clip(np.asarray(x, dtypes.int64), 0, None)
    keep = x < length
    if not weights:
        return [np.bincount(x[keep], minlength=length).astype(dtypes.int64)[:length]]
    w = weights[0]
    # Accumulate in double precision and round once, as numpy.histogram does.
    acc = np.zeros((length,), np.complex128 if dtypes.is_complex(w.dtype) else np.float64)
    np.add.at(acc, x[keep], w[keep])
    return [acc.astype(w.dtype)]


bincount_p = def_rules(Primitive("bincount"), abstract_eval=_bincount_abstract_eval, impl=bincount_impl,
                       cost=_linear_cost)
