"""Helpers shared by ``tracejit.scipy``: argument promotion and exact constants.

Special functions compute in float64 whatever the input precision and round
the result to the input's floating dtype once, so float32 results are
correctly rounded in almost every case (and the algorithms exist once).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

import tracejit.numpy as jnp
from tracejit.core import dtypes
from tracejit.numpy._util import aval, convert, to_operand, weak_pair

F64 = np.dtype(np.float64)


def result_float_dtype(*args):
    """The floating dtype of ``f(*args)``: NumPy promotion, integers and bools give float64."""
    ops = [to_operand(a) for a in args]
    dt, _ = dtypes.result_type(*(weak_pair(o) for o in ops))
    dt = np.dtype(dt)
    if dtypes.kind(dt) == "c":
        raise TypeError(f"complex inputs are not supported (got {dt.name})")
    if dtypes.kind(dt) != "f":
        dt = F64
    return dt


def promote_args_inexact(*args):
    """``(dtype, [args as float64 arrays])``: the result dtype and the operands upcast to float64."""
    dt = result_float_dtype(*args)
    return dt, [convert(to_operand(a), F64) for a in args]


def finish(x, dt):
    """Round a float64 result to ``dt`` (a NumPy scalar/array or a tracer)."""
    if dt == F64:
        return x
    return jnp.astype(x, dt)


def tangent_sum(terms, out):
    """The sum of a custom jvp rule's tangent terms, zeros like ``out`` when there are none (every
    input a symbolic zero)."""
    tangent = terms[0] if terms else jnp.zeros_like(out)
    for t in terms[1:]:
        tangent = tangent + t
    return tangent


def two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth's TwoSum: no ordering of |a|, |b|
    needed)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def expm1_ratio(t):
    """expm1(t) / t: its Taylor polynomial for |t| < 1e-3 (so also its derivative is right at 0)."""
    small = jnp.abs(t) < 1e-3
    ts = jnp.where(small, t, 0.0)
    taylor = 1.0 + ts * (1 / 2 + ts * (1 / 6 + ts * (1 / 24 + ts * (1 / 120 + ts / 720))))
    tl = jnp.where(small, 1.0, t)
    return jnp.where(small, taylor, jnp.expm1(tl) / tl)


def log1pmx(t):
    """log(1 + t) - t without cancellation near 0 (the special functions' and stats' shared helper)."""
    # the series on -1/2 < t < 1 (|u| < 1/3, 20 terms): log1p(t) - t itself loses ~8 eps at
    # t = 0.3 (betainc's quadrature evaluates it there, times a >= 100)
    small = (t > -0.5) & (t < 1.0)
    ts = jnp.where(small, t, 0.0)
    u = ts / (2.0 + ts)
    u2 = u * u
    s = jnp.zeros_like(u)
    for k in range(20, 0, -1):
        s = s * u2 + 1.0 / (2 * k + 1)
    # log1p(t) = 2u (1 + u^2/3 + ...), t = 2u / (1 - u)
    ser = -2.0 * u2 / (1.0 - u) + 2.0 * u * u2 * s
    tl = jnp.where(small, 0.0, t)
    return jnp.where(small, ser, jnp.log1p(tl) - tl)


def horner(coeffs, t):
    """``coeffs[0] * t**(n-1) + ... + coeffs[-1]`` (highest degree first)."""
    p = coeffs[0] * jnp.ones_like(t)
    for c in coeffs[1:]:
        p = p * t + c
    return p


def _bernoulli(n_max: int):
    """Exact Bernoulli numbers B_0..B_n_max (B_1 = -1/2), by the Akiyama-Tanigawa algorithm."""
    out = []
    a = [Fraction(0)] * (n_max + 1)
    for m in range(n_max + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    out[1] = -out[1] if n_max >= 1 else None  # the algorithm gives B_1 = +1/2
    return out


BERNOULLI = _bernoulli(40)
B2K = [float(BERNOULLI[2 * k]) for k in range(1, 21)]  # B_2, B_4, ..., B_40


def shape_dtype(x):
    return aval(to_operand(x))
