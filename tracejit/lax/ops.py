"""The primitive-level functions of ``tracejit.lax``: thin, documented wrappers over tracejit's
primitives, composed where jax.lax's semantics differ from the primitive's NumPy semantics (see
the elementwise section)."""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.dot import dot_general_p
from tracejit.ops.elementwise import binary_prims, convert_element_type_p, iota_p, select_n_p, unary_prims
from tracejit.ops.reductions import argmax_p, argmin_p, cumulative_prims, reduce_prims
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, rev_p, slice_p,
                                     squeeze_p, transpose_p)
from tracejit.lax.dimension_numbers import RoundingMethod
from tracejit.numpy._util import aval, to_operand
from tracejit.ops.composites import COMPLEX_OF_REAL, complex_from_parts
from tracejit.ops.operands import widen_to_preferred
from tracejit.transforms.ad_custom import custom_jvp
from tracejit.transforms.api_ad import stop_gradient

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _weak_to(x, like):
    """A Python scalar takes the dtype of the array operand it meets."""
    if dtypes.is_python_scalar(x):
        return np.asarray(x, dtype=aval(like).dtype)[()]
    return to_operand(x)


# ----------------------------------------------------------------------------- elementwise functions
#
# These follow jax.lax (XLA) semantics, not NumPy's: ``rem`` is C fmod (the sign of the dividend),
# integer ``div`` truncates toward zero (x / 0 is -1, all bits set; INT_MIN / -1 is INT_MIN) and
# ``rem`` by zero returns the dividend, ``round`` rounds halfway values away from zero by default,
# ``sign(-0.0)`` is -0.0, ``max``/``min`` order -0.0 below +0.0, ``shift_right_arithmetic``
# sign-extends unsigned operands, and every function accepts exactly the dtypes JAX accepts
# (``TypeError`` otherwise, eagerly and under jit). Each is composed of tracejit's primitives,
# so jit, grad and vmap apply; derivatives are JAX's. tests/test_lax_vs_jax.py checks all of them
# against jax.lax.

_KIND_NAMES = {"b": "bool", "i": "signedinteger", "u": "unsignedinteger", "f": "floating", "c": "complexfloating"}
_NUM, _ANY, _INT, _BOOL_OR_INT, _ORDERED, _INEXACT, _FLOAT = "iufc", "biufc", "iu", "biu", "biuf", "fc", "f"


def _check_kinds(name, kinds, *xs):
    """JAX's dtype rule: ``TypeError`` unless each operand's dtype is of one of ``kinds``."""
    for i, x in enumerate(xs):
        dt = aval(x).dtype
        if dtypes.kind(dt) not in kinds:
            where = f" at position {i}" if len(xs) > 1 else ""
            allowed = ", ".join(_KIND_NAMES[k] for k in kinds)
            raise TypeError(f"{name} does not accept dtype {dt.name}{where}. Accepted dtypes{where} are "
                            f"subtypes of {allowed}.")


def _pair(name, x, y, kinds=_ANY):
    """Two operands of one dtype of ``kinds``; a Python scalar is weak and takes the other's dtype."""
    if dtypes.is_python_scalar(x) and not dtypes.is_python_scalar(y):
        x = _weak_to(x, y)
    y = _weak_to(y, x)
    x = to_operand(x)
    _check_kinds(name, kinds, x, y)
    if aval(x).dtype != aval(y).dtype:
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{aval(x).dtype.name}, {aval(y).dtype.name}.")
    return x, y


def _one(name, x, kinds):
    x = to_operand(x)
    _check_kinds(name, kinds, x)
    return x


def _c(value, like):
    """A constant of ``like``'s dtype."""
    return np.asarray(value, aval(like).dtype)[()]


def _b(name, x, y):
    return binary_prims[name].bind(x, y)


def _u(name, x):
    return unary_prims[name].bind(x)


def _sel(pred, on_false, on_true):
    return select_n_p.bind(pred, on_false, on_true)


def _as(x, dtype):
    return convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def _same_as_primitive(name, kinds, doc, prim_name=None):
    """A binary function whose primitive already computes jax.lax's values."""
    prim = prim_name or name

    def fn(x, y):
        x, y = _pair(name, x, y, kinds)
        return _b(prim, x, y)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc} (``jax.lax.{name}``).\n\nExamples\n--------\n>>> lax.{name}(x, y)  # doctest: +SKIP\n"
    return fn


