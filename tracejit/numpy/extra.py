"""Breadth of the NumPy API built from structural primitives: roll, rot90,
triu/tril, diag/diagonal/trace, repeat, tile, pad, split, meshgrid,
mgrid/ogrid, diff, cross, logsumexp.

Everything here has static output shapes, so it is written with slices,
reversals, broadcasts and concatenations; gathers by *static* index lists
(pad modes, repeat with per-element counts) become runs of slices.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.elementwise import iota_p
from tracejit.ops.structural import concatenate_p, pad_p, rev_p, slice_p
from tracejit.numpy._util import aval, canonicalize_axis, convert, eager, is_tracer, promote, to_operand
from tracejit.numpy import pad_modes, ufuncs as U
from tracejit.numpy.shape import broadcast_to, moveaxis, ravel, reshape, transpose
from tracejit.transforms.api_ad import stop_gradient

__all__ = ["roll", "rot90", "triu", "tril", "diag", "diagflat", "diagonal", "trace", "repeat", "tile",
           "pad", "split", "array_split", "hsplit", "vsplit", "dsplit", "meshgrid", "mgrid", "ogrid",
           "diff", "ediff1d", "append", "cross", "logsumexp", "take_static"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _static_int(v, fn, what):
    if is_tracer(v):
        raise TypeError(f"{fn}: {what} must be static under jit (a Python int), got a traced value; "
                        "mark it static with jit(..., static_argnums=...)")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{fn}: {what} must be an integer, got {v!r}") from None


def _static_ints(v, fn, what):
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(_static_int(e, fn, what) for e in np.asarray(v).ravel().tolist()) \
            if isinstance(v, np.ndarray) else tuple(_static_int(e, fn, what) for e in v)
    return (_static_int(v, fn, what),)


def _slice_axis(x, axis, start, stop, step=1):
    shape = aval(x).shape
    if (start, stop, step) == (0, shape[axis], 1):
        return x
    lo, hi, st = [0] * len(shape), list(shape), [1] * len(shape)
    lo[axis], hi[axis], st[axis] = start, stop, step
    return slice_p.bind(x, start_indices=tuple(lo), limit_indices=tuple(hi), strides=tuple(st))


def _concat(parts, axis):
    return parts[0] if len(parts) == 1 else concatenate_p.bind(*parts, dimension=axis)


def take_static(x, indices, axis):
    """``x.take(indices, axis)`` for a static list of in-range indices.

    Consecutive runs (step +1, -1 or 0) become one slice each (reversed or
    broadcast as needed), so no gather is emitted.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.take_static(jnp.arange(4), [0, 0, 1, 2, 3, 3], 0)
    Array([0, 0, 1, 2, 3, 3])
    """
    x = _array(x)
    idx = [int(i) for i in indices]
    if eager(x):
        return np.take(x, idx, axis=axis)
    shape = aval(x).shape
    if not idx:
        return _slice_axis(x, axis, 0, 0)
    runs, start = [], 0
    for i in range(1, len(idx) + 1):
        if i < len(idx):
            step = idx[i] - idx[i - 1]
            run_step = idx[start + 1] - idx[start] if i - start >= 2 else step
            if step in (-1, 0, 1) and step == run_step:
                continue
        runs.append(idx[start:i])
        start = i
    parts = []
    for run in runs:
        lo, hi = min(run), max(run)
        piece = _slice_axis(x, axis, lo, hi + 1)
        if len(run) > 1 and run[0] == run[1]:
            target = list(aval(piece).shape)
            target[axis] = len(run)
            piece = broadcast_to(piece, tuple(target))
        elif len(run) > 1 and run[1] < run[0]:
            piece = rev_p.bind(piece, dimensions=(axis,))
        parts.append(piece)
    out = _concat(parts, axis)
    assert aval(out).shape[axis] == len(idx) and aval(out).shape[:axis] == shape[:axis]
    return out


# --------------------------------------------------------------------------- roll / rot90

def roll(a, shift, axis=None):
    """Roll elements along ``axis`` (flattened when None); shifts are static.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.roll(jnp.arange(4), 1)
    Array([3, 0, 1, 2])
    """
    if eager(a):
        return np.roll(a, shift, axis)
    x = _array(a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), aval(x).shape)
    shifts, axes = _static_ints(shift, "roll", "shift"), _static_ints(axis, "roll", "axis")
    shifts, axes = np.broadcast_arrays(np.asarray(shifts), np.asarray(axes))
    nd = aval(x).ndim
    total = {}
    for s, ax in zip(shifts.tolist(), axes.tolist()):
        ax = canonicalize_axis(ax, nd)
        total[ax] = total.get(ax, 0) + s
    for ax, s in total.items():
        n = aval(x).shape[ax]
        if n == 0 or s % n == 0:
            continue
        s %= n
        x = _concat([_slice_axis(x, ax, n - s, n), _slice_axis(x, ax, 0, n - s)], ax)
    return x


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.rot90(jnp.array([[1, 2], [3, 4]])).tolist()
    [[2, 4], [1, 3]]
    """
    if eager(m):
        return np.rot90(m, k, axes)
    from tracejit.numpy.shape import flip
    x = _array(m)
    nd = aval(x).ndim
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = canonicalize_axis(axes[0], nd), canonicalize_axis(axes[1], nd)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = _static_int(k, "rot90", "k") % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(x, a1), perm) if k == 1 else flip(transpose(x, perm), a1)


