"""Selection, clipping, rounding, conversion and complex-part functions."""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.array import as_array_result, operand_result
from tracejit.core.tracer import jax_value
from tracejit.ops.composites import complex_from_parts
from tracejit.ops.elementwise import select_n_p, unary_prims
from tracejit.numpy._util import (aval, broadcast_operands, convert, eager, promote, to_operand, weak_pair)
from tracejit.numpy import ufuncs as U
from tracejit.transforms.api_ad import jvp as jvp_
from tracejit.transforms.ad_custom import custom_jvp


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """Elements of ``x`` where ``condition`` holds, else of ``y``.

    The one-argument form returns indices whose number depends on the data;
    under jit it needs ``size=`` (see :func:`nonzero`).
    """
    if x is None and y is None:
        from tracejit.numpy.sorting import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    if eager(condition, x, y):
        return np.where(condition, x, y)
    c = convert(to_operand(condition), dtypes.bool_)
    common, _ = dtypes.result_type(weak_pair(to_operand(x)), weak_pair(to_operand(y)))
    if dtypes.is_integer(common):
        x, y = _wrapped_python_int(x, common), _wrapped_python_int(y, common)
    xv, yv = promote(x, y)
    (c, xv, yv), shape = broadcast_operands(c, xv, yv)
    if aval(c).shape == () and shape != ():
        from tracejit.numpy.shape import broadcast_to
        c = broadcast_to(c, shape)
    return select_n_p.bind(c, yv, xv)


def _wrapped_python_int(v, dtype):
    # np.where casts a Python int to the result dtype unsafely: where(c, uint8_array, -1) has 255.
    if type(v) is not int:
        return v
    info = np.iinfo(dtype)
    if info.min <= v <= info.max:
        return v
    arr = np.asarray(v)
    if arr.dtype == object:
        raise OverflowError(f"Python int {v} too large to convert to C long")
    return arr.astype(dtype)[()]


def select(condlist, choicelist, default=0):
    """Elements from ``choicelist`` by the first true condition (``numpy.select``)."""
    if eager(*condlist, *choicelist):
        return np.select(condlist, choicelist, default)
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(c, v, out)
    return out


def clip(a, a_min=None, a_max=None, *, min=None, max=None):
    """Limit values to ``[a_min, a_max]`` (``minimum(maximum(a, lo), hi)``, as NumPy)."""
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if eager(a, lo, hi):
        return np.clip(a, lo, hi)
    out = to_operand(a)
    d = aval(out).dtype
    if dtypes.is_integer(d):
        # NumPy 2 drops a Python-int bound beyond the dtype's range on its own side
        # (clip(uint8, -1, 3) is minimum(a, 3)); one beyond the other side still overflows.
        info = np.iinfo(d)
        lo = None if type(lo) is int and lo <= info.min else lo
        hi = None if type(hi) is int and hi >= info.max else hi
        if lo is None and hi is None:
            return U.positive(out)
    if lo is None or hi is None or dtypes.is_complex(aval(out).dtype):
        # One bound: NumPy calls maximum/minimum (ties keep the bound's zero sign).
        if lo is not None:
            out = U.maximum(out, lo)
        if hi is not None:
            out = U.minimum(out, hi)
        return out
    # NumPy's clip loop converts all three operands to their common dtype first.
    common, _ = dtypes.result_type(*(weak_pair(to_operand(v)) for v in (out, lo, hi)))
    out = convert(out, common) if common != aval(out).dtype else out
    if dtypes.is_inexact(common):
        # A Python int beyond int64 cannot be a traced literal; as a float it is the same weak bound.
        lo, hi = (float(v) if type(v) is int and not -2**63 <= v < 2**63 else v for v in (lo, hi))
    else:
        for v in (lo, hi):
            if type(v) is int:
                np.asarray(v, dtype=common)  # OverflowError out of range, as NumPy's clip loop
    if dtypes.is_inexact(aval(out).dtype):
        if not _bounds_broadcast_as_scalars(a, lo, hi, common):
            # NumPy keeps ``a`` on ties only in its clip loop for two scalar bounds (stride 0);
            # with an array bound it is maximum then minimum, so a tie gives the bound
            # (clip(-0.0, zeros(n), 1) is 0.0 where clip(-0.0, 0.0, 1) is -0.0).
            return U.minimum(U.maximum(out, lo), hi)
        # JAX's clip is minimum(maximum(a, lo), hi): its derivative splits ties 0.5 / 0.5.
        return _clip_with_jax_derivative()(out, lo, hi)
    return _clip_two_bounds(out, lo, hi)


