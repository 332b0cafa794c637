"""``x[idx]`` and ``x[idx] = v`` on NumPy-semantics traced arrays.

Reading with a basic index (ints, slices, ``None``, ``...``, traced integer scalars) gives a
view that aliases ``x``; any other index gives a copy, as in NumPy. Writing is
``x.at[idx].set(v)`` on the current value, then :func:`state.write`: for integer index arrays
with repeated entries the last assignment wins, as in NumPy; ``x[idx] += v`` is Python's
``x[idx] = x[idx] + v`` (NumPy's behaviour: one addition per distinct index).
"""
from __future__ import annotations

import numpy as np

from tracejit.array import Array
from tracejit.core.tracer import Tracer
from tracejit import numpy as jnp
from tracejit.functionalize import state


def _is_basic_entry(e) -> bool:
    if e is None or e is Ellipsis or isinstance(e, slice):
        return True
    if isinstance(e, (bool, np.bool_)):
        return False
    if isinstance(e, (int, np.integer)):
        return True
    # A 0-d integer array index is an integer in NumPy (a view, not a copy).
    if isinstance(e, Tracer) or (isinstance(e, np.ndarray) and not isinstance(e, Array)):
        return e.ndim == 0 and np.dtype(e.dtype).kind in "iu"
    return False


def is_basic(idx) -> bool:
    """Whether NumPy's ``x[idx]`` is a view (basic indexing)."""
    if isinstance(idx, tuple):
        return all(_is_basic_entry(e) for e in idx)
    return _is_basic_entry(idx)


def getitem(x, idx, original):
    """``x[idx]`` for NumPy array ``x``: a view for a basic index, else a copy."""
    value = original(state.plain(x), idx)
    if is_basic(idx) and not _selects_element(x, idx):
        return state.make_view(x, "index", idx, value)
    # An element (``a[i, j]`` with an int per axis) is a NumPy scalar, a copy: it aliases nothing.
    return state.new_base(value)


def _selects_element(x, idx):
    entries = idx if isinstance(idx, tuple) else (idx,)
    return len(entries) == x.ndim and all(
        isinstance(e, (int, np.integer)) and not isinstance(e, bool)
        or isinstance(e, Tracer) and e.shape == () and e.dtype.kind in "iu" for e in entries)


def _concrete_bool_to_ints(idx):
    """NumPy boolean masks known at trace time become integer index arrays (static nonzero)."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    out = []
    for e in entries:
        if isinstance(e, np.ndarray) and e.dtype == bool and e.ndim > 0:
            out.extend(np.nonzero(e))
        else:
            out.append(e)
    return tuple(out)


def _check_concrete_bounds(x, idx):
    # NumPy raises for an out-of-bounds index known at trace time; .at[].set would drop it.
    entries = list(idx)
    if Ellipsis in [e if not isinstance(e, (np.ndarray, Tracer)) else None for e in entries]:
        pos = [i for i, e in enumerate(entries) if e is Ellipsis][0]
        used = sum(1 for e in entries if e is not None and e is not Ellipsis)
        entries[pos:pos + 1] = [slice(None)] * (x.ndim - used)
    axis = 0
    for e in entries:
        if e is None:
            continue
        if axis >= x.ndim:
            raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional")
        if isinstance(e, (list, np.ndarray, int, np.integer)) and not isinstance(e, (bool, np.bool_)):
            arr = np.asarray(e)
            n = x.shape[axis]
            if arr.dtype.kind in "iu" and arr.size and (arr.max() >= n or arr.min() < -n):
                bad = arr.max() if arr.max() >= n else arr.min()
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
        axis += 1


def setitem(x, idx, value):
    """``x[idx] = value`` on NumPy array ``x``, functionalized."""
    state.check_writable(x, "item assignment")
    idx = _concrete_bool_to_ints(idx)
    masks = [e for e in idx if isinstance(e, Tracer) and e.dtype == bool]
    if masks:
        _mask_assign(x, idx, value)
        return
    _check_concrete_bounds(x, idx)
    value = state.plain(value)
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    v = value.astype(x.dtype) if hasattr(value, "astype") else jnp.asarray(value, dtype=x.dtype)
    cur = state.plain(x)
    target_shape = cur[idx].shape
    vshape = np.shape(v)
    # NumPy strips leading 1s of the value ("setting an array element with a sequence" otherwise).
    while len(vshape) > len(target_shape) and vshape[0] == 1:
        v = jnp.reshape(v, vshape[1:])
        vshape = vshape[1:]
    try:
        if np.broadcast_shapes(vshape, target_shape) != tuple(target_shape):
            raise ValueError
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {tuple(vshape)} into shape "
                         f"{tuple(target_shape)}") from None
    state.write(x, cur.at[idx].set(v))


def _mask_assign(x, idx, value):
    """``x[mask] = scalar`` with a traced boolean mask: ``where(mask, value, x)``."""
    if len(idx) != 1 or idx[0].shape != x.shape[:idx[0].ndim]:
        raise NotImplementedError(
            "x[idx] = v with a traced boolean mask is supported when the mask is the whole index and "
            f"its shape is a leading part of x's shape (got mask shape {idx[0].shape} in an index of "
            f"{len(idx)} entries for x of shape {x.shape}); use np.where(mask, v, x) instead.")
    mask = idx[0]
    v = state.plain(value)
    if np.size(v) != 1:
        raise NotImplementedError(
            "x[mask] = v with a traced boolean mask and a non-scalar v: the number of selected "
            "elements is not known while tracing, so v's length cannot be checked. Use "
            "np.where(mask, v_full, x) (v_full shaped like x), or np.place(x, mask, v).")
    v = jnp.reshape(jnp.asarray(v), ()).astype(x.dtype)
    m = jnp.reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim))
    state.write(x, jnp.where(m, v, state.plain(x)))