for _n, _kinds, _d, _p in (
        ("add", _NUM, "x + y", None), ("sub", _NUM, "x - y", None), ("mul", _NUM, "x * y", None),
        ("eq", _ANY, "x == y", None), ("ne", _ANY, "x != y", None), ("lt", _ORDERED, "x < y", None),
        ("le", _ORDERED, "x <= y", None), ("gt", _ORDERED, "x > y", None), ("ge", _ORDERED, "x >= y", None),
        ("shift_left", _INT, "x << y; shift amounts outside [0, bit width) give 0", None),
        ("bitwise_and", _BOOL_OR_INT, "bitwise (logical, for bool) and", "and"),
        ("bitwise_or", _BOOL_OR_INT, "bitwise (logical, for bool) or", "or"),
        ("bitwise_xor", _BOOL_OR_INT, "bitwise (logical, for bool) xor", "xor")):
    globals()[_n] = _same_as_primitive(_n, _kinds, _d, _p)
    __all__.append(_n)


@_export
def shift_right(x, y):
    """``x >> y``: arithmetic for signed, logical for unsigned integers (tracejit's own name; JAX has
    ``shift_right_arithmetic`` and ``shift_right_logical``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.shift_right(np.array([-8, 8], np.int8), np.int8(2))
    Array([-2,  2], dtype=int8)
    """
    x, y = _pair("shift_right", x, y, _INT)
    return _b("shift_right", x, y)


@_export
def shift_right_arithmetic(x, y):
    """``x >> y`` shifting in copies of the sign bit (``jax.lax.shift_right_arithmetic``).

    Unsigned operands shift their bit pattern arithmetically too (``uint8(128) >> 1 == 192``), as
    XLA; shift amounts outside ``[0, bit width)`` fill every bit with the sign bit.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.shift_right_arithmetic(np.array([128, 64], np.uint8), np.uint8(1))
    Array([192,  32], dtype=uint8)
    """
    x, y = _pair("shift_right_arithmetic", x, y, _INT)
    dt = aval(x).dtype
    if dtypes.kind(dt) == "i":
        return _b("shift_right", x, y)
    signed = np.dtype(f"int{8 * dt.itemsize}")      # same-width conversions keep the bits
    return _as(_b("shift_right", _as(x, signed), _as(y, signed)), dt)


@_export
def div(x, y):
    """``x / y`` (``jax.lax.div``): true division for inexact dtypes, truncation toward zero for
    integers, which keep their dtype.

    Integer division by zero gives -1 (all bits set: the maximum of an unsigned type) and
    ``INT_MIN / -1`` gives ``INT_MIN``, as XLA defines them.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.div(np.array([7, -7, 7, -7, 5], np.int32), np.array([2, 2, -2, -2, 0], np.int32))
    Array([ 3, -3, -3,  3, -1], dtype=int32)
    """
    x, y = _pair("div", x, y, _NUM)
    dt = aval(x).dtype
    if dtypes.kind(dt) == "c":
        return _complex_div_fn()(x, y)
    if dtypes.kind(dt) == "f":
        return _b("div", x, y)
    zero, one = _c(0, x), _c(1, x)
    y_zero = _b("eq", y, zero)
    if dtypes.kind(dt) == "u":
        q = _b("floordiv", x, _sel(y_zero, y, one))                      # floor == trunc for unsigned
        return _sel(y_zero, q, _c(np.iinfo(dt).max, x))
    minus_one = _c(-1, x)
    y_m1 = _b("eq", y, minus_one)
    safe = _sel(_b("or", y_zero, y_m1), y, one)                           # no trap: 0 and -1 are handled below
    q = _b("floordiv", x, safe)
    # floor and trunc differ by one where the division is inexact and the signs differ
    inexact = _b("ne", _b("fmod", x, safe), zero)
    signs_differ = _b("ne", _b("lt", x, zero), _b("lt", safe, zero))
    q = _b("add", q, _as(_b("and", inexact, signs_differ), dt))
    q = _sel(y_m1, q, _u("neg", x))                                        # wraps INT_MIN to INT_MIN
    return _sel(y_zero, q, minus_one)


