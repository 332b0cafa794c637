"""XLA-style ``gather`` and the ``scatter`` family with dimension numbers (``jax.lax``).

Both are composed from traceable ``tracejit.numpy`` operations, so ``jit``, ``grad``
(reverse and forward), ``vmap`` and eager calls all work without primitives of their own:

1. The index vector is the last axis of the indices. For each operand axis a window *start*
   is built over the batch shape (the other axes of the indices): an entry of the index
   vector (``start_index_map`` / ``scatter_dims_to_operand_dims``), a broadcasting iota
   for an operand batching axis, or 0.
2. Out-of-bounds windows (start outside ``[0, operand_dim - window_size]``, negative starts
   included; no wrapping) are clamped into bounds (``CLIP``), or clamped and then masked:
   a gather fills the whole window with ``fill_value`` and a scatter drops the whole window
   (``FILL_OR_DROP``). ``PROMISE_IN_BOUNDS`` clamps gathers and drops scatters, as XLA does.
3. Start + iota over the window gives one integer index array per operand axis, laid out
   as ``batch + window``; ``x[index_arrays]`` gathers, ``x.at[index_arrays].set/add/...``
   scatters (a dropped window points at an out-of-range row of an extra leading axis).
4. A transpose moves between that layout and the one the dimension numbers ask for.

As in JAX 0.10, ``gather`` defaults to ``PROMISE_IN_BOUNDS`` (clamping) and the scatters to
``FILL_OR_DROP``; ``ONE_HOT`` is rejected by ``gather`` and treated as ``PROMISE_IN_BOUNDS``
by the scatters (what JAX's lowering does). ``indices_are_sorted`` is ignored and
``unique_indices`` only lets ``scatter_mul`` differentiate in its updates (as in JAX): repeated
indices accumulate for the combining scatters; for ``scatter`` the last update in index order
wins (JAX leaves the order unspecified).
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.lax.dimension_numbers import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from tracejit.numpy._util import aval, convert, is_tracer, to_operand

__all__ = ["gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max",
           "scatter_apply"]

_CLIP, _PROMISE, _ONE_HOT = GatherScatterMode.CLIP, GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.ONE_HOT


def _jnp():
    import tracejit.numpy as jnp
    return jnp


# --------------------------------------------------------------------------- validation

def _ints(seq, what, fn):
    try:
        return tuple(operator.index(i) for i in seq)
    except TypeError:
        raise TypeError(f"{fn}: {what} must be a sequence of integers, got {seq!r}") from None


def _check_dims(dims, bound, what, fn, *, sorted_=True):
    if any(not 0 <= d < bound for d in dims) or len(set(dims)) != len(dims):
        raise TypeError(f"{fn}: {what} {dims} must be distinct axes in [0, {bound})")
    if sorted_ and list(dims) != sorted(dims):
        raise TypeError(f"{fn}: {what} {dims} must be sorted in ascending order")


def _indices(a, fn):
    a = to_operand(a)
    if not dtypes.is_integer(aval(a).dtype):
        raise ValueError("indices must have an integer type")
    if aval(a).ndim == 0:
        raise TypeError(f"{fn}: the indices need at least one axis (the index vector is the last axis)")
    return a


def _check_common(fn, shape, ishape, index_map, op_batch, idx_batch, removed, win):
    """Checks shared by gather and scatter; ``removed`` are the size-1 window axes the result drops."""
    rank, nb = len(shape), len(ishape) - 1
    _check_dims(removed, rank, "collapsed/inserted window dims", fn)
    _check_dims(op_batch, rank, "operand_batching_dims", fn)
    _check_dims(index_map, rank, "start_index_map / scatter_dims_to_operand_dims", fn, sorted_=False)
    _check_dims(idx_batch, nb, "indices batching dims", fn, sorted_=False)
    if ishape[-1] != len(index_map):
        raise TypeError(f"{fn}: the index vector (last axis of the indices, size {ishape[-1]}) must have one "
                        f"entry per element of the start index map {index_map}")
    if set(index_map) & set(op_batch) or set(removed) & set(op_batch):
        raise TypeError(f"{fn}: operand_batching_dims {op_batch} must not be index-mapped or collapsed axes")
    if len(op_batch) != len(idx_batch):
        raise TypeError(f"{fn}: operand_batching_dims {op_batch} and the indices batching dims {idx_batch} "
                        f"must have the same length")
    for d, b in zip(op_batch, idx_batch):
        if shape[d] != ishape[b]:
            raise TypeError(f"{fn}: operand batching axis {d} (size {shape[d]}) and indices batching axis {b} "
                            f"(size {ishape[b]}) must have the same size")
    for d in removed:
        if win[d] != 1:
            raise TypeError(f"{fn}: collapsed/inserted window axis {d} must have window size 1, got {win[d]}")
    if 0 not in ishape[:-1]:
        for d, (w, n) in enumerate(zip(win, shape)):
            if not 0 <= w <= n:
                raise TypeError(f"{fn}: window size {w} of operand axis {d} is out of range [0, {n}]")


def _mode(mode, fn):
    m = GatherScatterMode.from_any(mode)
    if m == _ONE_HOT:
        if fn == "gather":
            raise NotImplementedError("lax.gather does not support GatherScatterMode.ONE_HOT (nor does JAX's)")
        return _PROMISE
    return m


# --------------------------------------------------------------------------- shared lowering

def _window_indices(shape, win, window_axes, idx, index_map, op_batch, idx_batch, mode):
    """One integer index array per operand axis, laid out ``batch + window``, and the in-bounds mask.

    ``window_axes`` are the operand axes that form the window part of the layout (in order);
    every other axis has window size 1. The mask (batch-shaped, or ``None`` in ``CLIP`` mode) is
    true where the whole window lies in bounds.
    """
    jnp = _jnp()
    bshape = tuple(aval(idx).shape[:-1])
    nb, nw = len(bshape), len(window_axes)
    if aval(idx).dtype == np.uint64:  # keep huge unsigned starts out of range, not wrapped negative
        idx = jnp.minimum(idx, np.uint64(np.iinfo(np.int64).max))
    idx = convert(idx, np.int64)
    starts, ok = {}, None
    for j, d in enumerate(index_map):
        s, hi = idx[..., j], max(shape[d] - win[d], 0)
        if mode != _CLIP:
            in_bounds = jnp.logical_and(s >= 0, s <= hi)
            ok = in_bounds if ok is None else jnp.logical_and(ok, in_bounds)
        starts[d] = jnp.clip(s, 0, hi)
    for d, b in zip(op_batch, idx_batch):
        view = [1] * nb
        view[b] = bshape[b]
        starts[d] = np.arange(bshape[b], dtype=np.int64).reshape(view)
    parts = []
    for d in range(len(shape)):
        p = jnp.reshape(starts[d], aval(starts[d]).shape + (1,) * nw) if d in starts else \
            np.zeros((1,) * (nb + nw), np.int64)
        if d in window_axes:
            view = [1] * (nb + nw)
            view[nb + window_axes.index(d)] = win[d]
            p = p + np.arange(win[d], dtype=np.int64).reshape(view)
        parts.append(p)
    if ok is None and mode != _CLIP:
        ok = np.ones(bshape, bool)
    return parts, ok


def _layout_perm(out_rank, window_out_dims, nb):
    """perm with ``result[out] = layout[perm[out]]``; the layout is ``batch + window``."""
    perm, b = [], 0
    for p in range(out_rank):
        if p in window_out_dims:
            perm.append(nb + window_out_dims.index(p))
        else:
            perm.append(b)
            b += 1
    return perm


# --------------------------------------------------------------------------- gather

def _fill_value(fill_value, dtype):
    if fill_value is None:
        if dtypes.is_inexact(dtype):
            fill_value = np.nan
        elif dtype == np.bool_:
            fill_value = True
        else:
            info = np.iinfo(dtype)
            fill_value = info.min if dtype.kind == "i" else info.max
    if is_tracer(fill_value):
        return convert(fill_value, dtype)
    with np.errstate(all="ignore"):
        return np.asarray(fill_value).astype(dtype)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """XLA's Gather: windows of ``operand`` at the start positions in ``start_indices`` (``jax.lax.gather``).

    Parameters
    ----------
    operand : array
    start_indices : integer array whose last axis is the index vector (one entry per element of
        ``dimension_numbers.start_index_map``); the other axes are batch axes.
    dimension_numbers : GatherDimensionNumbers
    slice_sizes : window size for every operand axis.
    unique_indices, indices_are_sorted : accepted and ignored.
    mode : GatherScatterMode or str, optional
        ``None`` (default, JAX's ``PROMISE_IN_BOUNDS``) and ``'clip'`` clamp each start to
        ``[0, operand_dim - slice_size]`` (negative starts clamp to 0); ``'fill'`` returns
        ``fill_value`` for every window that is not wholly in bounds.
    fill_value : scalar, optional
        Defaults to NaN (inexact), the minimum (signed) or maximum (unsigned) integer, or True.

    Returns
    -------
    Array of rank ``start_indices.ndim - 1 + len(offset_dims)``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    >>> lax.gather(np.arange(6.).reshape(3, 2), np.array([[2], [0]]), dn, (1, 2))
    Array([[4., 5.],
           [0., 1.]])
    >>> lax.gather(np.arange(4.), np.array([[1], [3]]), lax.GatherDimensionNumbers((1,), (), (0,)), (2,),
    ...            mode="fill")
    Array([[ 1.,  2.],
           [nan, nan]])
    """
    jnp = _jnp()
    fn = "gather"
    x = to_operand(operand)
    idx = _indices(start_indices, fn)
    shape, ishape = tuple(aval(x).shape), tuple(aval(idx).shape)
    dn = GatherDimensionNumbers(*dimension_numbers)
    offset_dims, collapsed, index_map, op_batch, idx_batch = (
        _ints(v, n, fn) for v, n in zip(dn, dn._fields))
    win = _ints(slice_sizes, "slice_sizes", fn)
    if len(win) != len(shape):
        raise TypeError(f"gather: slice_sizes {win} must have one entry per operand axis ({len(shape)})")
    op_batch_win = tuple(1 if d in op_batch else w for d, w in enumerate(win))  # JAX allows 0 there
    _check_common(fn, shape, ishape, index_map, op_batch, idx_batch, collapsed, op_batch_win)
    window_axes = [d for d in range(len(shape)) if d not in collapsed and d not in op_batch]
    nb, nw = len(ishape) - 1, len(window_axes)
    _check_dims(offset_dims, nb + nw, "offset_dims", fn)
    if len(offset_dims) != nw:
        raise TypeError(f"gather: offset_dims {offset_dims} must name one output axis per operand axis that "
                        f"is neither collapsed nor batching ({nw})")
    m = _mode(_PROMISE if mode is None else mode, fn)   # JAX: gather's default is PROMISE_IN_BOUNDS
    parts, ok = _window_indices(shape, op_batch_win, window_axes, idx, index_map, op_batch, idx_batch,
                                _CLIP if m == _PROMISE else m)
    full = ishape[:-1] + tuple(win[d] for d in window_axes)
    out = x[tuple(parts)] if parts else x
    if tuple(aval(out).shape) != full:
        out = jnp.broadcast_to(out, full)
    if ok is not None:
        fill = _fill_value(fill_value, aval(x).dtype)
        out = jnp.where(jnp.reshape(ok, aval(ok).shape + (1,) * nw), out, fill)
    perm = _layout_perm(nb + nw, list(offset_dims), nb)
    if perm != list(range(nb + nw)):
        out = jnp.transpose(out, perm)
    return jnp.asarray(out)


# --------------------------------------------------------------------------- scatter

_METHODS = {"set": "set", "add": "add", "sub": "subtract", "mul": "multiply", "min": "min", "max": "max",
            "apply": "apply"}


def _scatter(kind, operand, scatter_indices, updates, dimension_numbers, mode, func=None, unique=False):
    """The shared body of the scatter family: validate, build the index arrays, ``x.at[...]``.

    With ``unique`` (the caller's ``unique_indices`` promise) a multiply is ``x * ones.at[...].set(u)``,
    which, unlike a scatter-multiply, is differentiable with respect to the updates (as in JAX).
    """
    from tracejit.numpy.advanced_indexing import IndexUpdateRef
    jnp = _jnp()
    fn = "scatter" if kind == "set" else f"scatter_{kind}"
    x = to_operand(operand)
    idx = _indices(scatter_indices, fn)
    u = to_operand(updates)
    dt = aval(x).dtype
    if dtypes.is_python_scalar(u):
        u = convert(u, dt)
    if aval(u).dtype != dt:
        raise TypeError(f"lax.{fn} requires arguments to have the same dtypes, got {dt.name}, "
                        f"{aval(u).dtype.name}.")
    if dt == np.bool_ and kind in ("add", "sub", "mul"):
        raise TypeError(f"lax.{fn} does not accept dtype bool")
    shape, ishape, ushape = tuple(aval(x).shape), tuple(aval(idx).shape), tuple(aval(u).shape)
    dn = ScatterDimensionNumbers(*dimension_numbers)
    uwd, inserted, index_map, op_batch, idx_batch = (_ints(v, n, fn) for v, n in zip(dn, dn._fields))
    nb = len(ishape) - 1
    window_axes = [d for d in range(len(shape)) if d not in inserted and d not in op_batch]
    if len(ushape) != nb + len(uwd) or len(uwd) != len(window_axes):
        raise TypeError(f"{fn}: updates of shape {ushape} must have rank {nb} (indices batch) + "
                        f"len(update_window_dims) = {nb + len(uwd)}, with one window axis per operand axis "
                        f"that is neither inserted nor batching ({len(window_axes)})")
    _check_dims(uwd, len(ushape), "update_window_dims", fn)
    win = [1] * len(shape)
    for d, k in zip(window_axes, uwd):
        win[d] = ushape[k]
    _check_common(fn, shape, ishape, index_map, op_batch, idx_batch, inserted, win)
    scatter_axes = [k for k in range(len(ushape)) if k not in uwd]
    if tuple(ushape[k] for k in scatter_axes) != ishape[:-1]:
        raise TypeError(f"{fn}: the scatter axes of updates {tuple(ushape[k] for k in scatter_axes)} must match "
                        f"the batch axes of the indices {ishape[:-1]}")
    m = _mode(mode, fn)
    parts, ok = _window_indices(shape, win, window_axes, idx, index_map, op_batch, idx_batch, m)
    # An extra leading axis of size 1: index 0 writes, index 1 (out of range) drops the window.
    full = ishape[:-1] + tuple(win[d] for d in window_axes)
    lead = np.zeros(full, np.int64) if ok is None else jnp.broadcast_to(
        jnp.reshape(jnp.where(ok, 0, 1), ishape[:-1] + (1,) * len(window_axes)), full)
    x1 = jnp.reshape(x, (1,) + shape)
    ref = IndexUpdateRef(jnp.ones_like(x1) if kind == "mul" and unique else x1, (lead, *parts))
    if kind == "apply":
        out = ref.apply(func, mode="drop")
    else:
        u = jnp.transpose(u, scatter_axes + list(uwd)) if scatter_axes + list(uwd) != list(range(len(ushape))) \
            else u
        if kind == "mul" and unique:
            return jnp.multiply(x, jnp.reshape(ref.set(u, mode="drop"), shape))
        out = getattr(ref, _METHODS[kind])(u, mode="drop")
    return jnp.reshape(out, shape)


_SCATTER_PARAMS = """
    Parameters
    ----------
    operand : array
    scatter_indices : integer array whose last axis is the index vector (one entry per element of
        ``scatter_dims_to_operand_dims``); the other axes are the scatter (batch) axes.
    updates : array of ``operand``'s dtype, of shape scatter axes + window axes as placed by
        ``dimension_numbers.update_window_dims``.
    dimension_numbers : ScatterDimensionNumbers
    indices_are_sorted, unique_indices : promises, not checked. ``scatter_mul`` with
        ``unique_indices=True`` is differentiable with respect to ``updates`` (as in JAX);
        otherwise only with respect to ``operand``.
    mode : GatherScatterMode or str, optional
        ``None`` (default, ``FILL_OR_DROP``), ``'fill'``/``'drop'`` and ``'promise_in_bounds'`` drop
        every update window that is not wholly in bounds (negative starts included); ``'clip'``
        clamps each start to ``[0, operand_dim - window_size]``.
"""


def _scatter_fn(kind, summary, example):
    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        return _scatter(kind, operand, scatter_indices, updates, dimension_numbers, mode,
                        unique=bool(unique_indices))
    fn.__name__ = fn.__qualname__ = "scatter" if kind == "set" else f"scatter_{kind}"
    fn.__doc__ = f"""{summary} (``jax.lax.{fn.__name__}``).
{_SCATTER_PARAMS}
    Returns
    -------
    Array like ``operand``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> lax.{fn.__name__}(np.full(4, 2.), np.array([[1], [3], [3], [7]]), np.array([5., 3., 3., 1.]), dn)
    {example}
    """
    return fn


scatter = _scatter_fn("set", "``operand`` with the update windows written over it; the last repeated index wins",
                      "Array([2., 5., 2., 3.])")
scatter_add = _scatter_fn("add", "``operand`` plus the update windows (repeated indices accumulate)",
                          "Array([2., 7., 2., 8.])")
scatter_sub = _scatter_fn("sub", "``operand`` minus the update windows (repeated indices accumulate)",
                          "Array([ 2., -3.,  2., -4.])")
scatter_mul = _scatter_fn("mul", "``operand`` times the update windows (repeated indices accumulate)",
                          "Array([ 2., 10.,  2., 18.])")
scatter_min = _scatter_fn("min", "Elementwise minimum of ``operand`` and the update windows",
                          "Array([2., 2., 2., 2.])")
scatter_max = _scatter_fn("max", "Elementwise maximum of ``operand`` and the update windows",
                          "Array([2., 5., 2., 3.])")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(), indices_are_sorted=False,
                  unique_indices=False, mode=None):
    """``operand`` with the elementwise ``func`` applied inside each window (``jax.lax.scatter_apply``).

    ``func`` is applied once per occurrence: an element covered by two windows gets
    ``func(func(x))``. ``update_shape`` is the shape ``updates`` would have in :func:`scatter`
    (scatter axes + window axes); ``mode`` is as there. Not differentiable in JAX either.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    >>> lax.scatter_apply(np.ones(4), np.array([[1], [1], [3], [9]]), lambda v: v * 2, dn, update_shape=(4,))
    Array([1., 4., 1., 2.])
    """
    dummy = np.zeros(_ints(update_shape, "update_shape", "scatter_apply"), aval(to_operand(operand)).dtype)
    return _scatter("apply", operand, scatter_indices, dummy, dimension_numbers, mode, func)
