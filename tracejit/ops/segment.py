"""Segment reductions (``jax.ops.segment_sum``, ``segment_prod``, ``segment_max``, ``segment_min``).

Each is one ``scatter`` primitive (``tracejit/ops/indexing.py``) into an array filled with the
reduction's identity: ``out[segment_ids[i]] op= data[i]``. The output has shape
``(num_segments,) + data.shape[1:]``; a segment no id names keeps the identity (0 for sums, 1 for
products, ``-inf``/``+inf`` for float maxima/minima, the integer dtype's min/max, ``False``/``True``
for booleans), and ids outside ``[0, num_segments)`` are dropped (``mode=None``/``'drop'``/``'fill'``,
JAX's ``FILL_OR_DROP``) or clamped into range (``mode='clip'``).

With ``bucket_size``, the ids are split into consecutive buckets of that many entries, each bucket
is reduced into its own row of a ``(num_buckets, num_segments, ...)`` array (one 2-d scatter), and
the rows are reduced together: JAX's way of shortening the accumulation chains of sums and products.

Because they are made of ``scatter`` (and ``reduce_*``) primitives, they differentiate, batch
under ``vmap`` and compile under ``jit`` with those primitives' rules. ``indices_are_sorted`` and
``unique_indices`` are hints in JAX; the first changes nothing here; ``unique_indices=True`` makes
``segment_prod`` a placement (a ``set`` scatter into ones), which is what makes it differentiable
with respect to ``data``, as in JAX (whose ``segment_prod`` gradient needs ``unique_indices=True``).

These functions sit in the primitives layer and return NumPy arrays when called eagerly;
``tracejit/__init__.py`` wraps the exported names of ``tracejit.ops`` so that they return
``tracejit.Array``s as JAX's do.
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core import dtypes
from tracejit.core.errors import ConcretizationTypeError, concretization_message
from tracejit.core.tracer import Tracer
from tracejit.core.values import get_aval as aval_of
from tracejit.ops.binders import broadcast_in_dim, concatenate, convert, reshape
from tracejit.ops.indexing import scatter_p
from tracejit.ops.operands import concrete_operand
from tracejit.ops.reductions import reduce_prims

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]

_REDUCER = {"add": "reduce_sum", "mul": "reduce_prod", "max": "reduce_max", "min": "reduce_min"}


def _identity(kind, dtype):
    if kind == "set":
        return np.ones((), dtype)
    if kind == "add":
        return np.zeros((), dtype)
    if kind == "mul":
        return np.ones((), dtype)
    if dtypes.is_complex(dtype):
        raise TypeError(f"segment_{kind} is not defined for complex data ({dtype.name})")
    big = kind == "min"
    if dtypes.is_bool(dtype):
        return np.asarray(big, dtype)
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        return np.asarray(info.max if big else info.min, dtype)
    return np.asarray(np.inf if big else -np.inf, dtype)


def _scatter_mode(mode):
    """JAX's ``GatherScatterMode`` (enum, string or None) as the scatter primitive's mode."""
    name = getattr(mode, "name", mode)
    name = "fill_or_drop" if name is None else str(name).lower()
    if name in ("fill_or_drop", "drop", "fill", "promise_in_bounds"):
        # PROMISE_IN_BOUNDS: JAX leaves out-of-range ids unspecified; dropping them is one valid choice.
        return "drop"
    if name == "clip":
        return "clip"
    raise ValueError(f"segment reductions: unknown mode {mode!r}; use None, 'fill', 'drop', 'clip' or "
                     "'promise_in_bounds' (or a lax.GatherScatterMode)")


def _num_segments(name, segment_ids, num_segments):
    if num_segments is None:
        if isinstance(segment_ids, Tracer):
            raise ConcretizationTypeError(concretization_message(
                f"{name}() without num_segments (the output size is max(segment_ids) + 1)", segment_ids)
                + f" Pass num_segments= to {name}.")
        ids = np.asarray(segment_ids)
        num_segments = int(ids.max()) + 1 if ids.size else 0
    if isinstance(num_segments, Tracer):
        raise ConcretizationTypeError(concretization_message(f"{name}() argument num_segments", num_segments))
    try:
        num_segments = int(num_segments)
    except TypeError:
        raise TypeError(f"{name}: num_segments must be an integer, got {num_segments!r}") from None
    if num_segments < 0:
        raise ValueError(f"{name}: num_segments must be non-negative, got {num_segments}")
    return num_segments


def _segment(name, kind, data, segment_ids, num_segments, bucket_size, mode):
    data = concrete_operand(data)
    segment_ids = concrete_operand(segment_ids)
    if dtypes.is_python_scalar(data):
        data = np.asarray(data, dtypes.python_scalar_dtype(data))
    if dtypes.is_python_scalar(segment_ids):
        segment_ids = np.asarray(segment_ids)
    d, s = aval_of(data), aval_of(segment_ids)
    if not dtypes.is_integer(s.dtype):
        raise TypeError(f"{name}: segment_ids must have an integer dtype, got {s.dtype.name}")
    if d.ndim < 1:
        raise TypeError(f"{name}: data must have at least one dimension (the one segment_ids index), "
                        f"got shape {d.shape}")
    smode = _scatter_mode(mode)
    n = _num_segments(name, segment_ids, num_segments)
    dtype = d.dtype
    tail = d.shape[1:]
    # Update i goes to out[segment_ids[i]]: updates have shape segment_ids.shape + data.shape[1:].
    upd_shape = s.shape + tail
    if d.shape != upd_shape:
        try:
            np.broadcast_shapes(d.shape, upd_shape)
            ok = np.broadcast_shapes(d.shape, upd_shape) == upd_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{name}: data of shape {d.shape} does not match segment_ids of shape {s.shape} "
                             f"(data must broadcast to segment_ids.shape + data.shape[1:] = {upd_shape})")
        lead = len(upd_shape) - d.ndim
        data = broadcast_in_dim(data, upd_shape, range(lead, len(upd_shape)))
    m = math.prod(s.shape)
    data = reshape(data, (m,) + tail)
    ids = reshape(segment_ids, (m, 1))
    ident = _identity(kind, dtype)
    if bucket_size is None:
        operand = broadcast_in_dim(ident, (n,) + tail, ())
        return scatter_p.bind(operand, ids, data, kind=kind, mode=smode)
    bucket_size = int(bucket_size)
    if bucket_size < 1:
        raise ValueError(f"{name}: bucket_size must be positive, got {bucket_size}")
    num_buckets = -(-m // bucket_size)
    if num_buckets == 0:
        return broadcast_in_dim(ident, (n,) + tail, ())
    # Index pairs (bucket, segment): bucket i // bucket_size for entry i.
    idt = s.dtype
    if max(num_buckets, 1) > np.iinfo(idt).max:
        idt = np.dtype(np.int64)
        ids = convert(ids, idt)
    buckets = (np.arange(m) // bucket_size).astype(idt).reshape(m, 1)
    idx = concatenate([buckets, ids], 1)
    operand = broadcast_in_dim(ident, (num_buckets, n) + tail, ())
    out = scatter_p.bind(operand, idx, data, kind=kind, mode=smode)
    return reduce_prims[_REDUCER[kind]].bind(out, axes=(0,))


_DOC = """Computes the {what} within segments of an array (``jax.ops.segment_{op}``).

    ``out[j]`` is the {what} of the rows ``data[i]`` with ``segment_ids[i] == j``.

    Parameters
    ----------
    data : array_like
        The values, shape ``(N, ...)``; the first axis is the one ``segment_ids`` label.
    segment_ids : array_like of int
        The segment of each row of ``data``, shape ``(N,)`` (``data`` broadcasts to
        ``segment_ids.shape + data.shape[1:]``). Ids outside ``[0, num_segments)`` are dropped
        (or clamped with ``mode='clip'``).
    num_segments : int, optional
        The number of segments (the output's first dimension). Default ``max(segment_ids) + 1``,
        which needs concrete ids: pass it under ``jit``.
    indices_are_sorted, unique_indices : bool
        Hints in JAX; accepted and ignored (the result is the same).
    bucket_size : int, optional
        Reduce the rows in buckets of this many, then reduce the buckets together.
    mode : str or lax.GatherScatterMode, optional
        Out-of-range ids: ``None``/``'fill'``/``'drop'`` drop them, ``'clip'`` clamps them.

    Returns
    -------
    Array
        Shape ``(num_segments,) + data.shape[1:]``, dtype of ``data``. Empty segments hold {empty}.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import ops
    >>> ops.segment_{op}(np.array([1., 2., 3., 4.]), np.array([0, 0, 1, 3]), num_segments=4)
    {example}
    """


def _make(op, kind, what, empty, example):
    name = f"segment_{op}"

    def fn(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
           bucket_size=None, mode=None):
        k = kind
        if kind == "mul" and unique_indices and bucket_size is None:
            # Each segment gets at most one row (the caller's promise, as in JAX): the product is that
            # row, placed with a 'set' scatter, which differentiates w.r.t. data (a 'mul' scatter's
            # derivative w.r.t. its updates is not defined for repeated ids; JAX's neither).
            k = "set"
        return _segment(name, k, data, segment_ids, num_segments, bucket_size, mode)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _DOC.format(what=what, op=op, empty=empty, example=example)
    return fn


segment_sum = _make("sum", "add", "sum", "0", "Array([3., 3., 0., 4.])")
segment_prod = _make("prod", "mul", "product", "1", "Array([2., 3., 1., 4.])")
segment_max = _make("max", "max", "maximum",
                    "``-inf`` (floats), the dtype's minimum (integers) or ``False``",
                    "Array([  2.,   3., -inf,   4.])")
segment_min = _make("min", "min", "minimum",
                    "``+inf`` (floats), the dtype's maximum (integers) or ``True``",
                    "Array([ 1.,  3., inf,  4.])")