def _div(x, y):
    """``x / y`` for operands of one inexact dtype: complex ones by XLA's algorithm."""
    return _complex_div_fn()(x, y) if dtypes.kind(aval(x).dtype) == "c" else _b("div", x, y)


def _complex_div(x, y):
    """XLA's complex division: Smith's algorithm, then XLA's fixes where both parts came out NaN
    (zero denominator: ``copysign(inf, y.real) * x``; infinite numerator over a finite denominator;
    finite numerator over an infinite one)."""
    ar, ai, br, bi = _u("real", x), _u("imag", x), _u("real", y), _u("imag", y)
    zero, one, inf = _c(0, ar), _c(1, ar), _c(np.inf, ar)
    mul, add, sub, div = (lambda a, b: _b("mul", a, b)), (lambda a, b: _b("add", a, b)), \
        (lambda a, b: _b("sub", a, b)), (lambda a, b: _b("div", a, b))
    r_ratio = div(br, bi)                       # |br| < |bi|
    r_denom = add(bi, mul(br, r_ratio))
    i_ratio = div(bi, br)
    i_denom = add(br, mul(bi, i_ratio))
    br_lt_bi = _b("lt", _u("abs", br), _u("abs", bi))
    cr = _sel(br_lt_bi, div(add(mul(ai, i_ratio), ar), i_denom), div(add(mul(ar, r_ratio), ai), r_denom))
    ci = _sel(br_lt_bi, div(sub(ai, mul(ar, i_ratio)), i_denom), div(sub(mul(ai, r_ratio), ar), r_denom))

    def isnan(v):
        return _b("ne", v, v)

    def copysign(v, s):
        return _b("copysign", v, s)
    # 1. zero denominator (and a numerator that is not NaN in both parts)
    zero_den = _b("and", _b("and", _b("eq", br, zero), _b("eq", bi, zero)),
                  _b("or", _u("not", isnan(ar)), _u("not", isnan(ai))))
    inf_br = copysign(inf, br)
    zr, zi = mul(inf_br, ar), mul(inf_br, ai)
    # 2. infinite numerator, finite denominator
    a_r_inf, a_i_inf = _b("eq", _u("abs", ar), inf), _b("eq", _u("abs", ai), inf)
    b_fin = _b("and", _b("lt", _u("abs", br), inf), _b("lt", _u("abs", bi), inf))
    inf_num = _b("and", _b("or", a_r_inf, a_i_inf), b_fin)
    ar_s, ai_s = copysign(_sel(a_r_inf, zero, one), ar), copysign(_sel(a_i_inf, zero, one), ai)
    nr, ni = mul(inf, add(mul(ar_s, br), mul(ai_s, bi))), mul(inf, sub(mul(ai_s, br), mul(ar_s, bi)))
    # 3. finite numerator, infinite denominator
    b_r_inf, b_i_inf = _b("eq", _u("abs", br), inf), _b("eq", _u("abs", bi), inf)
    a_fin = _b("and", _b("lt", _u("abs", ar), inf), _b("lt", _u("abs", ai), inf))
    inf_den = _b("and", _b("or", b_r_inf, b_i_inf), a_fin)
    br_s, bi_s = copysign(_sel(b_r_inf, zero, one), br), copysign(_sel(b_i_inf, zero, one), bi)
    fr, fi = mul(zero, add(mul(ar, br_s), mul(ai, bi_s))), mul(zero, sub(mul(ai, br_s), mul(ar, bi_s)))

    both_nan = _b("and", isnan(cr), isnan(ci))
    pick_z, pick_n, pick_f = (_b("and", both_nan, c) for c in (zero_den, inf_num, inf_den))
    pick_n = _b("and", pick_n, _u("not", pick_z))
    pick_f = _b("and", pick_f, _b("and", _u("not", pick_z), _u("not", pick_n)))
    for pick, (vr, vi) in ((pick_f, (fr, fi)), (pick_n, (nr, ni)), (pick_z, (zr, zi))):
        cr, ci = _sel(pick, cr, vr), _sel(pick, ci, vi)
    return complex(cr, ci)


_COMPLEX_DIV = []


