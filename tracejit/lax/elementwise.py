"""Elementwise functions of ``jax.lax`` written on existing primitives: clamp, reciprocal,
population_count, clz, shift_right_logical, mulhi, bitcast_convert_type.

The integer bit functions work on the unsigned type of the operand's width (a
same-width integer conversion keeps the bits) with shifts by constants below the
width, masks and adds, so they compile to straight-line code with no new
primitive. They have no derivative (integer results), as in JAX.

``clamp`` routes its derivative with ``stop_gradient``, which lives in the autodiff layer
that imports ``tracejit.lax`` while it initializes; it is reached through the ``tracejit``
package attribute when ``clamp`` runs.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.tracer import jax_value
from tracejit.lax.ops import (add, bitwise_and, bitwise_or, broadcast_in_dim, concatenate, convert_element_type, div,
                              eq, expand_dims, ge, le, lt, mul, real, reshape, select, shift_left, shift_right,
                              slice_in_dim, sub)
from tracejit.lax.ops import abs as abs_, floor as lax_floor, max as _max, min as _min, ne, neg as neg_
from tracejit.ops.elementwise import unary_prims
from tracejit.numpy._util import aval, eager, is_tracer, to_operand
from tracejit.transforms.api_ad import stop_gradient

__all__ = ["clamp", "reciprocal", "population_count", "clz", "shift_right_logical", "mulhi",
           "bitcast_convert_type"]


def _const(value, dtype):
    return np.asarray(value, dtype)[()]


def _same_dtype_pair(name, x, y):
    """Operands of one dtype; a Python scalar is weak and takes the other operand's dtype."""
    if dtypes.is_python_scalar(x) and not dtypes.is_python_scalar(y):
        y = to_operand(y)
        x = _const(x, aval(y).dtype)
    elif dtypes.is_python_scalar(y):
        x = to_operand(x)
        y = _const(y, aval(x).dtype)
    x, y = to_operand(x), to_operand(y)
    if aval(x).dtype != aval(y).dtype:
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {aval(x).dtype.name} "
                        f"and {aval(y).dtype.name}")
    return x, y


def _operand_of_kind(name, x, kinds="iu", needs="an integer dtype"):
    """``x`` as an operand and its dtype, which must be of one of ``kinds``."""
    x = to_operand(x)
    if dtypes.is_python_scalar(x):
        x = np.asarray(x)
    dt = aval(x).dtype
    if dtypes.kind(dt) not in kinds:
        raise TypeError(f"lax.{name} does not accept dtype {dt.name}: it needs {needs}")
    return x, dt


def _unsigned(dt):
    return np.dtype(f"uint{8 * dt.itemsize}")


def lax_log2(x):
    return unary_prims["log2"].bind(x)


def signbit_(x):
    return unary_prims["signbit"].bind(x)


def clamp(min, x, max):  # noqa: A002  (jax.lax's parameter names)
    """``min(max(x, min), max)`` elementwise (``jax.lax.clamp``).

    ``min`` and ``max`` are scalars or arrays of ``x``'s shape; all three share one
    dtype (Python scalars adapt). NaN in any operand propagates, and -0.0 is below +0.0, as
    ``lax.max``/``lax.min``. Complex operands compare real parts only, as XLA does: with
    ``m = min if min.real >= x.real else x``, the result is ``m if m.real <= max.real else max``
    (so a NaN real part of ``x`` or ``max`` selects ``max``).
    Derivatives follow JAX: ``x`` gets the cotangent where ``min < x < max``, ``min`` where
    ``min > x`` (and ``min < max``), ``max`` where ``max < x``; ties and NaNs give zero.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.clamp(0.0, np.array([-1.0, 0.5, 2.0]), 1.0)
    Array([0. , 0.5, 1. ])
    """
    lo, hi = min, max
    x = to_operand(x)
    if dtypes.is_python_scalar(x):
        x = np.asarray(x)
    lo, x = _same_dtype_pair("clamp", lo, x)
    hi, x = _same_dtype_pair("clamp", hi, x)
    for name, b in (("min", lo), ("max", hi)):
        if aval(b).shape not in ((), aval(x).shape):
            raise TypeError(f"lax.clamp: {name} must be a scalar or have the operand's shape {aval(x).shape}, "
                            f"got {aval(b).shape}")
    if dtypes.kind(aval(x).dtype) == "c":
        m = select(ge(real(lo), real(x)), lo, x)
        return select(le(real(m), real(hi)), m, hi)
    value = _min(_max(x, lo), hi)
    if not any(is_tracer(v) for v in (lo, x, hi)) or dtypes.kind(aval(x).dtype) not in "f":
        return value
    # The same value, routed so the derivative goes where JAX sends it (nowhere on ties). Each
    # condition implies the value is exactly that operand (a NaN ``min`` makes the value NaN).
    lo_b, hi_b = (broadcast_in_dim(b, aval(x).shape, ()) if aval(b).shape != aval(x).shape else b
                  for b in (lo, hi))
    out = select(bitwise_and(lt(hi_b, x), eq(lo_b, lo_b)), hi_b, stop_gradient(value))
    out = select(bitwise_and(lt(x, lo_b), lt(lo_b, hi_b)), lo_b, out)
    return select(bitwise_and(lt(lo_b, x), lt(x, hi_b)), x, out)