# --------------------------------------------------------------------------- triangles and diagonals

def _tri_mask(n, m, k):
    """True at and below diagonal ``k`` (``j <= i + k``)."""
    rows = iota_p.bind(dtype=dtypes.int64, shape=(n, m), dimension=0)
    cols = iota_p.bind(dtype=dtypes.int64, shape=(n, m), dimension=1)
    return U.greater_equal(U.add(rows, np.int64(k)), cols)


def _triangle(name, m, k, lower):
    if eager(m):
        return getattr(np, name)(m, k)
    from tracejit.numpy.misc import where
    x = _array(m)
    k = _static_int(k, name, "k")
    if aval(x).ndim < 2:
        if aval(x).ndim == 0:
            raise ValueError(f"{name}: input must be at least 1-D")
        n = aval(x).shape[0]
        x = broadcast_to(x, (n, n))
    n, mm = aval(x).shape[-2:]
    # triu keeps j >= i + k, the complement of tril's mask for k - 1.
    keep = _tri_mask(n, mm, k) if lower else U.logical_not(_tri_mask(n, mm, k - 1))
    return where(keep, x, convert(np.asarray(0), aval(x).dtype))


def tril(m, k=0):
    """Lower triangle of the last two axes (elements above diagonal ``k`` zeroed).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.tril(jnp.ones((2, 2), int)).tolist()
    [[1, 0], [1, 1]]
    """
    return _triangle("tril", m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (elements below diagonal ``k`` zeroed).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.triu(jnp.ones((2, 2), int)).tolist()
    [[1, 1], [0, 1]]
    """
    return _triangle("triu", m, k, False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal of the ``(axis1, axis2)`` planes, appended as the last axis.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.diagonal(jnp.arange(9).reshape(3, 3), 1)
    Array([1, 5])
    """
    if eager(a):
        return np.diagonal(a, offset, axis1, axis2)
    x = _array(a)
    nd = aval(x).ndim
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = canonicalize_axis(axis1, nd), canonicalize_axis(axis2, nd)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = _static_int(offset, "diagonal", "offset")
    x = moveaxis(x, (a1, a2), (-2, -1))
    *batch, n, m = aval(x).shape
    k = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    # In the flattened (n*m) plane, diagonal elements are m+1 apart.
    start = offset if offset >= 0 else -offset * m
    flat = reshape(x, tuple(batch) + (n * m,))
    if k == 0:
        return _slice_axis(flat, len(batch), 0, 0)
    return _slice_axis(flat, len(batch), start, start + (k - 1) * (m + 1) + 1, m + 1)


def diag(v, k=0):
    """Extract the ``k``-th diagonal of a 2-D array, or build a 2-D array from a 1-D one.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.diag(jnp.array([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    if eager(v):
        return np.diag(v, k)
    x = _array(v)
    k = _static_int(k, "diag", "k")
    nd = aval(x).ndim
    if nd == 2:
        return diagonal(x, k)
    if nd != 1:
        raise ValueError("Input must be 1- or 2-d.")
    from tracejit.numpy.misc import where
    n = aval(x).shape[0] + abs(k)
    zero = convert(np.asarray(0), aval(x).dtype)
    col = pad_p.bind(x, zero, padding_config=((0, abs(k), 0),))
    # out[i, i + k] = v[i] (k >= 0) reads v by row; out[j - k, j] = v[j] (k < 0) reads it by column.
    full = broadcast_to(reshape(col, (n, 1)), (n, n)) if k >= 0 else broadcast_to(col, (n, n))
    rows = iota_p.bind(dtype=dtypes.int64, shape=(n, n), dimension=0)
    cols = iota_p.bind(dtype=dtypes.int64, shape=(n, n), dimension=1)
    return where(U.equal(U.add(rows, np.int64(k)), cols), full, zero)


def diagflat(v, k=0):
    """2-D array with the flattened input on the ``k``-th diagonal.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.diagflat(jnp.array([[1, 2]])).shape
    (2, 2)
    """
    if eager(v):
        return np.diagflat(v, k)
    return diag(ravel(_array(v)), k)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal (``numpy.trace``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> int(jnp.trace(jnp.eye(3)))
    3
    """
    if eager(a):
        return np.trace(a, offset, axis1, axis2, dtype=dtype)
    from tracejit.numpy.reductions import sum as sum_
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


# --------------------------------------------------------------------------- repeat / tile

def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat elements; ``repeats`` is a static int or a static sequence per element.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.repeat(jnp.array([1, 2]), 2)
    Array([1, 1, 2, 2])
    """
    if eager(a, repeats):
        out = np.repeat(a, repeats, axis)
        return out
    x = _array(a)
    if is_tracer(repeats):
        raise TypeError("repeat: repeats must be static under jit (the output size depends on them); pass "
                        "a Python int or a concrete sequence, or mark it static with static_argnums")
    if axis is None:
        x, axis = ravel(x), 0
    elif aval(x).ndim == 0:
        x = ravel(x)            # as NumPy: a 0-d operand repeats as a 1-element vector
    ax = canonicalize_axis(axis, aval(x).ndim)
    shape = aval(x).shape
    reps = np.asarray(repeats)
    if reps.ndim == 0 or reps.size == 1:
        r = _static_int(reps.reshape(()).item(), "repeat", "repeats")
        if r < 0:
            raise ValueError("repeat: negative dimensions are not allowed")
        expanded = reshape(x, shape[:ax + 1] + (1,) + shape[ax + 1:])
        target = shape[:ax + 1] + (r,) + shape[ax + 1:]
        out = reshape(broadcast_to(expanded, target), shape[:ax] + (shape[ax] * r,) + shape[ax + 1:])
    else:
        if reps.ndim != 1 or reps.size != shape[ax]:
            raise ValueError(f"repeat: operands could not be broadcast together with shape ({shape[ax]},) "
                             f"{reps.shape}")
        if (reps < 0).any():
            raise ValueError("repeat: negative dimensions are not allowed")
        out = take_static(x, np.repeat(np.arange(shape[ax]), reps).tolist(), ax)
    if total_repeat_length is not None and aval(out).shape[ax] != total_repeat_length:
        raise ValueError(f"repeat: total_repeat_length={total_repeat_length} does not match the "
                         f"result length {aval(out).shape[ax]}")
    return out


def tile(A, reps):
    """Repeat the whole array ``reps`` times along each axis (``numpy.tile``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.tile(jnp.array([1, 2]), 2)
    Array([1, 2, 1, 2])
    """
    if eager(A):
        return np.tile(A, reps)
    x = _array(A)
    reps = _static_ints(reps, "tile", "reps")
    shape = aval(x).shape
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, tuple(d for s in shape for d in (1, s)))
    x = broadcast_to(x, tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    return reshape(x, tuple(r * s for r, s in zip(reps, shape)))


# --------------------------------------------------------------------------- pad

_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pad_widths(pad_width, nd):
    pw = np.asarray(pad_width)
    if pw.dtype.kind not in "iu" and not (pw.dtype.kind == "f" and np.all(pw == np.round(pw))):
        raise TypeError("pad: `pad_width` must be of integral type.")
    pw = np.broadcast_to(pw.astype(np.int64), (nd, 2))
    if (pw < 0).any():
        raise ValueError("pad: index can't contain negative values")
    return [tuple(int(v) for v in row) for row in pw]


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (``numpy.pad``), traced arrays included, in every NumPy mode.

    Modes: 'constant' (``constant_values``), 'edge', 'linear_ramp' (``end_values``), 'maximum',
    'mean', 'median', 'minimum' (``stat_length``), 'reflect' and 'symmetric' (``reflect_type``
    'even' or 'odd'), 'wrap', and 'empty' (its padding is zeros on traced arrays; NumPy leaves it
    undefined). Axes are padded in order, as NumPy does, so statistics and ramps along later axes
    see the values padded along earlier ones. Pad widths and ``stat_length`` are static; the array,
    ``constant_values`` (a scalar, a pair, or a pair per axis) and ``end_values`` may be traced.
    A callable ``mode`` runs only on concrete arrays.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.pad(jnp.array([1, 2, 3]), 2, mode="reflect")
    Array([3, 2, 1, 2, 3, 2, 1])
    >>> jnp.pad(jnp.array([1.0, 2.0, 6.0]), (1, 2), mode="mean", stat_length=2)
    Array([1.5, 1. , 2. , 6. , 4. , 4. ])
    """
    if eager(array, *kwargs.values()):
        return np.pad(array, pad_width, mode=mode, **kwargs)
    x = _array(array)
    nd = aval(x).ndim
    widths = _pad_widths(pad_width, nd)
    if callable(mode):
        raise NotImplementedError("pad with a callable mode is not supported on traced arrays")
    pad_modes.check_kwargs(mode, kwargs)
    if mode in ("constant", "empty"):
        return _pad_constant(x, widths, kwargs.get("constant_values", 0))
    pad_modes.check_empty_axes(aval(x).shape, widths)
    if aval(x).size == 0:
        return _pad_constant(x, widths, 0)      # the result is empty too
    if mode in _INDEX_MODES and kwargs.get("reflect_type") != "odd":
        for ax, (lo, hi) in enumerate(widths):
            if lo or hi:
                # NumPy itself says which source element each output position copies.
                src = np.pad(np.arange(aval(x).shape[ax]), (lo, hi), mode=mode, **kwargs)
                x = take_static(x, src.tolist(), ax)
        return x
    return pad_modes.pad_by_value(x, widths, mode, kwargs)


def _pad_constant(x, widths, constant_values):
    d = aval(x).dtype
    cv = constant_values if is_tracer(constant_values) else np.asarray(constant_values)
    if aval(cv).ndim > 0:
        # NumPy's pairs rule: one value, one (before, after) pair, or a pair per axis. A traced
        # array is broadcast the same way and each side's value read from it as a traced scalar.
        pairs = broadcast_to(cv, (len(widths), 2))
        # Different values per side: pad one axis side at a time, in axis order, so a later axis's
        # values fill the corners, as in NumPy.
        for ax, (lo, hi) in enumerate(widths):
            for side, w in ((0, lo), (1, hi)):
                if w:
                    cfg = [(0, 0, 0)] * len(widths)
                    cfg[ax] = (w, 0, 0) if side == 0 else (0, w, 0)
                    x = pad_p.bind(x, convert(pairs[ax, side], d), padding_config=tuple(cfg))
        return x
    if all(w == (0, 0) for w in widths):
        return x
    return pad_p.bind(x, convert(cv, d), padding_config=tuple((lo, hi, 0) for lo, hi in widths))


# --------------------------------------------------------------------------- split

def _split(name, ary, indices_or_sections, axis, strict):
    if eager(ary):
        return getattr(np, name)(ary, indices_or_sections, axis)
    x = _array(ary)
    ax = canonicalize_axis(axis, aval(x).ndim)
    n = aval(x).shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if strict and n % sections:
            raise ValueError("array split does not result in an equal division")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        cuts = _static_ints(indices_or_sections, name, "indices")
        bounds = [0] + list(cuts) + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = _clip_bound(lo, n), _clip_bound(hi, n)
        out.append(_slice_axis(x, ax, lo, max(lo, hi)))
    return out


def _clip_bound(i, n):
    if i < 0:
        i += n
    return min(max(i, 0), n)


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections or at static indices (``numpy.split``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> [s.tolist() for s in jnp.split(jnp.arange(4), 2)]
    [[0, 1], [2, 3]]
    """
    return _split("split", ary, indices_or_sections, axis, strict=True)


def array_split(ary, indices_or_sections, axis=0):
    """Like :func:`split`, but allows unequal sections.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> [s.tolist() for s in jnp.array_split(jnp.arange(3), 2)]
    [[0, 1], [2]]
    """
    return _split("array_split", ary, indices_or_sections, axis, strict=False)


def hsplit(ary, indices_or_sections):
    """Split horizontally (along axis 1, or 0 for 1-D).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> len(jnp.hsplit(jnp.ones((2, 4)), 2))
    2
    """
    if eager(ary):
        return np.hsplit(ary, indices_or_sections)
    return split(ary, indices_or_sections, axis=1 if aval(_array(ary)).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split vertically (along axis 0).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> len(jnp.vsplit(jnp.ones((4, 2)), 2))
    2
    """
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """Split along the third axis.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> len(jnp.dsplit(jnp.ones((1, 1, 4)), 2))
    2
    """
    return split(ary, indices_or_sections, axis=2)


# --------------------------------------------------------------------------- grids

def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors (``numpy.meshgrid``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> [g.shape for g in jnp.meshgrid(jnp.arange(2), jnp.arange(3))]
    [(3, 2), (3, 2)]
    """
    if eager(*xi):
        return list(np.meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing))
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    vecs = [ravel(_array(x)) for x in xi]
    nd = len(vecs)
    shapes = [[1] * nd for _ in vecs]
    for i, v in enumerate(vecs):
        shapes[i][i] = aval(v).shape[0]
    if indexing == "xy" and nd > 1:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    out = [reshape(v, tuple(s)) for v, s in zip(vecs, shapes)]
    if sparse:
        return out
    full = tuple(max(s[i] for s in shapes) for i in range(nd))
    return [broadcast_to(o, full) for o in out]


class _Grid:
    """``mgrid`` / ``ogrid``: index with slices to get dense / open grids."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        if isinstance(key, slice):
            return (np.ogrid if self.sparse else np.mgrid)[key]
        if any(is_tracer(getattr(k, a)) for k in key for a in ("start", "stop", "step")):
            raise TypeError("mgrid/ogrid bounds must be static under jit")
        return (np.ogrid if self.sparse else np.mgrid)[key]

    def __repr__(self):
        return "ogrid" if self.sparse else "mgrid"


mgrid = _Grid(False)
"""Dense multi-dimensional grid (``numpy.mgrid``); bounds are static, so the
result is a concrete array (a constant under jit)."""
ogrid = _Grid(True)
"""Open multi-dimensional grid (``numpy.ogrid``)."""


# --------------------------------------------------------------------------- differences

def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``n``-th discrete difference along ``axis`` (bool uses ``!=``, as NumPy).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.diff(jnp.array([1, 4, 9]))
    Array([3, 5])
    """
    if eager(a, prepend, append):
        kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
        return np.diff(a, n, axis, **kw)
    n = _static_int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    x = _array(a)
    nd = aval(x).ndim
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = canonicalize_axis(axis, nd)
    parts = []
    for extra, first in ((prepend, True), (append, False)):
        if extra is None:
            continue
        e = _array(extra)
        if aval(e).ndim == 0:
            shape = list(aval(x).shape)
            shape[ax] = 1
            e = broadcast_to(e, tuple(shape))
        parts.append((first, e))
    if parts:
        from tracejit.numpy.shape import concatenate
        seq = [e for f, e in parts if f] + [x] + [e for f, e in parts if not f]
        x = concatenate(seq, axis=ax)
    for _ in range(n):
        m = aval(x).shape[ax]
        if m == 0:
            break
        hi, lo = _slice_axis(x, ax, 1, m), _slice_axis(x, ax, 0, m - 1)
        x = U.not_equal(hi, lo) if dtypes.is_bool(aval(x).dtype) else U.subtract(hi, lo)
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.ediff1d(jnp.array([1, 2, 4]), to_begin=0)
    Array([0, 1, 2])
    """
    if eager(ary, to_end, to_begin):
        return np.ediff1d(ary, to_end=to_end, to_begin=to_begin)
    from tracejit.numpy.shape import concatenate
    x = ravel(_array(ary))
    d = aval(x).dtype
    mid = U.subtract(_slice_axis(x, 0, 1, aval(x).shape[0]), _slice_axis(x, 0, 0, max(aval(x).shape[0] - 1, 0))) \
        if aval(x).shape[0] else x
    seq = [convert(ravel(_array(to_begin)), d)] if to_begin is not None else []
    seq.append(mid)
    if to_end is not None:
        seq.append(convert(ravel(_array(to_end)), d))
    return concatenate(seq) if len(seq) > 1 else mid


def append(arr, values, axis=None):
    """Append values to the end of an array (flattening when ``axis`` is None).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.append(jnp.array([1, 2]), 3)
    Array([1, 2, 3])
    """
    if eager(arr, values):
        return np.append(arr, values, axis)
    from tracejit.numpy.shape import concatenate
    if axis is None:
        return concatenate([ravel(_array(arr)), ravel(_array(values))])
    return concatenate([_array(arr), _array(values)], axis=axis)


# --------------------------------------------------------------------------- cross

def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 2- or 3-element vectors (``numpy.cross``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0]))
    Array([0, 0, 1])
    """
    if eager(a, b):
        return np.cross(a, b, axisa, axisb, axisc, axis)
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = promote(_array(a), _array(b))
    x, y = _array(x), _array(y)
    x = moveaxis(x, canonicalize_axis(axisa, aval(x).ndim), -1)
    y = moveaxis(y, canonicalize_axis(axisb, aval(y).ndim), -1)
    na, nb = aval(x).shape[-1], aval(y).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")
    if dtypes.is_bool(aval(x).dtype):
        raise TypeError("cross: boolean inputs are not supported (NumPy's subtract rejects bool)")

    def comp(v, i):
        return reshape(_slice_axis(v, aval(v).ndim - 1, i, i + 1), aval(v).shape[:-1])

    zero = convert(np.asarray(0), aval(x).dtype)
    x0, x1, x2 = comp(x, 0), comp(x, 1), comp(x, 2) if na == 3 else zero
    y0, y1, y2 = comp(y, 0), comp(y, 1), comp(y, 2) if nb == 3 else zero
    z = U.subtract(U.multiply(x0, y1), U.multiply(x1, y0))
    if na == 2 and nb == 2:
        return z
    parts = [U.subtract(U.multiply(x1, y2), U.multiply(x2, y1)),
             U.subtract(U.multiply(x2, y0), U.multiply(x0, y2)), z]
    from tracejit.numpy.shape import broadcast_arrays, stack
    out = stack(broadcast_arrays(*parts), axis=-1)
    return moveaxis(out, -1, canonicalize_axis(axisc, aval(out).ndim))


# --------------------------------------------------------------------------- logsumexp

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` computed stably (``scipy.special.logsumexp``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.logsumexp(jnp.array([0.0, 0.0])))  # log(2)
    0.6931471805599453
    """
    from tracejit.numpy.misc import where
    from tracejit.numpy.reductions import max as max_, sum as sum_
    x = _array(a)
    if not dtypes.is_inexact(aval(x).dtype):
        x = convert(x, dtypes.float64)
    if b is not None:
        x, bb = promote(x, b)
        x, bb = _array(x), _array(bb)
        if not dtypes.is_inexact(aval(x).dtype):
            x, bb = convert(x, dtypes.float64), convert(bb, dtypes.float64)
    if dtypes.is_complex(aval(x).dtype):
        raise NotImplementedError("logsumexp of complex inputs is not supported")
    if aval(x).size == 0 and axis is None:
        m = convert(np.asarray(-np.inf), aval(x).dtype)
        mk = m
    else:
        if b is not None:
            # Terms with b == 0 must not decide the shift (scipy does the same).
            x_for_max = where(U.equal(bb, 0), convert(np.asarray(-np.inf), aval(x).dtype), x)
        else:
            x_for_max = x
        mk = max_(x_for_max, axis=axis, keepdims=True, initial=-np.inf)
        mk = where(U.isfinite(mk), mk, convert(np.asarray(0), aval(x).dtype))
        # The shift carries no derivative (as in JAX): the result does not depend on it.
        mk = stop_gradient(mk)
    with np.errstate(all="ignore"):
        t = U.exp(U.subtract(x, mk))
        if b is not None:
            t = U.multiply(t, bb)
        s = sum_(t, axis=axis, keepdims=keepdims)
        shift = mk if keepdims else reshape(mk, aval(s).shape)
        if return_sign:
            sign = U.sign(s)
            out = U.add(U.log(U.absolute(s)), shift)
            return out, sign
        out = U.add(U.log(s), shift)
    return out
