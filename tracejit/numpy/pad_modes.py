"""``pad`` on traced arrays for the modes whose padding is computed from values: the statistic
modes (mean, median, maximum, minimum, with ``stat_length``), linear_ramp (``end_values``, which
may be traced) and odd reflection (reflect/symmetric with ``reflect_type='odd'``); plus the
argument checks ``numpy.pad`` makes for every mode.

Each mode follows NumPy's ``numpy/lib/_arraypad_impl.py`` step by step. Axes are padded in order,
so an axis's statistics, edges and reflections see the values already padded along earlier axes
(and the original extent of later ones). The same operations run in the same order and dtypes, so
integer results agree bitwise: means and medians are computed in float64, rounded half to even and
cast; integer ramps are NumPy's ``linspace`` (float64, then floor); ``2 * edge - x`` wraps.
Everything is slices, reductions, broadcasts and concatenations, so ``grad`` and ``vmap`` apply.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.structural import concatenate_p, rev_p, slice_p
from tracejit.numpy._util import aval, convert, is_tracer, to_operand
from tracejit.numpy import reductions as R
from tracejit.numpy import ufuncs as U
from tracejit.numpy.misc import round as _round, where
from tracejit.numpy.shape import broadcast_to, ravel, reshape
from tracejit.numpy.statistics import median as _median

__all__ = ["check_kwargs", "check_empty_axes", "pad_by_value"]

# numpy.pad's keyword arguments per mode.
_ALLOWED_KWARGS = {
    "empty": (), "edge": (), "wrap": (), "constant": ("constant_values",), "linear_ramp": ("end_values",),
    "maximum": ("stat_length",), "mean": ("stat_length",), "median": ("stat_length",),
    "minimum": ("stat_length",), "reflect": ("reflect_type",), "symmetric": ("reflect_type",),
}
STAT_MODES = ("mean", "median", "maximum", "minimum")


def check_kwargs(mode, kwargs):
    """Raise NumPy's ValueError for an unknown mode or a keyword the mode does not take."""
    try:
        unsupported = set(kwargs) - set(_ALLOWED_KWARGS[mode])
    except KeyError:
        raise ValueError(f"mode '{mode}' is not supported") from None
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")


def check_empty_axes(shape, widths):
    """Only 'constant' and 'empty' may extend an empty axis (NumPy's ValueError)."""
    for ax, (n, pair) in enumerate(zip(shape, widths)):
        if n == 0 and any(pair):
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")


def pad_by_value(x, widths, mode, kwargs):
    """Pad a non-empty ``x`` by ``widths`` ((lo, hi) per axis) in a statistic mode, 'linear_ramp',
    or 'reflect'/'symmetric' with ``reflect_type='odd'``."""
    if mode in STAT_MODES:
        return _pad_stats(x, widths, mode, kwargs.get("stat_length"))
    if mode == "linear_ramp":
        return _pad_linear_ramp(x, widths, kwargs.get("end_values", 0))
    assert mode in ("reflect", "symmetric") and kwargs.get("reflect_type") == "odd", mode
    return _pad_reflect_odd(x, widths, include_edge=mode == "symmetric")


# --------------------------------------------------------------------------- helpers

def _slice(x, ax, start, stop):
    shape = aval(x).shape
    if (start, stop) == (0, shape[ax]):
        return x
    lo, hi = [0] * len(shape), list(shape)
    lo[ax], hi[ax] = start, stop
    return slice_p.bind(x, start_indices=tuple(lo), limit_indices=tuple(hi), strides=(1,) * len(shape))


def _concat(parts, ax):
    parts = [p for p in parts if aval(p).shape[ax]]
    return parts[0] if len(parts) == 1 else concatenate_p.bind(*parts, dimension=ax)


def _repeat(v, ax, width, shape):
    """``v`` (length 1 along ``ax``) broadcast to ``width`` along ``ax``."""
    target = list(shape)
    target[ax] = width
    return broadcast_to(v, tuple(target))


