"""Thin, documented wrappers that bind one primitive each."""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.dot import dot_general_p
from tracejit.ops.elementwise import binary_prims, convert_element_type_p, iota_p, select_n_p, unary_prims
from tracejit.ops.reductions import argmax_p, argmin_p, cumulative_prims, reduce_prims
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, rev_p, slice_p,
                                     squeeze_p, transpose_p)
from tracejit.numpy._util import aval, to_operand

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _weak_to(x, like):
    """A Python scalar takes the dtype of the array operand it meets."""
    if dtypes.is_python_scalar(x):
        return np.asarray(x, dtype=aval(like).dtype)[()]
    return to_operand(x)


def _binary(prim_name, doc):
    prim = binary_prims[prim_name]

    def fn(x, y):
        if dtypes.is_python_scalar(x) and not dtypes.is_python_scalar(y):
            x = _weak_to(x, y)
        y = _weak_to(y, x)
        x = to_operand(x)
        return prim.bind(x, y)
    fn.__doc__ = f"{doc}\n\nExamples\n--------\n>>> lax.{prim_name}(x, y)  # doctest: +SKIP\n"
    return fn


def _unary(prim_name, doc):
    prim = unary_prims[prim_name]

    def fn(x):
        return prim.bind(to_operand(x))
    fn.__doc__ = f"{doc}\n\nExamples\n--------\n>>> lax.{prim_name}(x)  # doctest: +SKIP\n"
    return fn


_BIN = {"add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y (inexact dtypes)",
        "rem": "NumPy remainder (sign of the divisor)", "pow": "x ** y", "max": "NaN-propagating maximum",
        "min": "NaN-propagating minimum", "atan2": "arctan2(x, y)", "nextafter": "next float after x towards y",
        "eq": "x == y", "ne": "x != y", "lt": "x < y", "le": "x <= y", "gt": "x > y", "ge": "x >= y",
        "shift_left": "x << y", "shift_right": "x >> y (arithmetic for signed integers)"}
for _n, _d in _BIN.items():
    _f = _binary(_n, _d)
    _f.__name__ = _n
    globals()[_n] = _f
    __all__.append(_n)
shift_right_arithmetic = globals()["shift_right"]
__all__.append("shift_right_arithmetic")

for _n in ("and", "or", "xor"):
    globals()[f"bitwise_{_n}"] = _binary(_n, f"bitwise {_n}")
    globals()[f"bitwise_{_n}"].__name__ = f"bitwise_{_n}"
    __all__.append(f"bitwise_{_n}")

_UN = {"neg": "-x", "sign": "sign", "floor": "floor", "ceil": "ceil", "round": "round half to even",
       "abs": "absolute value", "exp": "e**x", "exp2": "2**x", "expm1": "e**x - 1", "log": "natural log",
       "log1p": "log(1 + x)", "sin": "sine", "cos": "cosine", "tan": "tangent", "tanh": "tanh",
       "sinh": "sinh", "cosh": "cosh", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
       "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "sqrt": "square root",
       "cbrt": "cube root", "logistic": "1 / (1 + exp(-x))", "erf": "error function",
       "is_finite": "isfinite", "real": "real part", "imag": "imaginary part", "conj": "conjugate",
       "square": "x * x"}
for _n, _d in _UN.items():
    _f = _unary(_n, _d)
    _f.__name__ = _n
    globals()[_n] = _f
    __all__.append(_n)


@_export
def bitwise_not(x):
    """Bitwise (or logical, for bool) not."""
    return unary_prims["not"].bind(to_operand(x))


@_export
def rsqrt(x):
    """1 / sqrt(x)."""
    x = to_operand(x)
    return binary_prims["div"].bind(np.asarray(1, aval(x).dtype)[()], unary_prims["sqrt"].bind(x))


@_export
def integer_pow(x, y: int):
    """x ** y for a static integer exponent."""
    x = to_operand(x)
    return binary_prims["pow"].bind(x, np.asarray(y, aval(x).dtype)[()])


@_export
def convert_element_type(operand, new_dtype):
    """Cast to ``new_dtype`` (NumPy ``astype`` semantics)."""
    return convert_element_type_p.bind(to_operand(operand), new_dtype=dtypes.canonical(new_dtype), weak_type=False)


@_export
def select(pred, on_true, on_false):
    """Elementwise ``on_true if pred else on_false``."""
    return select_n_p.bind(to_operand(pred), to_operand(on_false), to_operand(on_true))


@_export
def select_n(which, *cases):
    """``cases[which]`` elementwise (bool ``which`` picks cases[1] when true)."""
    return select_n_p.bind(to_operand(which), *map(to_operand, cases))