def _complex_div_fn():
    """Complex ``x / y`` by XLA's algorithm, with JAX's derivative ``(tx - out * ty) / y``."""
    if not _COMPLEX_DIV:
        @custom_jvp
        def cdiv(x, y):
            return _complex_div(x, y)

        @cdiv.defjvp
        def _jvp(primals, tangents):
            (x, y), (tx, ty) = primals, tangents
            out = _complex_div(x, y)
            return out, _b("div", _b("sub", tx, _b("mul", out, ty)), y)
        _COMPLEX_DIV.append(cdiv)
    return _COMPLEX_DIV[0]


@_export
def rem(x, y):
    """Remainder of truncating division, with the sign of the dividend ``x`` (``jax.lax.rem``: C
    ``fmod``; NumPy's ``remainder`` takes the divisor's sign instead).

    Integer ``rem(x, 0)`` is ``x`` and ``rem(INT_MIN, -1)`` is 0, as XLA; float ``rem(x, 0)`` is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.rem(np.array([-7, 7, -7, 7]), np.array([3, 3, -3, -3]))
    Array([-1,  1, -1,  1])
    """
    x, y = _pair("rem", x, y, "iuf")
    r = _b("fmod", x, y)
    if dtypes.kind(aval(x).dtype) == "f":
        return r
    return _sel(_b("eq", y, _c(0, y)), r, x)


@_export
def pow(x, y):  # noqa: A001  (jax.lax's name)
    """``x ** y`` (``jax.lax.pow``): ``x`` inexact; ``y`` of ``x``'s dtype, or an integer array
    (converted to ``x``'s dtype, as JAX).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.pow(np.array([2.0, 4.0]), np.array([3, -1], np.int32))
    Array([8.  , 0.25])
    """
    if dtypes.is_python_scalar(x) and not dtypes.is_python_scalar(y):
        x = _weak_to(x, y)
    y = _weak_to(y, x)
    x = to_operand(x)
    _check_kinds("pow", _INEXACT, x)
    _check_kinds("pow", _NUM, y)
    dx, dy = aval(x).dtype, aval(y).dtype
    if dtypes.kind(dy) in "iu":
        y = _as(y, dx)
    elif dx != dy:
        raise TypeError("the first argument to pow must have an inexact dtype (float or complex), and the second "
                        "argument must have an inexact or integer dtype, and two inexact dtypes must match, but "
                        f"got {dx.name} and {dy.name} respectively.")
    return _b("pow", x, y)


def _complex_extremum(x, y, cmp):
    """JAX's complex max/min: lexicographic on (real, imag); comparisons with NaN are false and pick ``y``."""
    rx, ry = _u("real", x), _u("real", y)
    pick_x = _sel(_b("eq", rx, ry), _b(cmp, rx, ry), _b(cmp, _u("imag", x), _u("imag", y)))
    return _sel(pick_x, y, x)


@_export
def max(x, y):  # noqa: A001
    """Elementwise maximum (``jax.lax.max``): NaN propagates, +0.0 is above -0.0; complex operands
    compare lexicographically (real part first).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.max(np.array([-0.0, 1.0, np.nan]), np.array([0.0, 2.0, 3.0]))
    Array([ 0.,  2., nan])
    """
    x, y = _pair("max", x, y, _ANY)
    kind = dtypes.kind(aval(x).dtype)
    if kind == "c":
        return _complex_extremum(x, y, "gt")
    out = _b("max", x, y)
    if kind != "f":
        return out
    # Ties of zeros of either sign: (x + y) / 2 is +0.0 unless both are -0.0 (IEEE maximum), and its
    # derivative splits the tangent evenly, as JAX's max does on ties.
    zero_tie = _b("and", _b("eq", x, y), _b("eq", x, _c(0, x)))
    return _sel(zero_tie, out, _b("mul", _b("add", x, y), _c(0.5, x)))


