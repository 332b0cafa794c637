"""Floating-point ufuncs built from other ufuncs: ``fabs``, ``float_power``, ``heaviside``,
``frexp``, ``ldexp``, ``modf``, ``spacing``, ``sinc``, and the value predicates ``isposinf``,
``isneginf``, ``iscomplex``, ``isreal``.

The ufuncs are :class:`~tracejit.numpy.ufuncs.Ufunc` objects, so their dtypes resolve
exactly as NumPy's (``fabs`` of int8 is float16, ``float_power`` is float64 or
complex128). ``frexp``/``ldexp`` are exact without a bitcast primitive: powers of two
are assembled from exact constant factors (one per bit of the exponent), mantissas are
scaled by them (exact), and an ``ldexp`` whose result is subnormal rounds once, as C's.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, convert, eager, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy.ufuncs import Ufunc, unary_prims
from tracejit.transforms.ad_custom import custom_jvp

__all__ = ["fabs", "float_power", "heaviside", "frexp", "ldexp", "modf", "spacing", "isposinf", "isneginf",
           "iscomplex", "isreal", "sinc"]


def ufunc(np_ufunc, impl, doc):
    """A traceable :class:`Ufunc` for ``np_ufunc`` computed by ``impl`` (operands already in the
    loop dtypes and broadcast), with its own docstring."""
    u = Ufunc(np_ufunc, impl)
    u.__doc__ = doc
    return u


def _where(c, x, y):
    from tracejit.numpy.misc import where
    return where(c, x, y)


def _const(v, d):
    return np.asarray(v, d)[()]


# --------------------------------------------------------------------------- exact powers of two

def _exponent_range(d):
    """(lowest k with 2**k representable (subnormal), highest k finite) for float dtype ``d``."""
    info = np.finfo(d)
    return info.minexp - info.nmant, info.maxexp - 1


def pow2(k, d):
    """Exactly ``2.0 ** k`` in float dtype ``d`` for an integer array ``k`` (clamped to the
    representable range): a product of one constant ``2**(+-2**b)`` per set bit of ``|k|``,
    every partial product a power of two between 1 and the result, so no step rounds."""
    lo, hi = _exponent_range(d)
    k = U.minimum(U.maximum(convert(k, dtypes.int64), np.int64(lo)), np.int64(hi))
    mag = U.absolute(k)
    negative = U.less(k, np.int64(0))
    out = None
    with np.errstate(over="ignore"):
        for b in range(max(hi, -lo).bit_length()):
            up = np.ldexp(_const(1, d), 2 ** b) if 2 ** b <= hi else _const(1, d)  # unused above hi
            down = np.ldexp(_const(1, d), -(2 ** b))
            factor = _where(negative, down, up)
            bit = U.not_equal(U.bitwise_and(U.right_shift(mag, np.int64(b)), np.int64(1)), np.int64(0))
            term = _where(bit, factor, _const(1, d))
            out = term if out is None else U.multiply(out, term)
    return out


def _in_float32(fn, x, *rest):
    """NumPy's half loops compute in float and round the result: do the same."""
    half = aval(x).dtype
    outs = fn(convert(x, dtypes.float32), *rest)
    if isinstance(outs, tuple):
        return tuple(convert(o, half) if aval(o).dtype == dtypes.float32 else o for o in outs)
    return convert(outs, half)


def _frexp_parts(x):
    """(mantissa in [0.5, 1) with the sign of x, int64 exponent) for finite nonzero x; x itself
    and exponent 0 for zeros, infinities and NaN."""
    d = aval(x).dtype
    info = np.finfo(d)
    special = U.logical_or(U.equal(x, _const(0, d)), U.logical_not(U.isfinite(x)))
    safe = _where(special, _const(1, d), x)
    shift = info.nmant + 2                       # lifts subnormals into the normal range, exactly
    sub = U.less(U.absolute(safe), _const(info.tiny, d))
    lifted = _where(sub, U.multiply(safe, np.ldexp(_const(1, d), shift)), safe)
    e = convert(U.add(U.floor(U.log2(U.absolute(lifted))), _const(1, d)), dtypes.int64)
    m = U.multiply(lifted, pow2(U.negative(e), d))
    # log2 may be off by one ulp next to a power of two: one correction step each way.
    big = U.greater_equal(U.absolute(m), _const(1, d))
    m = _where(big, U.multiply(m, _const(0.5, d)), m)
    e = U.add(e, convert(big, dtypes.int64))
    small = U.less(U.absolute(m), _const(0.5, d))
    m = _where(small, U.multiply(m, _const(2, d)), m)
    e = U.subtract(e, convert(small, dtypes.int64))
    e = U.subtract(e, _where(sub, np.int64(shift), np.int64(0)))
    return _where(special, x, m), _where(special, np.int64(0), e)


