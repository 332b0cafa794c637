"""NumPy's in-place functions on NumPy-semantics traced arrays: ``out=``, ``np.copyto``,
``ndarray.fill``, ``np.put``, ``np.place``, ``np.putmask``, ``ndarray.sort``,
``np.fill_diagonal``. Each computes the new value and writes it (:func:`state.write`)."""
from __future__ import annotations

import numpy as np

from tracejit.core.tracer import IMMUTABLE_MESSAGE, Tracer
from tracejit import numpy as jnp
from tracejit.functionalize import state


def target(a, fn):
    """``a`` as a writable NumPy-semantics tracer, or the error NumPy/JAX would give."""
    if state.is_numpy(a):
        return a
    if isinstance(a, Tracer):
        raise TypeError(IMMUTABLE_MESSAGE.format(type(a)) + f" ({fn} writes into its argument)")
    raise TypeError(
        f"{fn} would write a traced value into a {type(a).__name__} that is not traced (e.g. made by "
        "np.zeros(shape) inside the jitted function): its values must be known while tracing. "
        "Create the array from a traced one instead, e.g. np.zeros_like(x) or np.empty_like(x).")


def cast_check(value_dtype, out_dtype, casting, name):
    if not np.can_cast(value_dtype, out_dtype, casting=casting):
        raise TypeError(f"Cannot cast ufunc '{name}' output from dtype('{np.dtype(value_dtype)}') to "
                        f"dtype('{np.dtype(out_dtype)}') with casting rule '{casting}'")


def write_outputs(outs, results, casting, name):
    """Write ufunc results into the ``out=`` arrays; returns what NumPy returns."""
    single = not isinstance(results, tuple)
    results = (results,) if single else results
    for o, r in zip(outs, results):
        if o is None:
            continue
        o = target(o, f"np.{name}(..., out=...)")
        cast_check(jnp.result_type(r), o.dtype, casting, name)
        if np.broadcast_shapes(np.shape(r), o.shape) != o.shape:
            raise ValueError(f"non-broadcastable output operand with shape {o.shape} doesn't match "
                             f"the broadcast shape {np.broadcast_shapes(np.shape(r), o.shape)}")
        state.assign(o, r)
    ret = tuple(o if o is not None else state.as_numpy_results(r) for o, r in zip(outs, results))
    return ret[0] if single else ret


def copyto(dst, src, casting="same_kind", where=True):
    """``np.copyto``."""
    dst = target(dst, "np.copyto")
    src = state.plain(src)
    src_dtype = jnp.result_type(src)
    if not np.can_cast(src_dtype, dst.dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from dtype('{np.dtype(src_dtype)}') to "
                        f"dtype('{dst.dtype}') according to the rule '{casting}'")
    v = jnp.broadcast_to(jnp.asarray(src).astype(dst.dtype), dst.shape)
    if where is not True:
        v = jnp.where(state.plain(where), v, state.plain(dst))
    state.write(dst, v)


def fill(a, value):
    """``ndarray.fill``."""
    a = target(a, "ndarray.fill")
    state.assign(a, jnp.asarray(state.plain(value)).astype(a.dtype))


def _flat_set(a, flat_idx, values, fn):
    """``a.flat[flat_idx] = values`` (values repeated cyclically), last write wins."""
    flat = jnp.reshape(state.plain(a), (-1,))
    values = jnp.ravel(jnp.asarray(state.plain(values))).astype(a.dtype)
    n = np.shape(flat_idx)[0] if np.ndim(flat_idx) else 1
    flat_idx = jnp.ravel(jnp.asarray(state.plain(flat_idx)))
    if values.shape[0] == 0:
        if n:
            raise ValueError(f"{fn}: cannot write an empty sequence of values")
        return
    if values.shape[0] != n:
        values = jnp.take(values, jnp.arange(n) % values.shape[0])
    state.write(a, jnp.reshape(flat.at[flat_idx].set(values), a.shape))


def put(a, ind, v, mode="raise"):
    """``np.put`` / ``ndarray.put``."""
    a = target(a, "np.put")
    size = a.size
    if isinstance(state.plain(ind), Tracer):
        ind = state.plain(ind)
        if mode == "wrap":
            ind = ind % size
        elif mode == "clip":
            ind = jnp.clip(ind, 0, size - 1)
        else:
            raise NotImplementedError(
                "np.put with traced indices and mode='raise': whether an index is out of bounds is "
                "not known while tracing, so NumPy's IndexError cannot be raised. Pass mode='wrap' "
                "or mode='clip'.")
        ind = jnp.where(ind < 0, ind + size, ind)
    else:
        ind = np.asarray(ind).ravel()
        if mode == "wrap":
            ind = ind % size if size else ind
        elif mode == "clip":
            ind = np.clip(ind, 0, size - 1)
        elif ind.size and (ind.max() >= size or ind.min() < -size):
            bad = ind.max() if ind.max() >= size else ind.min()
            raise IndexError(f"index {bad} is out of bounds for axis 0 with size {size}")
        ind = np.where(ind < 0, ind + size, ind)
    _flat_set(a, ind, v, "np.put")


def place(arr, mask, vals):
    """``np.place``: the i-th True position takes ``vals[i % len(vals)]``."""
    arr = target(arr, "np.place")
    mask = jnp.broadcast_to(jnp.asarray(state.plain(mask)), arr.shape).astype(bool)
    vals = jnp.ravel(jnp.asarray(state.plain(vals))).astype(arr.dtype)
    flat_mask = jnp.ravel(mask)
    if vals.shape[0] == 0:
        # NumPy raises only when something is selected; a traced mask cannot be checked.
        if not isinstance(state.plain(mask), Tracer) and not np.any(np.asarray(mask)):
            return
        raise ValueError("Cannot insert from an empty array!")
    pos = (jnp.cumsum(flat_mask.astype(np.int64)) - 1) % vals.shape[0]
    new = jnp.where(flat_mask, jnp.take(vals, pos), jnp.ravel(state.plain(arr)))
    state.write(arr, jnp.reshape(new, arr.shape))


def putmask(a, mask, values):
    """``np.putmask``: ``a.flat[i] = values.flat[i % len(values)]`` where ``mask.flat[i]``."""
    a = target(a, "np.putmask")
    mask = jnp.broadcast_to(jnp.asarray(state.plain(mask)), a.shape).astype(bool)
    vals = jnp.ravel(jnp.asarray(state.plain(values))).astype(a.dtype)
    if vals.shape[0] == 0:
        return
    full = jnp.reshape(jnp.take(vals, jnp.arange(a.size) % vals.shape[0]), a.shape)
    state.write(a, jnp.where(mask, full, state.plain(a)))


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``ndarray.sort``: sorts in place, returns None."""
    a = target(a, "ndarray.sort")
    if order is not None:
        raise NotImplementedError("ndarray.sort(order=...) (structured arrays) is not supported")
    state.write(a, jnp.sort(state.plain(a), axis=axis))


def fill_diagonal(a, val, wrap=False):
    """``np.fill_diagonal`` (NumPy's ``a.flat[:end:step] = val``)."""
    a = target(a, "np.fill_diagonal")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = None if wrap else a.shape[1] * a.shape[1]
    else:
        if len(set(a.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
        end = None
    ind = np.arange(a.size)[:end:step]
    _flat_set(a, ind, val, "np.fill_diagonal")


# np function -> in-place implementation (reached through __array_function__).
FUNCTIONS = {np.copyto: copyto, np.put: put, np.place: place, np.putmask: putmask,
             np.fill_diagonal: fill_diagonal}
