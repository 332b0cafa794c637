"""Constant folding and algebraic identities that are exact in IEEE arithmetic.

Only rewrites that give bit-identical results are made: ``x * 1``, ``x - 0``,
``x / 1``, ``x ** 1``, ``x ** 2 -> x * x``, ``x ** -1 -> 1 / x`` (real floats), and
for integers ``x + 0``.  Complex ``x * 1`` and ``x / 1`` are not identities (an
infinite part gives NaN, as in NumPy) and complex powers are left to ``pow``. Float ``x ** 3`` and ``x ** 4`` become products, as JAX's
``integer_pow`` computes them (not bit-exact: two roundings). ``x + 0.0`` is *not* an identity for floats (it turns
-0.0 into +0.0), so it stays.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.ir import Literal
from tracejit.core.primitive import ELEMENTWISE, impl_rules
from tracejit.ops.elementwise import binary_prims, convert_element_type_p
from tracejit.ops.structural import broadcast_in_dim_p, reshape_p, transpose_p, squeeze_p
from tracejit.compiler.passes.retrace import retrace


def _is_lit(v, value=None):
    if not isinstance(v, (np.generic, np.ndarray)) or np.ndim(v) != 0:
        return False
    return value is None or bool(v == value)


def _identity_rewrite(eqn, ins):
    p, name = eqn.primitive, eqn.primitive.name
    out_aval = eqn.outputs[0].aval if eqn.outputs else None
    if p is convert_element_type_p and hasattr(ins[0], "aval") and ins[0].aval.dtype == eqn.params["new_dtype"]:
        return [ins[0]]
    if p in (reshape_p, transpose_p, squeeze_p) and hasattr(ins[0], "aval") and ins[0].aval.shape == out_aval.shape \
            and (p is not transpose_p or eqn.params["permutation"] == tuple(range(len(out_aval.shape)))):
        return [ins[0]]
    if name == "select_n" and _is_lit(ins[0]):
        # A constant predicate picks its case (as select_n does: clamped index).
        case = ins[1 + min(max(int(ins[0]), 0), len(ins) - 2)]
        if hasattr(case, "aval") and case.aval.shape == out_aval.shape:
            return [case]
        if _is_lit(case):
            return [broadcast_in_dim_p.bind(case, shape=out_aval.shape, broadcast_dimensions=())]
        return None
    if len(ins) == 2 and name in ("mul", "add") and _is_lit(ins[0]) and hasattr(ins[1], "aval"):
        ins = [ins[1], ins[0]]      # both are commutative (bitwise, also for floats)
    if len(ins) != 2 or out_aval is None or not hasattr(ins[0], "aval") or ins[0].aval.shape != out_aval.shape:
        return None
    x, y = ins
    d = out_aval.dtype
    # x - (+0.0) is x, but x - (-0.0) turns -0.0 into +0.0.  A complex x * 1 or x / 1
    # is a full complex product/quotient: an infinite part makes NaNs (inf * 0).
    if (name == "mul" and _is_lit(y, 1) or name == "div" and _is_lit(y, 1)) and d.kind != "c" \
            or name == "sub" and _is_lit(y, 0) and not np.signbit(np.real(y)) and not np.signbit(np.imag(y)):
        return [x]
    if name == "add" and _is_lit(y, 0) and not dtypes.is_inexact(d):
        return [x]
    # Complex powers stay powers: NumPy's cpow special-cases zero bases and multiplies
    # without FMA, so z * z and 1 / z are not its results.
    if name == "pow" and d.kind == "f" and _is_lit(y):
        if y == 1:
            return [x]
        if y == 2:
            return [binary_prims["mul"].bind(x, x)]
        if y == -1:
            return [binary_prims["div"].bind(np.asarray(1, d)[()], x)]
        if d.kind == "f" and d.itemsize >= 4 and (y == 3 or y == 4):
            return [_power_by_products(x, int(y))]
    return None


def _power_by_products(x, n):
    """``x ** 3 = (x * x) * x`` and ``x ** 4 = (x * x) * (x * x)``: JAX's ``integer_pow``.

    Two roundings instead of one (at most about 1.5 ULP, within what NumPy's
    own vectorized ``power`` gives), at the cost of two multiplies instead of a
    general ``pow`` (GELU's ``x ** 3``).
    """
    square = binary_prims["mul"].bind(x, x)
    return binary_prims["mul"].bind(square, x if n == 3 else square)


def simplify(program):
    splats: dict[int, object] = {}   # id(traced value) -> scalar it is a broadcast of

    def as_scalar(v):
        return splats.get(id(v), v)

    def replace(eqn, ins):
        if eqn.primitive is broadcast_in_dim_p and _is_lit(ins[0]):
            out = broadcast_in_dim_p.bind(ins[0], **eqn.params)
            splats[id(out)] = ins[0]
            return [out]
        if eqn.primitive.name in ("mul", "div", "sub", "add") and len(ins) == 2:
            # x * broadcast(1.0) is x too; see through splatted literals of the output's shape.
            a, b = ins
            if id(b) in splats and hasattr(a, "aval") and a.aval.shape == eqn.outputs[0].aval.shape:
                r = _identity_rewrite(eqn, [a, as_scalar(b)])
                if r is not None:
                    return r
            if id(a) in splats and hasattr(b, "aval") and b.aval.shape == eqn.outputs[0].aval.shape \
                    and eqn.primitive.name in ("mul", "add"):
                r = _identity_rewrite(eqn, [b, as_scalar(a)])
                if r is not None:
                    return r
        if eqn.primitive in ELEMENTWISE and ins and all(_is_lit(a) for a in ins) \
                and all(v.aval.shape == () for v in eqn.outputs):
            outs = impl_rules[eqn.primitive](*ins, **eqn.params)
            return [np.asarray(o, v.aval.dtype)[()] for o, v in zip(outs, eqn.outputs)]
        return _identity_rewrite(eqn, ins)

    if not any(_might_simplify(e) for e in program.eqns):
        return program
    return retrace(program, replace, "simplify")


def _might_simplify(eqn):
    if any(isinstance(a, Literal) for a in eqn.inputs):
        return True
    return eqn.primitive in (convert_element_type_p, reshape_p, transpose_p, squeeze_p, broadcast_in_dim_p)