def _bounds_broadcast_as_scalars(a, lo, hi, common) -> bool:
    """Whether NumPy's clip loop sees both bounds with stride 0 (its scalar-bounds loop, which
    keeps ``a`` on ties). Over several elements: when each bound has one element. Over one
    element it depends on how NumPy iterates: operands of one shape (0-d ones aside) and no cast
    keep their own strides, so only 0-d bounds have stride 0; a cast (through a one-element
    buffer) into a result of two or more dims, or operands of different shapes (the general
    iterator), give every operand stride 0.
    A Python scalar is a 0-d operand that is never cast."""
    ops = [to_operand(v) for v in (a, lo, hi)]
    shapes = [aval(v).shape for v in ops]
    size = int(np.prod(np.broadcast_shapes(*shapes), dtype=np.int64))
    if size > 1:
        return all(int(np.prod(s, dtype=np.int64)) == 1 for s in shapes[1:])
    if len(np.broadcast_shapes(*shapes)) >= 2 and any(not dtypes.is_python_scalar(v) and aval(o).dtype != common
                                                        for v, o in zip((a, lo, hi), ops)):
        return True     # (NumPy 2.4, observed: a result of 2 or more dims only)
    if len({s for s in shapes if s}) > 1:
        return True
    return all(len(s) == 0 for s in shapes[1:])


def _clip_two_bounds(out, lo, hi):
    # Two bounds: NumPy's clip loop keeps ``a`` on ties (clip(-0.0, 0, 1) is -0.0, where maximum
    # would give 0.0) and propagates a NaN from ``a`` or from a bound.
    for bound, keep_of in ((lo, U.greater_equal), (hi, U.less_equal)):
        keep = keep_of(out, bound)
        out = where(U.logical_or(keep, U.isnan(out)) if dtypes.is_inexact(aval(out).dtype) else keep, out, bound)
    return out


_CLIP: list = []


def _clip_with_jax_derivative():
    """The two-bound clip with NumPy's values and the derivative of JAX's
    ``minimum(maximum(a, lo), hi)`` (ties at a bound split the derivative 0.5 / 0.5)."""
    if not _CLIP:

        def clip(x, lo, hi):
            return _clip_two_bounds(x, lo, hi)
        fn = custom_jvp(clip)

        @fn.defjvp
        def _clip_jvp(primals, tangents):
            return fn(*primals), jvp_(lambda x, lo, hi: U.minimum(U.maximum(x, lo), hi), primals, tangents)[1]
        _CLIP.append(fn)
    return _CLIP[0]


def round(a, decimals=0, out=None):
    """Round to ``decimals`` places, halves to even (``numpy.round``)."""
    if eager(a):
        return np.round(a, decimals)
    x = to_operand(a)
    d = aval(x).dtype
    if dtypes.is_bool(d):
        # NumPy rounds bools in float16 (its rint loop for bool is e->e); with decimals it cannot
        # write the scaled float back into a bool array.
        if decimals != 0:
            raise TypeError("round of a bool array with decimals != 0 (NumPy cannot cast the result to bool)")
        return unary_prims["round"].bind(convert(x, dtypes.float16))
    if not dtypes.is_inexact(d):
        if decimals >= 0:
            return x
        # Halves round to even, as NumPy: 25 -> 20, 35 -> 40, -25 -> -20.
        scale = np.asarray(10 ** (-decimals), d)[()]
        q = U.floor_divide(x, scale)
        twice_rem = U.multiply(U.subtract(x, U.multiply(q, scale)), 2)
        up = U.logical_or(U.greater(twice_rem, scale),
                          U.logical_and(U.equal(twice_rem, scale), U.equal(U.remainder(q, 2), 1)))
        return U.multiply(U.add(q, convert(up, d)), scale)
    if dtypes.is_complex(d):
        raise NotImplementedError("round of complex traced arrays is not supported")
    if decimals == 0:
        return unary_prims["round"].bind(x)
    scale = np.asarray(10.0 ** abs(decimals), d)[()]
    if decimals > 0:
        return U.true_divide(unary_prims["round"].bind(U.multiply(x, scale)), scale)
    return U.multiply(unary_prims["round"].bind(U.true_divide(x, scale)), scale)


around = round
round_ = round


def fix(x):
    """Round towards zero."""
    return U.trunc(x)


def astype(x, dtype, /, *, copy=True):
    """Convert ``x`` to ``dtype`` (NumPy casting: unsafe, like ``ndarray.astype``)."""
    if eager(x):
        return np.asarray(x).astype(dtype, copy=copy)
    return convert(to_operand(x), dtypes.canonical(dtype))


def _python_part(x):
    # NumPy's real/imag of a Python scalar is its ``.real``/``.imag`` attribute, a Python scalar:
    # int for bool and int, float for float and complex (a weak value).
    if dtypes.is_python_scalar(x):
        return int(x) if type(x) in (bool, int) else float(x)
    return convert(x, dtypes.int64 if dtypes.is_integer(aval(x).dtype) or dtypes.is_bool(aval(x).dtype)
                   else dtypes.float64, weak_type=True)