def reciprocal(x):
    """``1 / x`` elementwise, in ``x``'s inexact dtype (``jax.lax.reciprocal``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.reciprocal(np.array([2.0, -4.0, 0.0]))
    Array([ 0.5 , -0.25,   inf])
    """
    x, dt = _operand_of_kind("reciprocal", x, "fc", "an inexact dtype")
    return div(_const(1, dt), x)


def _popcount_unsigned(u, ut):
    """Set bits of each element of the unsigned array ``u`` (dtype ``ut``), as ``ut``."""
    n = 8 * ut.itemsize

    def c(v):
        return _const(v, ut)

    def mask(byte):
        return c(int.from_bytes(bytes([byte]) * ut.itemsize, "little"))

    v = sub(u, bitwise_and(shift_right(u, c(1)), mask(0x55)))
    v = add(bitwise_and(v, mask(0x33)), bitwise_and(shift_right(v, c(2)), mask(0x33)))
    v = bitwise_and(add(v, shift_right(v, c(4))), mask(0x0F))   # each byte holds its count (<= 8)
    s = 8
    while s < n:                                                  # fold the byte counts into byte 0
        v = add(v, shift_right(v, c(s)))
        s *= 2
    return bitwise_and(v, c(0x7F)) if n > 8 else v


def population_count(x):
    """Number of set bits of each element (``jax.lax.population_count``), in ``x``'s integer dtype.

    Signed integers count the bits of their two's-complement form.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.population_count(np.array([0, 7, -1], np.int8))
    Array([0, 3, 8], dtype=int8)
    """
    x, dt = _operand_of_kind("population_count", x)
    ut = _unsigned(dt)
    return convert_element_type(_popcount_unsigned(convert_element_type(x, ut), ut), dt)


def clz(x):
    """Number of leading zero bits of each element (``jax.lax.clz``), in ``x``'s integer dtype.

    Zero gives the bit width; negative signed integers give 0.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.clz(np.array([0, 1, 255, 256], np.uint16))
    Array([16, 15,  8,  7], dtype=uint16)
    """
    x, dt = _operand_of_kind("clz", x)
    ut = _unsigned(dt)
    n = 8 * ut.itemsize
    v = convert_element_type(x, ut)
    s = 1
    while s < n:            # smear the highest set bit into every lower position
        v = bitwise_or(v, shift_right(v, _const(s, ut)))
        s *= 2
    return convert_element_type(sub(_const(n, ut), _popcount_unsigned(v, ut)), dt)


def shift_right_logical(x, y):
    """``x >> y`` shifting in zeros, for signed integers too (``jax.lax.shift_right_logical``).

    Shift amounts outside ``[0, bit width)`` (read as unsigned) give 0, as XLA.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.shift_right_logical(np.array([-16, 16, 5], np.int8), np.array([2, 2, 9], np.int8))
    Array([60,  4,  0], dtype=int8)
    """
    x, y = _same_dtype_pair("shift_right_logical", x, y)
    dt = aval(x).dtype
    if dtypes.kind(dt) not in "iu":
        raise TypeError(f"lax.shift_right_logical does not accept dtype {dt.name}: it needs an integer dtype")
    ut = _unsigned(dt)
    n = 8 * ut.itemsize
    u, s = convert_element_type(x, ut), convert_element_type(y, ut)
    too_far = ge(s, _const(n, ut))
    shifted = shift_right(u, _min(s, _const(n - 1, ut)))     # never shift by the width or more
    return convert_element_type(select(too_far, _const(0, ut), shifted), dt)


def _mulhi_u64(a, b):
    """High 64 bits of the 128-bit product of uint64 arrays, from 32-bit halves."""
    u = np.dtype(np.uint64)
    lo_mask, s32 = _const(0xFFFFFFFF, u), _const(32, u)
    a_lo, a_hi = bitwise_and(a, lo_mask), shift_right(a, s32)
    b_lo, b_hi = bitwise_and(b, lo_mask), shift_right(b, s32)
    hi_lo = mul(a_hi, b_lo)
    cross = add(add(shift_right(mul(a_lo, b_lo), s32), bitwise_and(hi_lo, lo_mask)), mul(a_lo, b_hi))
    return add(add(mul(a_hi, b_hi), shift_right(hi_lo, s32)), shift_right(cross, s32))