@_export
def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Broadcast ``operand`` into ``shape``, its axes landing on ``broadcast_dimensions``."""
    return broadcast_in_dim_p.bind(to_operand(operand), shape=tuple(shape),
                                   broadcast_dimensions=tuple(broadcast_dimensions))


@_export
def broadcast(operand, sizes):
    """Prepend dimensions of the given sizes."""
    x = to_operand(operand)
    nd = aval(x).ndim
    return broadcast_in_dim(x, tuple(sizes) + aval(x).shape, tuple(range(len(sizes), len(sizes) + nd)))


@_export
def reshape(operand, new_sizes, dimensions=None):
    """Reshape (optionally transposing by ``dimensions`` first)."""
    x = to_operand(operand)
    if dimensions is not None:
        x = transpose(x, dimensions)
    return reshape_p.bind(x, new_sizes=tuple(new_sizes))


@_export
def transpose(operand, permutation):
    """Permute axes."""
    return transpose_p.bind(to_operand(operand), permutation=tuple(permutation))


@_export
def squeeze(array, dimensions):
    """Remove the given size-1 dimensions."""
    return squeeze_p.bind(to_operand(array), dimensions=tuple(dimensions))


@_export
def expand_dims(array, dimensions):
    """Insert size-1 dimensions."""
    x = to_operand(array)
    shape = list(aval(x).shape)
    for d in sorted(dimensions):
        shape.insert(d, 1)
    return reshape_p.bind(x, new_sizes=tuple(shape))


@_export
def slice(operand, start_indices, limit_indices, strides=None):
    """Static slice ``operand[start:limit:stride]`` per axis."""
    x = to_operand(operand)
    strides = tuple(strides) if strides is not None else (1,) * aval(x).ndim
    return slice_p.bind(x, start_indices=tuple(start_indices), limit_indices=tuple(limit_indices), strides=strides)


@_export
def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """Static slice along one axis."""
    x = to_operand(operand)
    shape = aval(x).shape
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis] = start_index if start_index is not None else 0
    limits[axis] = limit_index if limit_index is not None else shape[axis]
    strides[axis] = stride
    return slice(x, starts, limits, strides)


@_export
def concatenate(operands, dimension):
    """Join operands (equal dtypes) along ``dimension``."""
    return concatenate_p.bind(*map(to_operand, operands), dimension=dimension)


@_export
def rev(operand, dimensions):
    """Reverse along ``dimensions``."""
    return rev_p.bind(to_operand(operand), dimensions=tuple(dimensions))


@_export
def pad(operand, padding_value, padding_config):
    """Pad with (low, high, interior) per axis."""
    x = to_operand(operand)
    return pad_p.bind(x, _weak_to(padding_value, x), padding_config=tuple(tuple(c) for c in padding_config))


@_export
def iota(dtype, size):
    """0, 1, ..., size-1."""
    return iota_p.bind(dtype=dtypes.canonical(dtype), shape=(size,), dimension=0)


@_export
def broadcasted_iota(dtype, shape, dimension):
    """Indices along ``dimension`` broadcast to ``shape``."""
    return iota_p.bind(dtype=dtypes.canonical(dtype), shape=tuple(shape), dimension=dimension)


@_export
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """Batched tensor contraction with lax ``dimension_numbers``."""
    (lc, rc), (lb, rb) = dimension_numbers
    out = dot_general_p.bind(to_operand(lhs), to_operand(rhs),
                             dimension_numbers=((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))
    return convert_element_type(out, preferred_element_type) if preferred_element_type else out


@_export
def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix dot product (contracts the last axis of lhs with the first of rhs)."""
    l, r = to_operand(lhs), to_operand(rhs)
    return dot_general(l, r, (((aval(l).ndim - 1,), (0,)), ((), ())), preferred_element_type=preferred_element_type)


def _reducer(prim_name, fn_name):
    prim = reduce_prims[prim_name]

    def fn(operand, axes):
        return prim.bind(to_operand(operand), axes=tuple(sorted(axes)))
    fn.__name__ = fn_name
    fn.__doc__ = f"``{prim_name}`` over static ``axes``."
    return fn


for _p, _fname in (("reduce_sum", "reduce_sum"), ("reduce_max", "reduce_max"), ("reduce_min", "reduce_min"),
                   ("reduce_prod", "reduce_prod"), ("reduce_and", "reduce_and"), ("reduce_or", "reduce_or")):
    globals()[_fname] = _reducer(_p, _fname)
    __all__.append(_fname)


@_export
def argmax(operand, axis, index_dtype):
    """Index of the maximum along ``axis``."""
    return argmax_p.bind(to_operand(operand), axes=(axis,), index_dtype=dtypes.canonical(index_dtype))


@_export
def argmin(operand, axis, index_dtype):
    """Index of the minimum along ``axis``."""
    return argmin_p.bind(to_operand(operand), axes=(axis,), index_dtype=dtypes.canonical(index_dtype))


def _cumulative(name):
    def fn(operand, axis=0, reverse=False):
        return cumulative_prims[name].bind(to_operand(operand), axis=axis, reverse=reverse)
    fn.__name__ = name
    fn.__doc__ = f"Cumulative {name[3:]} along ``axis``."
    return fn


for _n in ("cumsum", "cumprod", "cummax", "cummin"):
    globals()[_n] = _cumulative(_n)
    __all__.append(_n)


@_export
def complex(x, y):
    """x + 1j * y."""
    x, y = to_operand(x), to_operand(y)
    d = dtypes.complex64 if aval(x).dtype == dtypes.float32 else dtypes.complex128
    xc = convert_element_type(x, d)
    yc = convert_element_type(y, d)
    return binary_prims["add"].bind(xc, binary_prims["mul"].bind(yc, np.asarray(1j, d)[()]))
