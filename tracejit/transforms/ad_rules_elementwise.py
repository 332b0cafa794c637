"""Differentiation rules of the elementwise primitives.

Every elementwise derivative is a multiplication by a partial derivative,
so one function ``partial(t, x, ..., out) -> t * df/dx`` serves both modes:
the JVP applies it to tangents, the VJP to cotangents. Complex values use
JAX's convention (cotangents are transposes, not adjoints: the VJP of a
holomorphic ``f`` multiplies by ``f'(z)``, with no conjugate), so
``grad(lambda z: abs(z) ** 2)(z) == 2 * conj(z)`` as in JAX.
"""
from __future__ import annotations

import math

from tracejit.ops.elementwise import binary_prims, convert_element_type_p, select_n_p, unary_prims
from tracejit.transforms.ad import aval_of, def_jvp, def_simple_vjp, is_differentiable
from tracejit.ops.binders import (add, binary, broadcast_to, c, convert, div, mul, neg, select,
                                        square, sub, un, unbroadcast)


def _rsqrt(v):
    return div(c(1, v), un("sqrt", v))


# name -> partial(t, x, y) = t * f'(x), where y = f(x)
UNARY_PARTIALS = {
    "exp": lambda t, x, y: mul(t, y),
    "exp2": lambda t, x, y: mul(t, mul(y, c(math.log(2), x))),
    "expm1": lambda t, x, y: mul(t, add(y, c(1, x))),
    "log": lambda t, x, y: div(t, x),
    "log1p": lambda t, x, y: div(t, add(x, c(1, x))),
    "log2": lambda t, x, y: div(t, mul(x, c(math.log(2), x))),
    "log10": lambda t, x, y: div(t, mul(x, c(math.log(10), x))),
    "sin": lambda t, x, y: mul(t, un("cos", x)),
    "cos": lambda t, x, y: neg(mul(t, un("sin", x))),
    "tan": lambda t, x, y: mul(t, add(c(1, x), square(y))),
    "tanh": lambda t, x, y: mul(t, sub(c(1, x), square(y))),
    "sinh": lambda t, x, y: mul(t, un("cosh", x)),
    "cosh": lambda t, x, y: mul(t, un("sinh", x)),
    "asin": lambda t, x, y: mul(t, _rsqrt(sub(c(1, x), square(x)))),
    "acos": lambda t, x, y: neg(mul(t, _rsqrt(sub(c(1, x), square(x))))),
    "atan": lambda t, x, y: div(t, add(c(1, x), square(x))),
    "asinh": lambda t, x, y: mul(t, _rsqrt(add(square(x), c(1, x)))),
    "acosh": lambda t, x, y: mul(t, _rsqrt(mul(sub(x, c(1, x)), add(x, c(1, x))))),
    "atanh": lambda t, x, y: div(t, sub(c(1, x), square(x))),
    "sqrt": lambda t, x, y: div(t, mul(y, c(2, y))),
    "cbrt": lambda t, x, y: mul(t, div(c(1 / 3, x), square(y))),
    "logistic": lambda t, x, y: mul(t, mul(y, sub(c(1, y), y))),
    "erf": lambda t, x, y: mul(t, mul(c(2 / math.sqrt(math.pi), x), un("exp", neg(square(x))))),
    "square": lambda t, x, y: mul(t, mul(x, c(2, x))),
}
# Piecewise-constant functions: derivative zero (as in JAX).
ZERO_DERIVATIVE_UNARY = ("sign", "floor", "ceil", "round", "trunc")


def _nonzero(v):
    """``v`` with zeros replaced by ones (JAX's ``_replace_zero``)."""
    return select(binary("eq", v, c(0, v)), c(1, v), v)


def _real_abs_partial(t, x):
    # JAX: select(x >= 0, t, -t), so the derivative at 0 is +1 (not sign(0) = 0).
    return select(binary("ge", x, c(0, x)), t, neg(t))


def _abs_jvp_factor(t, x, y):
    if aval_of(x).dtype.kind == "c":
        # d|z| = Re(conj(z) dz) / |z|, and 0 at z == 0 (as in JAX)
        return div(un("real", mul(un("conj", x), t)), _nonzero(y))
    return _real_abs_partial(t, x)