def _static_pairs(x, nd, as_index=False):
    """NumPy's ``_as_pairs`` for a static value: ``nd`` pairs, with the same element objects NumPy
    iterates over (NumPy scalars when one or two values are given, Python scalars otherwise; the
    difference decides a ramp's computation dtype)."""
    if x is None:
        return ((None, None),) * nd
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ValueError("index can't contain negative values")
            return ((x[0], x[0]),) * nd
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return ((x[0], x[1]),) * nd
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (nd, 2)).tolist()


def _has_tracer(v):
    return is_tracer(v) or (isinstance(v, (list, tuple)) and any(_has_tracer(e) for e in v))


def _traced_pairs(v, nd):
    """``_static_pairs`` for a traced value: (value, NumPy's stand-in for its type) per side."""
    shape, d = aval(v).shape, aval(v).dtype
    strong, weak = np.zeros((), d)[()], np.zeros((), d)[()].item()
    size = int(np.prod(shape))
    if len(shape) < 3 and size == 1:
        s = reshape(v, ())
        return (((s, strong), (s, strong)),) * nd
    if len(shape) < 3 and size == 2 and shape != (2, 1):
        flat = ravel(v)
        a, b = reshape(_slice(flat, 0, 0, 1), ()), reshape(_slice(flat, 0, 1, 2), ())
        return (((a, strong), (b, strong)),) * nd
    if len(shape) > 2 or any(s not in (1, t) for s, t in zip(shape[::-1], (2, nd))):
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {shape} and requested shape ({nd},2)")
    full = broadcast_to(v, (nd, 2))
    return tuple(tuple((reshape(_slice(_slice(full, 0, i, i + 1), 1, j, j + 1), ()), weak) for j in (0, 1))
                 for i in range(nd))


# --------------------------------------------------------------------------- statistic modes

def _extremum(chunk, ax, is_max):
    if not dtypes.is_complex(aval(chunk).dtype):
        return (R.max if is_max else R.min)(chunk, axis=ax, keepdims=True)
    # Complex numbers order lexicographically (NumPy's maximum/minimum ufuncs): reduce pairwise.
    op = U.maximum if is_max else U.minimum
    while aval(chunk).shape[ax] > 1:
        n = aval(chunk).shape[ax]
        h = n // 2
        merged = op(_slice(chunk, ax, 0, h), _slice(chunk, ax, h, 2 * h))
        chunk = _concat([merged, _slice(chunk, ax, 2 * h, n)], ax)
    return chunk


def _statistic(chunk, ax, mode, d):
    if mode == "mean":
        s = R.mean(chunk, axis=ax, keepdims=True)
    elif mode == "median":
        s = _median(chunk, axis=ax, keepdims=True)
    else:
        s = _extremum(chunk, ax, mode == "maximum")
    if dtypes.is_integer(d):
        s = _round(s)          # NumPy rounds the float statistic in place, then casts.
    return convert(s, d)


def _pad_stats(x, widths, mode, stat_length):
    if _has_tracer(stat_length):
        raise TypeError("pad: stat_length must be static under jit (Python ints), got a traced value")
    lengths = _static_pairs(stat_length, len(widths), as_index=True)
    d = aval(x).dtype
    for ax, ((lo, hi), (llen, rlen)) in enumerate(zip(widths, lengths)):
        n = aval(x).shape[ax]
        llen = n if llen is None or n < llen else int(llen)
        rlen = n if rlen is None or n < rlen else int(rlen)
        if (llen == 0 or rlen == 0) and mode in ("maximum", "minimum"):
            raise ValueError("stat_length of 0 yields no value for padding")
        if lo == hi == 0:
            continue
        shape = aval(x).shape
        left = _statistic(_slice(x, ax, 0, llen), ax, mode, d) if lo else None
        if hi and lo and llen == rlen == n:
            right = left
        else:
            right = _statistic(_slice(x, ax, n - rlen, n), ax, mode, d) if hi else None
        parts = ([_repeat(left, ax, lo, shape)] if lo else []) + [x] + \
                ([_repeat(right, ax, hi, shape)] if hi else [])
        x = _concat(parts, ax)
    return x