def _eager_part(out, val):
    # An Array of the part; a copy where it would view a writable NumPy argument (JAX arrays do not
    # change when the array they were made from is written later). Python scalars stay scalars.
    if not isinstance(out, np.ndarray):
        return out
    if type(val) is np.ndarray and val.flags.writeable and (out is val or out.base is not None
                                                             and np.may_share_memory(out, val)):
        out = out.copy()
    return as_array_result(out)


def real(val):
    """Real part (identity for real arrays)."""
    if eager(val):
        return _eager_part(np.real(val), val)
    x = to_operand(val)
    if dtypes.is_python_scalar(x):
        return _python_part(x.real)
    if aval(x).weak_type:
        return _python_part(unary_prims["real"].bind(x) if dtypes.is_complex(aval(x).dtype) else x)
    if dtypes.is_complex(aval(x).dtype):
        return unary_prims["real"].bind(x)
    # A JAX array even when ``val`` is a NumPy array under jit (a tracer of it, or a constant).
    return operand_result(jax_value(x))


def imag(val):
    """Imaginary part (zeros for real arrays)."""
    if eager(val):
        return _eager_part(np.imag(val), val)
    x = to_operand(val)
    if dtypes.is_python_scalar(x):
        return _python_part(x.imag)
    if dtypes.is_complex(aval(x).dtype):
        out = unary_prims["imag"].bind(x)
        return _python_part(out) if aval(x).weak_type else out
    from tracejit.numpy.creation import zeros_like
    return _python_part(zeros_like(x)) if aval(x).weak_type else zeros_like(x)


real._keeps_python_scalars = imag._keeps_python_scalars = True


def angle(z, deg=False):
    """Counter-clockwise angle from the positive real axis."""
    if eager(z):
        return np.angle(z, deg)
    x = to_operand(z)
    if not dtypes.is_inexact(aval(x).dtype):
        x = convert(x, dtypes.float64)
    out = U.arctan2(imag(x), real(x))
    return U.rad2deg(out) if deg else out


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN with ``nan`` and infinities with large finite numbers."""
    if eager(x):
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    v = to_operand(x)
    d = aval(v).dtype
    if not dtypes.is_inexact(d):
        return v
    if dtypes.is_complex(d):
        return complex_from_parts(nan_to_num(real(v), nan=nan, posinf=posinf, neginf=neginf),
                            nan_to_num(imag(v), nan=nan, posinf=posinf, neginf=neginf))
    fi = np.finfo(d)
    hi = fi.max if posinf is None else posinf
    lo = fi.min if neginf is None else neginf
    out = where(U.isnan(v), np.asarray(nan, d)[()], v)
    out = where(U.equal(out, np.asarray(np.inf, d)[()]), np.asarray(hi, d)[()], out)
    return where(U.equal(out, np.asarray(-np.inf, d)[()]), np.asarray(lo, d)[()], out)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (``numpy.isclose``)."""
    if eager(a, b):
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    a, b = promote(a, b)
    d = aval(a).dtype
    if not dtypes.is_inexact(d):
        a, b = convert(a, dtypes.float64), convert(b, dtypes.float64)
        d = dtypes.float64
    rd = np.dtype(d.char.lower()) if dtypes.is_complex(d) else d
    close = U.less_equal(U.absolute(U.subtract(a, b)),
                         U.add(np.asarray(atol, rd)[()], U.multiply(np.asarray(rtol, rd)[()], U.absolute(b))))
    # Infinities are close only to themselves; the tolerance formula gives NaN there.
    both_inf = U.logical_and(U.isinf(a), U.isinf(b))
    close = where(U.logical_or(U.isinf(a), U.isinf(b)), U.logical_and(both_inf, U.equal(a, b)), close)
    if equal_nan:
        close = U.logical_or(close, U.logical_and(U.isnan(a), U.isnan(b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if all elements are close (traced: returns a traced bool)."""
    if eager(a, b):
        return np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    from tracejit.numpy.reductions import all as all_
    return all_(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True if shapes and elements are equal."""
    if eager(a1, a2):
        return np.array_equal(a1, a2, equal_nan=equal_nan)
    a1, a2 = to_operand(a1), to_operand(a2)
    if aval(a1).shape != aval(a2).shape:
        return np.False_
    from tracejit.numpy.reductions import all as all_
    eq = U.equal(a1, a2)
    if equal_nan:
        eq = U.logical_or(eq, U.logical_and(U.isnan(a1), U.isnan(a2)))
    return all_(eq)


def copy(a, order="K"):
    """A copy of ``a`` (traced arrays are immutable, so the value itself)."""
    if eager(a):
        return np.copy(a)
    x = to_operand(a)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x