def mulhi(x, y, /):
    """Upper ``N`` bits of the ``2N``-bit product of ``N``-bit integers (``jax.lax.mulhi``).

    Signed operands give the high half of the signed product.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.mulhi(np.array([2**30, -3], np.int32), np.array([8, 2**30], np.int32))
    Array([ 2, -1], dtype=int32)
    """
    x, y = _same_dtype_pair("mulhi", x, y)
    dt = aval(x).dtype
    if dtypes.kind(dt) not in "iu":
        raise TypeError(f"lax.mulhi does not accept dtype {dt.name}: it needs an integer dtype")
    n = 8 * dt.itemsize
    if n <= 32:
        wide = np.dtype(np.int64 if dtypes.kind(dt) == "i" else np.uint64)
        prod = mul(convert_element_type(x, wide), convert_element_type(y, wide))
        return convert_element_type(shift_right(prod, _const(n, wide)), dt)
    u = np.dtype(np.uint64)
    xu, yu = convert_element_type(x, u), convert_element_type(y, u)
    hi = _mulhi_u64(xu, yu)
    if dtypes.kind(dt) == "i":
        # Signed high half = unsigned high half - (x < 0 ? y : 0) - (y < 0 ? x : 0)  (mod 2**64).
        zero = _const(0, u)
        hi = sub(hi, select(lt(x, _const(0, dt)), yu, zero))
        hi = sub(hi, select(lt(y, _const(0, dt)), xu, zero))
    return convert_element_type(hi, dt)