@_export
def min(x, y):  # noqa: A001
    """Elementwise minimum (``jax.lax.min``): NaN propagates, -0.0 is below +0.0; complex operands
    compare lexicographically (real part first).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.min(np.array([0.0, 1.0, np.nan]), np.array([-0.0, 2.0, 3.0]))
    Array([-0.,  1., nan])
    """
    x, y = _pair("min", x, y, _ANY)
    kind = dtypes.kind(aval(x).dtype)
    if kind == "c":
        return _complex_extremum(x, y, "lt")
    out = _b("min", x, y)
    if kind != "f":
        return out
    zero_tie = _b("and", _b("eq", x, y), _b("eq", x, _c(0, x)))
    # -((-x) + (-y)) / 2 is -0.0 unless both are +0.0 (IEEE minimum); even tangent split as JAX.
    return _sel(zero_tie, out, _u("neg", _b("mul", _b("add", _u("neg", x), _u("neg", y)), _c(0.5, x))))


@_export
def atan2(x, y):
    """``arctan2(x, y)`` elementwise (``jax.lax.atan2``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> float(lax.atan2(np.float64(1.0), np.float64(1.0)))  # pi / 4
    0.7853981633974483
    """
    x, y = _pair("atan2", x, y, _INEXACT)
    if dtypes.kind(aval(x).dtype) == "c":
        raise NotImplementedError("lax.atan2 of complex operands is not implemented in tracejit")
    return _b("atan2", x, y)


@_export
def nextafter(x1, x2):
    """The next float after ``x1`` towards ``x2`` (``jax.lax.nextafter``); ``x2`` where they are equal
    (so ``nextafter(0.0, -0.0)`` is -0.0), as C's ``nextafter``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.nextafter(np.float32(1.0), np.float32(2.0)) - 1
    Array(1.1920929e-07, dtype=float32)
    """
    x, y = _pair("nextafter", x1, x2, _FLOAT)
    return _sel(_b("eq", x, y), _b("nextafter", x, y), y)


def _unary(name, kinds, doc, prim_name=None, accuracy=False):
    prim = prim_name or name

    if accuracy:
        def fn(x, accuracy=None):
            return _u(prim, _one(name, x, kinds))
    else:
        def fn(x):
            return _u(prim, _one(name, x, kinds))
    fn.__name__ = fn.__qualname__ = name
    note = ("\n\n``accuracy`` (JAX's choice among implementations on accelerators) is accepted and "
            "has no effect." if accuracy else "")
    fn.__doc__ = (f"{doc} (``jax.lax.{name}``).{note}\n\nExamples\n--------\n"
                  f">>> lax.{name}(x)  # doctest: +SKIP\n")
    return fn


for _n, _kinds, _d, _acc in (
        ("neg", _NUM, "-x", False), ("floor", _FLOAT, "floor", False), ("ceil", _FLOAT, "ceil", False),
        ("is_finite", _FLOAT, "isfinite", False), ("exp", _INEXACT, "e**x", True),
        ("exp2", _INEXACT, "2**x", True), ("expm1", _INEXACT, "e**x - 1", True),
        ("log", _INEXACT, "natural log", True), ("log1p", _INEXACT, "log(1 + x)", True),
        ("sin", _INEXACT, "sine", True), ("cos", _INEXACT, "cosine", True), ("tan", _INEXACT, "tangent", True),
        ("tanh", _INEXACT, "tanh", True), ("sinh", _INEXACT, "sinh", False), ("cosh", _INEXACT, "cosh", False),
        ("asin", _INEXACT, "arcsin", False), ("acos", _INEXACT, "arccos", False),
        ("atan", _INEXACT, "arctan", False), ("asinh", _INEXACT, "arcsinh", False),
        ("acosh", _INEXACT, "arccosh", False), ("atanh", _INEXACT, "arctanh", False),
        ("sqrt", _INEXACT, "square root", True), ("cbrt", _FLOAT, "cube root", True),
        ("erf", _FLOAT, "error function", False), ("real", "c", "real part", False),
        ("imag", "c", "imaginary part", False), ("square", _NUM, "x * x", False)):
    globals()[_n] = _unary(_n, _kinds, _d, accuracy=_acc)
    __all__.append(_n)
bitwise_not = _unary("bitwise_not", _BOOL_OR_INT, "bitwise (logical, for bool) not", "not")
__all__.append("bitwise_not")