# --------------------------------------------------------------------------- linear_ramp

def _ramp(end, end_like, edge, width, ax, d):
    """``numpy.linspace(end, edge, width, endpoint=False, dtype=d, axis=ax)``, as NumPy computes it."""
    # NumPy's computation dtype: the inexact result type of the end value and the edge.
    dt = np.linspace(end_like, np.zeros((1,), d), num=1, endpoint=False).dtype
    start, stop = convert(end, dt), convert(edge, dt)
    delta = U.subtract(stop, start)
    div = np.asarray(width, dt)[()]
    step = U.true_divide(delta, div)
    shape = [1] * aval(edge).ndim
    shape[ax] = width
    y = np.arange(width, dtype=dt).reshape(shape)
    # NumPy divides first when any step of the whole side is 0 (gh-5437); a traced test here.
    any_zero = R.any(U.equal(step, np.asarray(0, dt)[()]))
    y = where(any_zero, U.multiply(U.true_divide(y, div), delta), U.multiply(y, step))
    y = U.add(y, start)
    if dtypes.is_integer(d):
        y = U.floor(y)
    return convert(y, d)


def _pad_linear_ramp(x, widths, end_values):
    nd = len(widths)
    if isinstance(end_values, (list, tuple)) and _has_tracer(end_values):
        end_values = to_operand(end_values)
    if is_tracer(end_values):
        pairs = _traced_pairs(end_values, nd)
    else:
        pairs = tuple(tuple((v, v) for v in pair) for pair in _static_pairs(end_values, nd))
    d = aval(x).dtype
    for ax, ((lo, hi), ends) in enumerate(zip(widths, pairs)):
        if lo == hi == 0:
            continue
        n = aval(x).shape[ax]
        parts = [x]
        if lo:
            (end, like) = ends[0]
            parts.insert(0, _ramp(end, like, _slice(x, ax, 0, 1), lo, ax, d))
        if hi:
            (end, like) = ends[1]
            parts.append(rev_p.bind(_ramp(end, like, _slice(x, ax, n - 1, n), hi, ax, d), dimensions=(ax,)))
        x = _concat(parts, ax)
    return x


# --------------------------------------------------------------------------- odd reflection

def _odd(edge, chunk, d):
    """``2 * edge - chunk`` in NumPy's dtype, cast back to ``d`` (bools compute in int64)."""
    if dtypes.is_bool(d):
        e, c = convert(edge, dtypes.int64), convert(chunk, dtypes.int64)
        return U.not_equal(U.subtract(U.multiply(2, e), c), np.int64(0))
    return U.subtract(U.multiply(2, edge), chunk)


def _pad_reflect_odd(x, widths, include_edge):
    d = aval(x).dtype
    for ax, (left, right) in enumerate(widths):
        if left == right == 0:
            continue
        period = aval(x).shape[ax]
        if period == 1:
            # NumPy's legacy rule: a singleton axis extends with its edge value.
            x = _concat([_repeat(x, ax, left, aval(x).shape), x, _repeat(x, ax, right, aval(x).shape)], ax)
            continue
        off = 1 if include_edge else 0
        while left > 0 or right > 0:
            # One round of NumPy's _set_reflect_both: chunks of whole periods of the valid area.
            cur = aval(x).shape[ax]
            if include_edge:
                old = cur // period * period
            else:
                old = (cur - 1) // (period - 1) * (period - 1)
            parts = [x]
            if left > 0:
                c = min(old, left)
                chunk = rev_p.bind(_slice(x, ax, 1 - off, c + 1 - off), dimensions=(ax,))
                parts.insert(0, _odd(_slice(x, ax, 0, 1), chunk, d))
                left -= c
            if right > 0:
                c = min(old, right)
                chunk = rev_p.bind(_slice(x, ax, cur - 1 + off - c, cur - 1 + off), dimensions=(ax,))
                parts.append(_odd(_slice(x, ax, cur - 1, cur), chunk, d))
                right -= c
            x = _concat(parts, ax)
    return x