def _abs_vjp(ct, x, y):
    if aval_of(x).dtype.kind == "c":
        cd = aval_of(x).dtype
        return mul(convert(ct, cd), div(un("conj", x), convert(_nonzero(y), cd)))
    return _real_abs_partial(ct, x)


# Linear unary primitives: (apply to a tangent, transpose applied to a cotangent)
def _real_t(ct, x):
    return convert(ct, aval_of(x).dtype)


def _imag_t(ct, x):
    return mul(convert(ct, aval_of(x).dtype), c(-1j, x))


LINEAR_UNARY = {
    "neg": (neg, lambda ct, x: neg(ct)),
    "conj": (lambda t: un("conj", t), lambda ct, x: un("conj", ct)),
    "real": (lambda t: un("real", t), _real_t),
    "imag": (lambda t: un("imag", t), _imag_t),
}


def _register_unary(name, jvp_partial, vjp_partial):
    prim = unary_prims[name]

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = prim.bind(x)
        return [y], [None if jvp_partial is None else jvp_partial(t, x, y)]

    def bwd(ct, needed, ins, outs):
        return [None if vjp_partial is None else vjp_partial(ct, ins[0], outs[0])]
    def_jvp(prim, jvp)
    def_simple_vjp(prim, bwd)


for _name, _partial in UNARY_PARTIALS.items():
    _register_unary(_name, _partial, _partial)
for _name in ZERO_DERIVATIVE_UNARY:
    _register_unary(_name, None, None)
_register_unary("abs", _abs_jvp_factor, _abs_vjp)
for _name, (_apply, _transpose) in LINEAR_UNARY.items():
    _register_unary(_name, lambda t, x, y, _f=_apply: _f(t), lambda ct, x, y, _f=_transpose: _f(ct, x))


# --------------------------------------------------------------------------- binary

def _balanced_eq(x, z, y):
    """1 where x attains the extremum z alone, 0.5 where x and y tie (JAX's rule)."""
    one, half, zero = c(1, x), c(0.5, x), c(0, x)
    return select(binary("eq", x, z), select(binary("eq", y, z), half, one), zero)


def _pow_dx(t, x, y, out):
    d = mul(y, binary("pow", x, sub(y, c(1, y))))
    # d/dx x**0 is 0 even at x == 0 (where y * x**(y-1) would be 0 * inf).
    return mul(t, select(binary("eq", y, c(0, y)), c(0, x), d))


def _pow_dy(t, x, y, out):
    # x == 0 contributes 0 (log(0) * 0**y would be nan), as in JAX.
    safe = select(binary("eq", x, c(0, x)), c(1, x), x)
    return mul(t, mul(un("log", safe), out))


def _atan2_partials():
    def denom(x, y):
        return add(square(x), square(y))
    return (lambda t, x, y, out: mul(t, div(y, denom(x, y))),
            lambda t, x, y, out: neg(mul(t, div(x, denom(x, y)))))


def _extremum_partials():
    return (lambda t, x, y, out: mul(t, _balanced_eq(x, out, y)),
            lambda t, x, y, out: mul(t, _balanced_eq(y, out, x)))


def _nan_ignoring_extremum_partials(cmp):
    """jnp.fmax / fmin are ``where((x > y) | isnan(y), x, y)`` in JAX (``<`` for fmin): ties go to ``y``."""
    def takes_x(x, y):
        return binary("or", binary(cmp, x, y), binary("ne", y, y))
    return (lambda t, x, y, out: select(takes_x(x, y), t, c(0, t)),
            lambda t, x, y, out: select(takes_x(x, y), c(0, t), t))


def _hypot_partial(t, a, out):
    # a / hypot; at hypot == 0 JAX's jnp.hypot (max * sqrt(1 + (min / max)**2) on |x|, |y|) gives 1/2.
    zero = binary("eq", out, c(0, out))
    return mul(t, select(zero, c(0.5, a), div(a, _nonzero(out))))