def _bitcast_shape(shape, old, new, name="bitcast_convert_type"):
    if new.itemsize == old.itemsize:
        return tuple(shape)
    if new.itemsize < old.itemsize:
        return tuple(shape) + (old.itemsize // new.itemsize,)
    if not shape or shape[-1] * old.itemsize != new.itemsize:
        raise ValueError(f"lax.{name}: converting {old.name} to the wider {new.name} needs a last axis of size "
                        f"{new.itemsize // old.itemsize}, got shape {tuple(shape)}")
    return tuple(shape[:-1])


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of each element as ``new_dtype`` (``jax.lax.bitcast_convert_type``).

    A narrower ``new_dtype`` appends an axis of ``old_size // new_size`` parts (least significant
    first, the little-endian memory order); a wider one consumes a last axis of that size.

    Eagerly this is NumPy's ``view``. Under ``jit`` (tracejit has no bit-reinterpreting
    primitive) it is composed of exact arithmetic: integer parts by conversions, shifts and masks;
    the bits of a float from its sign, its exponent (``log2`` corrected against exact powers of
    two) and its scaled mantissa; a float from its bits by exact products with powers of two. The
    one difference from XLA under ``jit``: NaN payloads are not kept (a NaN reads as the quiet NaN
    ``0x7ff8...`` with its sign bit, and bits that encode a NaN give NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.bitcast_convert_type(np.array([1.0], np.float32), np.uint32)
    Array([1065353216], dtype=uint32)
    >>> lax.bitcast_convert_type(np.array([258], np.uint16), np.uint8)
    Array([[2, 1]], dtype=uint8)
    """
    x = to_operand(operand)
    if dtypes.is_python_scalar(x):
        x = np.asarray(x)
    old, new = aval(x).dtype, np.dtype(new_dtype)
    shape = aval(x).shape
    out_shape = _bitcast_shape(shape, old, new)           # ValueError first, as JAX checks the shape first
    if old != new and (dtypes.kind(old) in "bc" or dtypes.kind(new) in "bc"):
        raise TypeError(f"lax.bitcast_convert_type does not support bool or complex values unless the operand "
                        f"and destination types match. Got operand dtype={old.name}, new_dtype={new.name}.")
    if new == old:
        return jax_value(x)
    if eager(x):
        a = np.ascontiguousarray(x)
        if new.itemsize <= old.itemsize:
            return a.reshape(shape + (1,)).view(new).reshape(out_shape)
        return a.view(new).reshape(out_shape)
    uo, un = _unsigned(old), _unsigned(new)
    u = _float_bits(x, old) if dtypes.kind(old) == "f" else convert_element_type(x, uo)
    if new.itemsize < old.itemsize:
        bits = 8 * new.itemsize
        parts = [convert_element_type(shift_right(u, _const(k * bits, uo)), un)    # truncation keeps low bits
                 for k in range(old.itemsize // new.itemsize)]
        u = concatenate([expand_dims(p, (len(shape),)) for p in parts], len(shape))
    elif new.itemsize > old.itemsize:
        bits = 8 * old.itemsize
        out = None
        for k in range(shape[-1]):
            part = reshape(slice_in_dim(u, k, k + 1, 1, len(shape) - 1), out_shape)
            part = shift_left(convert_element_type(part, un), _const(k * bits, un))
            out = part if out is None else bitwise_or(out, part)
        u = out
    return _bits_to_float(u, new) if dtypes.kind(new) == "f" else convert_element_type(u, new)


_F64 = np.dtype(np.float64)


def _pow2(e):
    """``2.0 ** e`` exactly, for float64 ``e`` holding integers in [-1022, 1023]: a product of exact
    powers of two picked by the bits of ``e + 1022`` (every partial product stays in range)."""
    k = convert_element_type(add(e, _const(1022.0, _F64)), np.int64)
    p = _const(2.0 ** -1022, _F64)
    for j in range(11):
        bit = ne(bitwise_and(shift_right(k, _const(j, np.int64)), _const(1, np.int64)), _const(0, np.int64))
        for factor in ((2.0 ** 512, 2.0 ** 512) if j == 10 else (2.0 ** (2 ** j),)):
            p = mul(p, select(bit, _const(factor, _F64), _const(1.0, _F64)))
    return p


def _float_parts(dt):
    fi = np.finfo(dt)
    return fi.nmant, fi.maxexp - 1, 8 * dt.itemsize - 1 - fi.nmant     # mantissa bits, bias, exponent bits


def _float_bits(x, dt):
    """The bits of the float array ``x`` (dtype ``dt``) as the unsigned integer of its width."""
    ut = _unsigned(dt)
    m, bias, ebits = _float_parts(dt)
    a = abs_(convert_element_type(x, _F64))                          # exact
    tiny = float(np.finfo(dt).tiny)
    normal = bitwise_and(ge(a, _const(tiny, _F64)), lt(a, _const(np.inf, _F64)))
    safe = select(normal, a, _const(1.0, _F64))
    e = lax_floor(lax_log2(safe))                                    # may be off by one near powers of two
    e = _min(_max(e, _const(float(1 - bias), _F64)), _const(float(bias), _F64))
    p = _pow2(e)
    low, high = lt(safe, p), ge(safe, mul(p, _const(2.0, _F64)))
    e = sub(add(e, convert_element_type(high, _F64)), convert_element_type(low, _F64))
    p = select(low, mul(p, _const(0.5, _F64)), select(high, mul(p, _const(2.0, _F64)), p))
    mant_normal = mul(sub(div(safe, p), _const(1.0, _F64)), _const(2.0 ** m, _F64))
    # subnormal: a * 2 ** (bias - 1 + m), in two exact steps (2 ** 1074 is not a double)
    mant_sub = mul(mul(a, _const(2.0 ** (bias - 1), _F64)), _const(2.0 ** m, _F64))
    is_nan = ne(a, a)
    mant = select(normal, mant_normal, select(is_nan, _const(0.0, _F64), mant_sub))
    mant = select(is_nan, _const(2.0 ** (m - 1), _F64), mant)         # the quiet NaN
    top = float(2 ** ebits - 1)
    biased = select(normal, add(e, _const(float(bias), _F64)),
                    select(ge(a, _const(np.inf, _F64)), _const(top, _F64), _const(0.0, _F64)))
    biased = select(is_nan, _const(top, _F64), biased)
    bits = bitwise_or(shift_left(convert_element_type(biased, ut), _const(m, ut)), convert_element_type(mant, ut))
    sign = convert_element_type(signbit_(x), ut)
    return bitwise_or(bits, shift_left(sign, _const(8 * dt.itemsize - 1, ut)))


def _bits_to_float(u, dt):
    """The floats of dtype ``dt`` whose bits are the unsigned integers ``u``."""
    ut = _unsigned(dt)
    m, bias, ebits = _float_parts(dt)
    mant = convert_element_type(bitwise_and(u, _const(2 ** m - 1, ut)), _F64)                       # exact
    biased = convert_element_type(bitwise_and(shift_right(u, _const(m, ut)), _const(2 ** ebits - 1, ut)), _F64)
    negative = ne(shift_right(u, _const(8 * dt.itemsize - 1, ut)), _const(0, ut))
    frac = mul(mant, _const(2.0 ** -m, _F64))                                                      # exact, < 1
    normal = mul(add(frac, _const(1.0, _F64)),
                 _pow2(_min(_max(sub(biased, _const(float(bias), _F64)), _const(-1022.0, _F64)),
                            _const(1023.0, _F64))))
    value = select(eq(biased, _const(0.0, _F64)), mul(frac, _const(2.0 ** (1 - bias), _F64)), normal)
    special = select(eq(mant, _const(0.0, _F64)), _const(np.inf, _F64), _const(np.nan, _F64))
    value = select(eq(biased, _const(float(2 ** ebits - 1), _F64)), special, value)
    value = select(negative, neg_(value), value)
    return convert_element_type(value, dt)                                                         # exact
