"""Operands of operations: what every array library layer (numpy, lax, the control-flow
functions) does first with an argument -- turn it into a tracer, a Python scalar or an
ndarray of a supported dtype, and convert it to a dtype (staged for tracers)."""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.tracer import Tracer
from tracejit.ops.elementwise import convert_element_type_p
from tracejit.ops.structural import reshape_p


def concrete_operand(x):
    """An operation's operand: tracers and Python scalars pass through; everything else becomes
    an ndarray of a supported dtype.

    Examples
    --------
    >>> concrete_operand([1.0, 2.0])
    array([1., 2.])
    """
    if isinstance(x, Tracer) or dtypes.is_python_scalar(x):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
    else:
        try:
            arr = np.asarray(x)
        except Exception as e:
            raise TypeError(f"cannot use {type(x).__name__} as an array: {e}") from None
    if arr.dtype == object:
        raise TypeError(f"cannot use {type(x).__name__} of dtype object as an array")
    if arr.dtype not in dtypes.SUPPORTED:
        arr = arr.astype(dtypes.canonical(arr.dtype))
    return arr


def convert(x, dtype, weak_type: bool = False):
    """Convert an operand to ``dtype`` (staged for tracers, eager otherwise).

    Examples
    --------
    >>> convert(1.5, np.float32)
    np.float32(1.5)
    """
    dtype = dtypes.canonical(dtype)
    if isinstance(x, Tracer):
        if x.dtype == dtype and x.aval.weak_type == weak_type:
            return x
        return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)
    if dtypes.is_python_scalar(x):
        with np.errstate(all="ignore"):
            if dtypes.is_complex(np.dtype(dtype)) or dtypes.is_bool(np.dtype(dtype)) or not isinstance(x, complex):
                return np.asarray(x, dtype=dtype)[()]
            return np.asarray(x.real, dtype=dtype)[()]
    arr = np.asarray(x)
    if arr.dtype == dtype:
        return arr
    with np.errstate(all="ignore"):
        if dtypes.is_complex(arr.dtype) and not dtypes.is_complex(dtype) and not dtypes.is_bool(dtype):
            arr = arr.real
        return arr.astype(dtype)


def lift(value, trace):
    """A constant array as a value of ``trace`` (a staging trace: one with ``to_atom``), not a
    constant folded into what uses it: what ``lax.stage`` does, and what a NumPy array made under a
    trace needs to be writable there (``functionalize``).

    Examples
    --------
    >>> # used by tracejit.lax.stage and tracejit/functionalize/state.py
    """
    arr = np.asarray(value)
    flat = Tracer(trace, None, trace.to_atom(arr.reshape(-1) if arr.ndim == 0 else arr))
    flat.aval = flat._v.aval
    return reshape_p.bind(flat, new_sizes=()) if arr.ndim == 0 else flat


def widen_to_preferred(preferred_element_type, *operands):
    """The operands of a contraction with ``preferred_element_type``, 16-bit floats widened to it
    first: the products then accumulate in the preferred type, JAX's meaning of it (instead of
    rounding to bfloat16 and converting). Other operands are returned as they are.

    Examples
    --------
    >>> import ml_dtypes
    >>> a, = widen_to_preferred(np.float32, np.ones(2, ml_dtypes.bfloat16))
    >>> a.dtype
    dtype('float32')
    """
    if preferred_element_type is None:
        return operands
    want = dtypes.canonical(preferred_element_type)
    if not dtypes.is_float(want):
        return operands

    def widen(x):
        d = getattr(x, "dtype", None)
        return convert(x, want) if d in dtypes.HALF_FLOATS and want.itemsize > d.itemsize else x
    return tuple(widen(x) for x in operands)
