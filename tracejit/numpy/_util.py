"""Shared helpers of ``tracejit.numpy``: argument conversion, NEP 50
promotion, broadcasting and axis normalization."""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.trace import EVAL_TRACE, current_trace
from tracejit.core.storage_dtypes import has_storage_operand
from tracejit.core.tracer import Tracer
from tracejit.core.values import get_aval as aval
from tracejit.ops.operands import concrete_operand, convert
from tracejit.ops.structural import broadcast_in_dim_p, reshape_p


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


def eager(*args) -> bool:
    """True when NumPy may compute directly: no trace is active, no argument is a tracer
    (a leaked tracer goes through bind and errors) and none is bfloat16 (ml_dtypes' NumPy
    loops accumulate in bfloat16; tracejit's primitives compute in float32, under ``jit``
    and eagerly alike: core/storage_dtypes.py)."""
    return concrete(*args) and not any(
        has_storage_operand(a if isinstance(a, (list, tuple)) else (a,)) for a in args)


def concrete(*args) -> bool:
    """True when every argument's value is known: no trace is active and none is a tracer. What
    data-dependent shapes (``nonzero``, ``unique``, set operations without ``size=``) need; unlike
    :func:`eager` it holds for bfloat16 values too, whose NumPy results there are exact (they only
    compare and select elements)."""
    if current_trace() is not EVAL_TRACE:
        return False
    return not any(isinstance(a, Tracer) or isinstance(a, (list, tuple)) and any(isinstance(b, Tracer) for b in a)
                   for a in args)


def to_operand(x):
    """Tracers and Python scalars pass through; everything else becomes an ndarray (a list
    holding tracers is stacked into one traced array)."""
    if isinstance(x, (list, tuple)) and any(isinstance(e, (Tracer, list, tuple)) for e in x):
        from tracejit.numpy.shape import stack
        return stack([to_operand(e) for e in x])
    return concrete_operand(x)


def shape_of(x) -> tuple:
    return x.shape if isinstance(x, (Tracer, np.ndarray, np.generic)) else np.shape(x)


def dtype_of(x) -> np.dtype:
    return aval(to_operand(x)).dtype


def weak_pair(x) -> tuple[np.dtype, bool]:
    a = aval(x)
    return a.dtype, a.weak_type


def numpy_type_arg(x):
    """What to pass to ``ufunc.resolve_dtypes`` for operand ``x`` (Python type if weak)."""
    a = aval(x)
    if a.weak_type:
        # resolve_dtypes rejects Python ``bool``; bool is the lowest kind, so its dtype is equivalent.
        return {"b": dtypes.bool_, "i": int, "u": int, "f": float, "c": complex}[dtypes.kind(a.dtype)]
    return a.dtype


def promote(*args):
    """Convert operands to their NEP 50 common dtype."""
    ops = [to_operand(a) for a in args]
    dtype, weak = dtypes.result_type(*(weak_pair(o) for o in ops))
    return [convert(o, dtype, weak_type=weak and aval(o).weak_type) for o in ops]


def broadcast_shapes(*shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError("operands could not be broadcast together with shapes "
                         + " ".join(str(tuple(s)) for s in shapes)) from None


def broadcast_to_shape(x, shape):
    """Broadcast ``x`` to ``shape`` with a staged broadcast_in_dim (scalars too)."""
    xs = shape_of(x)
    shape = tuple(shape)
    if xs == shape:
        return x
    if not eager(x) or isinstance(x, Tracer):
        nd = len(shape)
        if len(xs) > nd:
            raise ValueError(f"cannot broadcast shape {xs} to {shape}")
        dims = tuple(range(nd - len(xs), nd))
        for s, d in zip(xs, dims):
            if s != 1 and s != shape[d]:
                raise ValueError(f"cannot broadcast shape {xs} to {shape}")
        # Squeeze size-1 source axes that stretch, so broadcast_in_dim sees exact sizes.
        if any(s == 1 and shape[d] != 1 for s, d in zip(xs, dims)):
            keep = [i for i, (s, d) in enumerate(zip(xs, dims)) if not (s == 1 and shape[d] != 1)]
            x = reshape_p.bind(x, new_sizes=tuple(xs[i] for i in keep))
            dims = tuple(dims[i] for i in keep)
        return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)
    return np.broadcast_to(x, shape)


def broadcast_operands(*ops):
    """Broadcast non-scalar operands to a common shape; rank-0 ones stay scalar."""
    shapes = [shape_of(o) for o in ops]
    out_shape = broadcast_shapes(*shapes)
    return [o if shape_of(o) == () or shape_of(o) == out_shape else broadcast_to_shape(o, out_shape)
            for o in ops], out_shape


def canonicalize_axis(axis, ndim: int) -> int:
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an integer, got {axis!r}") from None
    if (axis not in (0, -1)) if ndim == 0 else not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def canonicalize_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis}")
    else:
        axes = (canonicalize_axis(axis, ndim),)
    # NumPy accepts axis 0 / -1 on a 0-d array, which then has no axis to act on.
    return tuple(sorted(axes)) if ndim else ()