def _frexp(x):
    if aval(x).dtype in dtypes.HALF_FLOATS:
        return _in_float32(_frexp, x)
    return _frexp_parts(x)


def _ldexp(x, n):
    d = aval(x).dtype
    if d in dtypes.HALF_FLOATS:
        return _in_float32(_ldexp, x, n)
    info = np.finfo(d)
    emin, emax = info.minexp, info.maxexp - 1   # exponents of the smallest / largest normal powers
    m, e = _frexp_parts(x)
    n = U.minimum(U.maximum(convert(n, dtypes.int64), np.int64(-8 * emax)), np.int64(8 * emax))
    s = U.subtract(U.add(e, n), np.int64(1))        # x * 2**n = (2m) * 2**s with 2m in [1, 2)
    m2 = U.multiply(m, _const(2, d))
    normal = U.multiply(m2, pow2(s, d))            # exact while 2**s is a normal power
    # Below the normal range: one rounding, by a normal factor, from the smallest normal scale.
    deficit = U.maximum(U.subtract(s, np.int64(emin)), np.int64(-(info.nmant + 3)))
    subnormal = U.multiply(U.multiply(m2, _const(np.ldexp(1.0, emin), d)), pow2(deficit, d))
    out = _where(U.less(s, np.int64(emin)), subnormal, normal)
    overflow = U.greater(s, np.int64(emax))
    # x == +-0 gives x: ``out`` is 2 * x * 2**(n - 1) there, x exactly, with the derivative 2**n
    # (returning x itself gave d/dx = 1 at 0); past the finite range x itself.
    zero = _where(overflow, x, out)
    out = _where(overflow, U.copysign(_const(np.inf, d), x), out)
    return _where(U.logical_not(U.isfinite(x)), x, _where(U.equal(x, _const(0, d)), zero, out))


def _modf(x):
    d = aval(x).dtype
    whole = U.trunc(x)
    frac = _where(U.isinf(x), _const(0, d), U.subtract(x, whole))
    return U.copysign(frac, x), whole


def _spacing(x):
    d = aval(x).dtype
    up = U.subtract(U.nextafter(x, _const(np.inf, d)), x)
    # NumPy's half loop measures a negative x's gap towards zero, positively (npy_half_spacing).
    down = U.subtract(U.nextafter(x, _const(0 if d == dtypes.float16 else -np.inf, d)), x)
    out = _where(U.less(x, _const(0, d)), down, up)
    return _where(U.isinf(x), _const(np.nan, d), out)


def _heaviside(x1, x2):
    d = aval(x1).dtype
    at_zero = _where(U.equal(x1, _const(0, d)), x2, x1)    # NaN stays NaN
    return _where(U.less(x1, _const(0, d)), _const(0, d),
                  _where(U.greater(x1, _const(0, d)), _const(1, d), at_zero))


fabs = ufunc(np.fabs, unary_prims["abs"].bind, """Absolute value of real numbers, as floats.

Integers compute in NumPy's float loop dtype (int8 -> float16, int64 -> float64); complex
inputs raise ``TypeError`` (use ``abs``).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.fabs(jnp.array([-1, 2]))
array([1., 2.])
""")

float_power = ufunc(np.float_power, U.power._impl, """``x1 ** x2`` computed in float64 (or complex128).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.float_power(jnp.array([2, 3], jnp.int8), -1)
array([0.5       , 0.33333333])
""")

heaviside = ufunc(np.heaviside, _heaviside, """The Heaviside step: 0 where ``x1 < 0``, ``x2`` where
``x1 == 0``, 1 where ``x1 > 0`` (NaN stays NaN).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.heaviside(jnp.array([-1.5, 0.0, 2.0]), 0.5)
array([0. , 0.5, 1. ])
""")

frexp = ufunc(np.frexp, _frexp, """Split ``x`` into mantissa and exponent: ``x == m * 2**e``,
``0.5 <= |m| < 1`` (``m`` float, ``e`` int32); zeros, infinities and NaN give ``(x, 0)``.

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.frexp(jnp.array([8.0, -0.75]))
(array([ 0.5 , -0.75]), array([4, 0], dtype=int32))
""")

ldexp = ufunc(np.ldexp, _ldexp, """``x1 * 2**x2``, exactly (rounded once when subnormal), for an
integer ``x2``.

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.ldexp(jnp.array([0.5, 3.0]), jnp.array([4, -1]))
array([8. , 1.5])
""")