@_export
def logistic(x, accuracy=None):
    """``1 / (1 + exp(-x))`` (``jax.lax.logistic``); complex operands use that formula, as JAX.
    ``accuracy`` is accepted and has no effect.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.logistic(np.array([0.0]))
    Array([0.5])
    """
    x = _one("logistic", x, _INEXACT)
    if dtypes.kind(aval(x).dtype) == "f":
        return _u("logistic", x)
    one = _c(1, x)
    return _div(one, _b("add", one, exp(_u("neg", x))))


@_export
def sign(x):
    """Sign of each element (``jax.lax.sign``): -1, 0 or 1 for integers; for floats -1.0 or 1.0, or
    ``x`` itself where it is a zero (so ``sign(-0.0)`` is -0.0) or NaN; for complex ``x / |x|``
    (``x`` where ``|x| == 0``). Its derivative is zero.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.sign(np.array([-2.0, -0.0, 0.0, 3.0]))
    Array([-1., -0.,  0.,  1.])
    """
    x = _one("sign", x, _NUM)
    kind = dtypes.kind(aval(x).dtype)
    if kind == "f":
        return _b("copysign", _u("sign", x), x)      # sign's derivative is zero; copysign's is then too
    if kind != "c":
        return _u("sign", x)
    x = stop_gradient(x)
    a = _u("abs", x)
    unit = complex(_b("div", _u("real", x), a), _b("div", _u("imag", x), a))
    return _sel(_b("eq", a, _c(0, a)), unit, x)


@_export
def abs(x):  # noqa: A001
    """Absolute value (``jax.lax.abs``); signed integers, floats and complex (whose result is real,
    NaN where either part is NaN, as XLA).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.abs(np.array([3 + 4j, complex(np.inf, np.nan)]))
    Array([ 5., nan])
    """
    x = _one("abs", x, "ifc")
    out = _u("abs", x)
    if dtypes.kind(aval(x).dtype) != "c":
        return out
    re, im = _u("real", x), _u("imag", x)
    has_nan = _b("or", _b("ne", re, re), _b("ne", im, im))
    return _sel(has_nan, out, _c(np.nan, out))


@_export
def conj(x):
    """Complex conjugate (``jax.lax.conj``); a float32/float64 operand becomes ``complex(x, 0)``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.conj(np.array([1.0 + 2.0j]))
    Array([1.-2.j])
    """
    x = to_operand(x)
    dt = aval(x).dtype
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)) and dtypes.kind(dt) != "c":
        raise TypeError(f"conj does not accept dtype {dt.name}. Accepted dtypes are subtypes of float32, "
                        "complexfloating, float64.")
    if dtypes.kind(dt) == "f":
        return _as(x, np.complex64 if dt == np.float32 else np.complex128)
    return _u("conj", x)


@_export
def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
    """Round to an integral value (``jax.lax.round``).

    ``rounding_method`` (a ``lax.RoundingMethod`` or its int value) picks the halfway rule:
    ``AWAY_FROM_ZERO`` (0, the default: 0.5 -> 1.0, -2.5 -> -3.0) or ``TO_NEAREST_EVEN`` (1:
    0.5 -> 0.0, 2.5 -> 2.0, NumPy's ``rint``). Signed zeros are kept (-0.4 -> -0.0); the
    derivative is zero.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.round(np.array([0.5, 1.5, 2.5, -2.5]))
    Array([ 1.,  2.,  3., -3.])
    >>> lax.round(np.array([0.5, 1.5, 2.5, -2.5]), lax.RoundingMethod.TO_NEAREST_EVEN)
    Array([ 0.,  2.,  2., -2.])
    """
    method = RoundingMethod(rounding_method)
    x = _one("round", x, _FLOAT)
    if method == RoundingMethod.TO_NEAREST_EVEN:
        return _u("round", x)
    t = _u("trunc", x)
    # x - trunc(x) is exact; at least one half away from t rounds away from zero (NaN/inf: no).
    away = _b("ge", _u("abs", _b("sub", x, t)), _c(0.5, x))
    return _sel(away, t, _b("add", t, _u("sign", x)))


@_export
def rsqrt(x, accuracy=None):
    """``1 / sqrt(x)`` (``jax.lax.rsqrt``); ``accuracy`` is accepted and has no effect.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.rsqrt(np.array([4.0]))
    Array([0.5])
    """
    x = _one("rsqrt", x, _INEXACT)
    return _div(_c(1, x), _u("sqrt", x))


