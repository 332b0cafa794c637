"""Primitive-level operations: one bind each, with no argument conversion or checks.

Used where operands are already operands of agreeing dtypes: differentiation and batching
rules, and compositions of primitives (convolution, exact complex construction).

Each helper binds one primitive on the current trace (so it computes with
NumPy eagerly and stages under ``jit``). Operands must already agree in dtype;
``c(value, like)`` makes a scalar constant of ``like``'s dtype, which binds
as a literal and broadcasts in binary primitives.
"""
from __future__ import annotations

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.ops.elementwise import binary_prims, convert_element_type_p, select_n_p, unary_prims
from tracejit.ops.reductions import reduce_prims
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, rev_p, slice_p,
                                     transpose_p)
from tracejit.core.values import get_aval as aval_of


def c(value, like):
    """Scalar constant ``value`` with the dtype of ``like`` (an array or a dtype)."""
    dtype = like if isinstance(like, np.dtype) else aval_of(like).dtype
    return np.asarray(value, dtype)[()]


def un(name, x):
    return unary_prims[name].bind(x)


def binary(name, x, y):
    return binary_prims[name].bind(x, y)


def add(x, y):
    return binary_prims["add"].bind(x, y)


def sub(x, y):
    return binary_prims["sub"].bind(x, y)


def mul(x, y):
    return binary_prims["mul"].bind(x, y)


def div(x, y):
    return binary_prims["div"].bind(x, y)


def neg(x):
    return unary_prims["neg"].bind(x)


def square(x):
    return mul(x, x)


def select(pred, on_true, on_false):
    return select_n_p.bind(pred, on_false, on_true)


def convert(x, dtype, weak_type=False):
    a = aval_of(x)
    dtype = np.dtype(dtype)
    if a.dtype == dtype and a.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


def reduce_sum(x, axes):
    axes = tuple(sorted(axes))
    return reduce_prims["reduce_sum"].bind(x, axes=axes) if axes else x


def broadcast_in_dim(x, shape, dims):
    shape, dims = tuple(shape), tuple(dims)
    if aval_of(x).shape == shape and dims == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast_to(x, shape):
    """Broadcast a rank-0 value (or a value of exactly ``shape``) to ``shape``."""
    a = aval_of(x)
    if a.shape == tuple(shape):
        return x
    if a.shape != ():
        raise AssertionError(f"cannot broadcast {a.str_short()} to {shape}")
    return broadcast_in_dim(x, shape, ())


def reshape(x, shape):
    shape = tuple(shape)
    return x if aval_of(x).shape == shape else reshape_p.bind(x, new_sizes=shape)


def transpose(x, perm):
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else transpose_p.bind(x, permutation=perm)


def slice(x, start, limit, strides=None):
    strides = tuple(strides) if strides is not None else (1,) * len(start)
    return slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit), strides=strides)


def pad(x, value, config):
    return pad_p.bind(x, value, padding_config=tuple(tuple(c_) for c_ in config))


def concatenate(xs, dimension):
    return xs[0] if len(xs) == 1 else concatenate_p.bind(*xs, dimension=dimension)


def rev(x, dims):
    return rev_p.bind(x, dimensions=tuple(dims)) if dims else x


def unbroadcast(ct, aval: ShapedArray):
    """Sum a cotangent down to a rank-0 operand that broadcast in a binary primitive."""
    if aval.shape == () and aval_of(ct).shape != ():
        return reduce_sum(ct, range(aval_of(ct).ndim))
    return ct


def real_dtype(dtype):
    dtype = np.dtype(dtype)
    return np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype


def complex_dtype(dtype):
    return np.dtype(np.complex64) if np.dtype(dtype) == np.float32 else np.dtype(np.complex128)