def _copysign_partial(t, x, y, out):
    # JAX: where(signbit(y), -abs(x), abs(x)) with abs'(0) = +1.
    flip = binary("ne", binary("ge", x, c(0, x)), binary("ge", binary("copysign", c(1, y), y), c(0, y)))
    return select(flip, neg(t), t)


# name -> (partial wrt x, partial wrt y), each (t, x, y, out) -> t * df/d(arg); None = zero
BINARY_PARTIALS = {
    "add": (lambda t, x, y, out: t, lambda t, x, y, out: t),
    "sub": (lambda t, x, y, out: t, lambda t, x, y, out: neg(t)),
    "mul": (lambda t, x, y, out: mul(t, y), lambda t, x, y, out: mul(t, x)),
    "div": (lambda t, x, y, out: div(t, y), lambda t, x, y, out: neg(mul(t, div(out, y)))),
    "pow": (_pow_dx, _pow_dy),
    "max": _extremum_partials(), "min": _extremum_partials(),
    "fmax": _nan_ignoring_extremum_partials("gt"), "fmin": _nan_ignoring_extremum_partials("lt"),
    "atan2": _atan2_partials(),
    "hypot": (lambda t, x, y, out: _hypot_partial(t, x, out), lambda t, x, y, out: _hypot_partial(t, y, out)),
    "copysign": (_copysign_partial, None),
    "nextafter": (lambda t, x, y, out: t, None),
    "floordiv": (None, None),
    # x - y * floor(x / y) and x - y * trunc(x / y)
    "rem": (lambda t, x, y, out: t, lambda t, x, y, out: neg(mul(t, un("floor", div(x, y))))),
    "fmod": (lambda t, x, y, out: t, lambda t, x, y, out: neg(mul(t, un("trunc", div(x, y))))),
}


def _register_binary(name, px, py):
    prim = binary_prims[name]

    def jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y)
        shape = aval_of(out).shape
        t_out = None
        for t, p in ((tx, px), (ty, py)):
            if t is not None and p is not None:
                t_out = add(t_out, broadcast_to(p(t, x, y, out), shape)) if t_out is not None else \
                    broadcast_to(p(t, x, y, out), shape)
        return [out], [t_out]

    def bwd(ct, needed, ins, outs):
        x, y = ins
        res = []
        for n, p, operand in zip(needed, (px, py), ins):
            res.append(unbroadcast(p(ct, x, y, outs[0]), aval_of(operand)) if n and p is not None else None)
        return res
    def_jvp(prim, jvp)
    def_simple_vjp(prim, bwd)


for _name, (_px, _py) in BINARY_PARTIALS.items():
    _register_binary(_name, _px, _py)


# --------------------------------------------------------------------------- select_n, convert

def _zero_scalar(like):
    return c(0, like)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    if all(t is None for t in tangents[1:]):
        return [out], [None]
    ts = [t if t is not None else _zero_scalar(cs) for t, cs in zip(tangents[1:], cases)]
    return [out], [broadcast_to(select_n_p.bind(which, *ts), aval_of(out).shape)]


def _select_n_bwd(ct, needed, ins, outs):
    which, *cases = ins
    zero = _zero_scalar(ct)
    res = [None]
    for i, (n, case) in enumerate(zip(needed[1:], cases)):
        if not n:
            res.append(None)
            continue
        picked = select_n_p.bind(which, *[ct if j == i else zero for j in range(len(cases))])
        res.append(unbroadcast(picked, aval_of(case)))
    return res


def_jvp(select_n_p, _select_n_jvp)
def_simple_vjp(select_n_p, _select_n_bwd)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if t is None or not is_differentiable(new_dtype):
        return [out], [None]
    return [out], [convert(t, new_dtype, weak_type)]


def _convert_bwd(ct, needed, ins, outs, *, new_dtype, weak_type=False):
    a = aval_of(ins[0])
    return [convert(ct, a.dtype, a.weak_type)]


def_jvp(convert_element_type_p, _convert_jvp)
def_simple_vjp(convert_element_type_p, _convert_bwd)