def _integer_pow_chain(x, y):
    """``x ** y`` by JAX's own sequence of products (its lowering of ``integer_pow``)."""
    if y == 0:
        return broadcast_in_dim(_c(1, x), aval(x).shape, ())          # ones, even for NaN and inf
    if y == 1:
        return x
    if y == 2:
        return _b("mul", x, x)
    if y == 3:
        return _b("mul", _b("mul", x, x), x)
    if y == -1:
        return _div(_c(1, x), x)
    n, acc = (-y if y < 0 else y), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else _b("mul", acc, x)
        n >>= 1
        if n > 0:
            x = _b("mul", x, x)
    return _div(_c(1, acc), acc) if y < 0 else acc


_INTEGER_POW = {}


def _integer_pow_fn(y):
    """``x -> x ** y`` with JAX's derivative ``y * x ** (y - 1)`` (not the product rule of the chain)."""
    fn = _INTEGER_POW.get(y)
    if fn is None:
        @custom_jvp
        def fn(x):
            return _integer_pow_chain(x, y)

        @fn.defjvp
        def _jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            out = _integer_pow_chain(x, y)
            if y == 0:
                return out, _b("mul", t, _c(0, x))
            if y == 1:
                return out, t
            if y == 2:
                return out, _b("mul", t, _b("mul", _c(2, x), x))
            return out, _b("mul", t, _b("mul", _c(y, x), _integer_pow_chain(x, y - 1)))
        _INTEGER_POW[y] = fn
    return fn


@_export
def integer_pow(x, y: int):
    """``x ** y`` for a static integer exponent (``jax.lax.integer_pow``), computed by JAX's sequence
    of multiplications (repeated squaring; ``1 / x ** -y`` for negative ``y``), so results match
    JAX's bit for bit. Integer operands need ``y >= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.integer_pow(np.array([2.0, -3.0]), 3)
    Array([  8., -27.])
    """
    x = _one("integer_pow", x, _NUM)
    y = operator.index(y)
    if y < 0 and dtypes.kind(aval(x).dtype) in "iu":
        raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({aval(x)}, {y})")
    if dtypes.kind(aval(x).dtype) in "iu":
        return _integer_pow_chain(x, y)           # no derivative: integers
    return _integer_pow_fn(y)(x)


@_export
def convert_element_type(operand, new_dtype):
    """Cast to ``new_dtype`` (``jax.lax.convert_element_type``).

    Complex to real (and to bool) takes the real part, as XLA. Float to integer truncates toward
    zero; NaN and values outside the target's range give implementation-defined results (XLA's CPU
    backend saturates, tracejit follows C casts).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.convert_element_type(np.array([1.7, -1.7]), np.int32)
    Array([ 1, -1], dtype=int32)
    """
    x = to_operand(operand)
    new = dtypes.canonical(new_dtype)
    if not dtypes.is_python_scalar(x) and dtypes.kind(aval(x).dtype) == "c" and dtypes.kind(np.dtype(new)) == "b":
        return _b("ne", _u("real", x), np.zeros((), _REAL_OF_COMPLEX[aval(x).dtype])[()])
    return convert_element_type_p.bind(x, new_dtype=new, weak_type=False)


_REAL_OF_COMPLEX = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


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
    lhs, rhs = widen_to_preferred(preferred_element_type, to_operand(lhs), to_operand(rhs))
    out = dot_general_p.bind(lhs, rhs,
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
def complex(x, y):  # noqa: A001
    """``x + 1j * y`` built exactly from float32 or float64 parts (``jax.lax.complex``): every real
    and imaginary part, signed zeros, infinities and NaN included, lands unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.complex(np.array([1.0, 0.0]), np.array([2.0, np.inf]))
    Array([1. +2.j, 0.+infj])
    """
    x, y = _pair("complex", x, y, _FLOAT)
    dt = aval(x).dtype
    if dt not in COMPLEX_OF_REAL:
        raise TypeError(f"complex does not accept dtype {dt.name} at position 0. Accepted dtypes at position 0 "
                        "are subtypes of float32, float64.")
    return complex_from_parts(x, y)