modf = ufunc(np.modf, _modf, """Fractional and integral parts, both with the sign of ``x``
(``modf(-inf)`` is ``(-0.0, -inf)``).

Examples
--------
>>> import tracejit.numpy as jnp
>>> jnp.modf(jnp.array([-2.5, 3.0]))
(array([-0.5,  0. ]), array([-2.,  3.]))
""")

spacing = ufunc(np.spacing, _spacing, """Distance from ``x`` to the next float away from zero
(negative for negative ``x``; ``spacing(0)`` is the smallest subnormal).

Examples
--------
>>> import tracejit.numpy as jnp
>>> float(jnp.spacing(1.0)) == float(jnp.finfo(jnp.float64).eps)
True
""")


class _ComplexInfError(TypeError, ValueError):
    """Raised for complex input to isposinf/isneginf (NumPy raises TypeError, JAX ValueError)."""


def _signed_inf(x, negative, fn):
    x = to_operand(x)
    d = aval(x).dtype
    if dtypes.is_complex(d):
        raise _ComplexInfError(f"{fn} is not well defined for complex values: test the real and imaginary "
                               "parts separately")
    if eager(x):
        return getattr(np, fn)(x)
    sign = U.signbit(x)
    return U.logical_and(U.isinf(x), sign if negative else U.logical_not(sign))


def isposinf(x, /, out=None):
    """True where ``x`` is positive infinity.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.isposinf(jnp.array([-jnp.inf, 0.0, jnp.inf]))
    Array([False, False,  True])
    """
    return _signed_inf(x, False, "isposinf")


def isneginf(x, /, out=None):
    """True where ``x`` is negative infinity.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.isneginf(jnp.array([-jnp.inf, 0.0, jnp.inf]))
    Array([ True, False, False])
    """
    return _signed_inf(x, True, "isneginf")


def iscomplex(x):
    """True where ``x`` has a nonzero imaginary part (all False for real dtypes).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.iscomplex(jnp.array([1 + 1j, 2 + 0j]))
    Array([ True, False])
    """
    if eager(x):
        return np.iscomplex(x)
    from tracejit.numpy.misc import imag
    x = to_operand(x)
    return U.not_equal(imag(x), 0)


def isreal(x):
    """True where ``x`` has a zero imaginary part (all True for real dtypes).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.isreal(jnp.array([1 + 1j, 2 + 0j]))
    Array([False,  True])
    """
    if eager(x):
        return np.isreal(x)
    from tracejit.numpy.misc import imag
    x = to_operand(x)
    return U.equal(imag(x), 0)


def sinc(x, /):
    """The normalized sinc function ``sin(pi x) / (pi x)``, 1 at 0 (``numpy.sinc``).

    Integer and bool inputs compute in float64. As in ``jax.numpy``, the value at 0 comes from
    a Maclaurin term with a custom JVP, so every derivative is finite there: 0 for odd orders,
    ``-pi**2 / 3`` for the second.

    Examples
    --------
    >>> import tracejit, tracejit.numpy as jnp
    >>> jnp.sinc(jnp.array([0.0, 0.5, 1.0])).round(6)
    Array([1.     , 0.63662, 0.     ])
    >>> float(tracejit.grad(jnp.sinc)(0.0)), round(float(tracejit.grad(tracejit.grad(jnp.sinc))(0.0)), 6)
    (0.0, -3.289868)
    """
    if eager(x):
        return np.sinc(x)
    x = to_operand(x)
    if not dtypes.is_inexact(aval(x).dtype):
        x = convert(x, dtypes.float64)
    zero = U.equal(x, 0)
    pi_x = U.multiply(np.pi, x)
    safe = _where(zero, 1, pi_x)
    return _where(zero, _sinc_maclaurin()(0, pi_x), U.true_divide(U.sin(safe), safe))


_SINC_MACLAURIN = []


def _sinc_maclaurin():
    """``m(k, x)``: the k-th derivative of ``sin(x) / x`` at 0, as a function of ``x`` whose JVP is
    ``m(k + 1, x) * t`` (JAX's construction: derivatives of every order at 0)."""
    if not _SINC_MACLAURIN:
        import functools

        @functools.partial(custom_jvp, nondiff_argnums=(0,))
        def maclaurin(k, x):
            return x * 0 if k % 2 else x * 0 + (-1) ** (k // 2) / (k + 1)

        @maclaurin.defjvp
        def maclaurin_jvp(k, primals, tangents):
            (x,), (t,) = primals, tangents
            return maclaurin(k, x), maclaurin(k + 1, x) * t
        _SINC_MACLAURIN.append(maclaurin)
    return _SINC_MACLAURIN[0]
