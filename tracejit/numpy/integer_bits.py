"""Integer number theory and bit twiddling: ``gcd``, ``lcm``, ``bitwise_count``,
``packbits``, ``unpackbits``.

``gcd``/``lcm``/``bitwise_count`` are :class:`~tracejit.numpy.ufuncs.Ufunc` objects
(NumPy's dtype resolution); ``gcd`` is Euclid's algorithm in one ``while_loop`` over
the whole array (every divisor guarded, so no lane divides by zero);
``bitwise_count`` is a branch-free SWAR popcount of ``|x|`` (NumPy counts the bits of
the absolute value). Packing and unpacking are shifts, reshapes and sums.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, canonicalize_axis, convert, eager, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy.float_math import ufunc
from tracejit.numpy.shape import broadcast_arrays
from tracejit.ops.control_flow_functions import while_loop

__all__ = ["gcd", "lcm", "bitwise_count", "packbits", "unpackbits"]


def _where(c, x, y):
    from tracejit.numpy.misc import where
    return where(c, x, y)


def _gcd(a, b):
    from tracejit.numpy.reductions import any as any_
    d = aval(a).dtype
    zero, one = np.asarray(0, d)[()], np.asarray(1, d)[()]
    a, b = broadcast_arrays(a, b)          # the Ufunc leaves rank-0 operands unbroadcast

    def body(c):
        x, y = c
        nz = U.not_equal(y, zero)
        return _where(nz, y, x), _where(nz, U.remainder(x, _where(nz, y, one)), zero)

    g, _ = while_loop(lambda c: any_(U.not_equal(c[1], zero)), body, (U.absolute(a), U.absolute(b)))
    return g


def _lcm(a, b):
    d = aval(a).dtype
    if d.itemsize < 4:   # NumPy's C loop computes |a / gcd * b| in int, then narrows
        return convert(_lcm(convert(a, dtypes.int32), convert(b, dtypes.int32)), d)
    zero, one = np.asarray(0, d)[()], np.asarray(1, d)[()]
    g = _gcd(a, b)
    nz = U.not_equal(g, zero)
    return _where(nz, U.absolute(U.multiply(U.floor_divide(a, _where(nz, g, one)), b)), zero)


def _popcount(x):
    d = aval(x).dtype
    bits = d.itemsize * 8
    ud = np.dtype(f"uint{bits}")
    v = convert(U.absolute(x) if dtypes.is_signed(d) else x, ud)   # |INT_MIN| wraps to 2**(bits-1)

    def c(pattern):
        return np.asarray(int(pattern * (2 ** bits - 1) // 255), ud)[()]   # repeat a byte pattern

    def shr(y, k):
        return U.right_shift(y, np.asarray(k, ud)[()])

    v = U.subtract(v, U.bitwise_and(shr(v, 1), c(0x55)))
    v = U.add(U.bitwise_and(v, c(0x33)), U.bitwise_and(shr(v, 2), c(0x33)))
    v = U.bitwise_and(U.add(v, shr(v, 4)), c(0x0F))                     # a count per byte
    k = 8
    while k < bits:                                                      # sum the bytes into the lowest
        v = U.add(v, shr(v, k))
        k *= 2
    return convert(U.bitwise_and(v, np.asarray(0xFF, ud)[()]), dtypes.uint8)


gcd = ufunc(np.gcd, _gcd, """Greatest common divisor of ``|x1|`` and ``|x2|``, elementwise (integers).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.gcd(jnp.array([12, -20, 0]), 8)
array([4, 4, 8])
""")

lcm = ufunc(np.lcm, _lcm, """Least common multiple of ``|x1|`` and ``|x2|``, elementwise (integers).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.lcm(jnp.array([4, -6, 0]), 6)
array([12,  6,  0])
""")

bitwise_count = ufunc(np.bitwise_count, _popcount, """Number of 1 bits in ``|x|``, as uint8 (integers).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.bitwise_count(jnp.array([0, 7, -1, 255]))
array([0, 3, 1, 8], dtype=uint8)
""")


def _bits_operand(a, fn):
    x = to_operand(a)
    d = aval(x).dtype
    if not (dtypes.is_integer(d) or dtypes.is_bool(d)):
        raise TypeError(f"{fn}: expected an input array of integer or boolean data type, got {d}")
    return x


def _bitorder(bitorder):
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    weights = (1 << np.arange(8, dtype=np.uint8)).astype(np.uint8)
    return weights[::-1].copy() if bitorder == "big" else weights


def packbits(a, axis=None, bitorder="big"):
    """Pack the truth of each element (nonzero) into bits of uint8 bytes along ``axis``
    (the flattened array when None); a partial last byte is padded with zeros.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.packbits(jnp.array([1, 0, 1, 1, 0, 0, 0, 0, 1]))
    Array([176, 128], dtype=uint8)
    """
    if eager(a):
        return np.packbits(np.asarray(a), axis=axis, bitorder=bitorder)
    from tracejit.numpy.extra import pad
    from tracejit.numpy.reductions import sum as sum_
    from tracejit.numpy.shape import moveaxis, ravel, reshape
    x = _bits_operand(a, "packbits")
    weights = _bitorder(bitorder)
    if axis is None:
        x, axis = ravel(x), 0
    axis = canonicalize_axis(axis, aval(x).ndim)
    x = moveaxis(convert(U.not_equal(x, 0), dtypes.uint8), axis, -1)
    n = aval(x).shape[-1]
    if n % 8:
        x = pad(x, [(0, 0)] * (aval(x).ndim - 1) + [(0, 8 - n % 8)])
    x = reshape(x, aval(x).shape[:-1] + (aval(x).shape[-1] // 8, 8))
    packed = sum_(U.multiply(x, weights), axis=-1, dtype=dtypes.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """Unpack each uint8 byte into 8 bits (0/1 uint8) along ``axis`` (the flattened array when
    None); ``count`` keeps that many bits (a negative one drops bits from the end, a larger one
    pads with zeros).

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.unpackbits(np.array([176], np.uint8), count=4)
    Array([1, 0, 1, 1], dtype=uint8)
    """
    if eager(a):
        return np.unpackbits(np.asarray(a), axis=axis, count=count, bitorder=bitorder)
    from tracejit.numpy.extra import pad
    from tracejit.numpy.shape import moveaxis, ravel, reshape
    x = to_operand(a)
    if aval(x).dtype != dtypes.uint8:
        raise TypeError(f"unpackbits: expected an input array of unsigned byte data type, got {aval(x).dtype}")
    weights = _bitorder(bitorder)
    if axis is None:
        x, axis = ravel(x), 0
    axis = canonicalize_axis(axis, aval(x).ndim)
    x = moveaxis(x, axis, -1)
    shape = aval(x).shape
    bits = U.not_equal(U.bitwise_and(reshape(x, shape + (1,)), weights), np.uint8(0))
    bits = reshape(convert(bits, dtypes.uint8), shape[:-1] + (shape[-1] * 8,))
    if count is not None:
        total = shape[-1] * 8
        keep = count if count >= 0 else max(total + count, 0)
        if keep <= total:
            bits = bits[..., :keep]
        else:
            bits = pad(bits, [(0, 0)] * (len(shape) - 1) + [(0, keep - total)])
    return moveaxis(bits, -1, axis)
