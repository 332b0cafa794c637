"""Complex elementwise lowering rules, with NumPy's results.

In registers a complex value is a pair ``(re, im)`` of real values of the part
dtype (float32 for complex64, float64 for complex128): scalars, or two
``<VL x T>`` vectors so each part's arithmetic is plain vector code. In memory
an element is NumPy's interleaved ``[2 x T]``; vector loads fetch ``2*VL``
parts and split them into even (real) and odd (imaginary) lanes with
shufflevector, stores interleave them back.

The formulas are NumPy's own, so results match NumPy 2's array loops bit for
bit on x86-64 (special values included): multiplication and squaring fuse one
product into an FMA exactly as NumPy's SIMD loops do, division is Smith's
algorithm (no overflow for large operands, NumPy's branch order and
zero-divisor case), and ``abs`` is NumPy's overflow-free
``larger * sqrt(1 + (smaller/larger)**2)`` with the same FMA. Complex sums
accumulate a vector pair per reduction (see ``REDUCE_RULES``).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tracejit.core import dtypes
from tracejit.backends.cpu import lowering as L

I32 = ir.IntType(32)
_PART = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def is_complex(d) -> bool:
    return d.kind == "c"


def part_dtype(d: np.dtype) -> np.dtype:
    """The dtype of each of a complex dtype's two parts."""
    return _PART[d]


def memory_type(d: np.dtype) -> ir.Type:
    """One element as NumPy stores it: real part, then imaginary part."""
    return ir.ArrayType(L.scalar_type(part_dtype(d)), 2)


def const(d, value, lanes: int):
    value = complex(value)
    p = part_dtype(d)
    return L.const(p, value.real, lanes), L.const(p, value.imag, lanes)


def _as_pair(z, d):
    """Operands of complex dtype arrive as (re, im); anything else is a planner/codegen bug."""
    assert isinstance(z, tuple) and len(z) == 2, (z, d)
    return z


# ----------------------------------------------------------------------------- memory

def _shuffle_mask(indices):
    return ir.Constant(ir.VectorType(I32, len(indices)), [ir.Constant(I32, k) for k in indices])


def deinterleave(b, v):
    """``<2L x T>`` of interleaved parts -> (re, im) vectors of ``L`` lanes."""
    n = v.type.count // 2
    undef = ir.Constant(v.type, ir.Undefined)
    return (b.shuffle_vector(v, undef, _shuffle_mask(range(0, 2 * n, 2))),
            b.shuffle_vector(v, undef, _shuffle_mask(range(1, 2 * n, 2))))


def interleave(b, z):
    """(re, im) vectors of ``L`` lanes -> ``<2L x T>`` as stored in memory."""
    re, im = z
    n = re.type.count
    return b.shuffle_vector(re, im, _shuffle_mask([k for i in range(n) for k in (i, n + i)]))


def duplicate_lanes(b, mask):
    """A lane mask over elements -> the mask over their interleaved parts."""
    n = mask.type.count
    return b.shuffle_vector(mask, mask, _shuffle_mask([i for i in range(n) for _ in range(2)]))


def part_pointers(b, ptr, d):
    """Pointers to the real and imaginary part of the element at ``ptr``."""
    t = L.scalar_type(part_dtype(d))
    return ptr, b.gep(ptr, [ir.Constant(I32, 1)], source_etype=t)


def load(b, ptr, d, lanes: int):
    """Load ``lanes`` consecutive elements at ``ptr`` (one element: two scalar loads)."""
    t = L.scalar_type(part_dtype(d))
    align = part_dtype(d).itemsize
    if lanes == 1:
        return tuple(b.load(p, typ=t) for p in part_pointers(b, ptr, d))
    v = b.load(ptr, typ=ir.VectorType(t, 2 * lanes))
    v.align = align
    return deinterleave(b, v)


def store(b, ptr, d, z):
    if L.lanes_of(z[0]) == 1:
        for p, v in zip(part_pointers(b, ptr, d), z):
            b.store(v, p)
        return
    st = b.store(interleave(b, z), ptr)
    st.align = part_dtype(d).itemsize


# ----------------------------------------------------------------------------- arithmetic

def _fma(b, x, y, z):
    return L.intrinsic(b, "llvm.fma", [x, y, z])


def _add(b, x, y, d):
    return b.fadd(x[0], y[0]), b.fadd(x[1], y[1])


def _sub(b, x, y, d):
    return b.fsub(x[0], y[0]), b.fsub(x[1], y[1])


def _mul(b, x, y, d):
    # NumPy's SIMD loops: re = fma(xr, yr, -(xi*yi)), im = fma(xr, yi, xi*yr).
    (xr, xi), (yr, yi) = x, y
    return _fma(b, xr, yr, b.fneg(b.fmul(xi, yi))), _fma(b, xr, yi, b.fmul(xi, yr))


def _div(b, x, y, d):
    """Smith's algorithm as NumPy's loops write it: divide through by the larger divisor
    part so nothing overflows; NaN divisors take the second branch, as in NumPy."""
    (xr, xi), (yr, yi) = x, y
    lanes, p = L.lanes_of(xr), part_dtype(d)
    abs_yr, abs_yi = L.intrinsic(b, "llvm.fabs", [yr]), L.intrinsic(b, "llvm.fabs", [yi])
    real_dominates = b.fcmp_ordered(">=", abs_yr, abs_yi)
    # Branch 1 (|yr| >= |yi|) with (big, small, u, v) = (yr, yi, xr, xi), branch 2 with them swapped:
    #   re = (u + v*rat) * scl,  im = (v - u*rat) * scl (branch 1) or (u*rat - v) * scl (branch 2).
    big, small = b.select(real_dominates, yr, yi), b.select(real_dominates, yi, yr)
    u, v = b.select(real_dominates, xr, xi), b.select(real_dominates, xi, xr)
    rat = b.fdiv(small, big)
    scl = b.fdiv(L.const(p, 1.0, lanes), b.fadd(big, b.fmul(small, rat)))
    re = b.fmul(b.fadd(u, b.fmul(v, rat)), scl)
    u_rat = b.fmul(u, rat)
    im = b.fmul(b.fsub(b.select(real_dominates, v, u_rat), b.select(real_dominates, u_rat, v)), scl)
    # A zero divisor gives inf/NaN parts: x / |yr| partwise.
    zero_divisor = b.and_(real_dominates, b.fcmp_ordered("==", abs_yr, L.const(p, 0.0, lanes)))
    return b.select(zero_divisor, b.fdiv(xr, abs_yr), re), b.select(zero_divisor, b.fdiv(xi, abs_yr), im)


def _reciprocal(b, z, d):
    """NumPy's reciprocal loop (not 1/z by Smith's division, which rounds twice): where
    |im| <= |re|, r = im/re, den = re + im*r and the result is (1/den, -r/den); otherwise (NaN
    parts too) r = re/im, den = re*r + im and the result is (r/den, -1/den). So 1/0j is nan+nanj."""
    re, im = z
    lanes, p = L.lanes_of(re), part_dtype(d)
    one = L.const(p, 1.0, lanes)
    first = b.fcmp_ordered("<=", L.intrinsic(b, "llvm.fabs", [im]), L.intrinsic(b, "llvm.fabs", [re]))
    r1 = b.fdiv(im, re)
    d1 = b.fadd(re, b.fmul(im, r1))
    r2 = b.fdiv(re, im)
    d2 = b.fadd(b.fmul(re, r2), im)
    return (b.select(first, b.fdiv(one, d1), b.fdiv(r2, d2)),
            b.select(first, b.fdiv(b.fneg(r1), d1), b.fdiv(b.fneg(one), d2)))


def _eq(b, x, y, d):
    return b.and_(b.fcmp_ordered("==", x[0], y[0]), b.fcmp_ordered("==", x[1], y[1]))


def _ne(b, x, y, d):
    return b.or_(b.fcmp_unordered("!=", x[0], y[0]), b.fcmp_unordered("!=", x[1], y[1]))


def _neg(b, z, d):
    return b.fneg(z[0]), b.fneg(z[1])


def _conj(b, z, d):
    return z[0], b.fneg(z[1])


def _square(b, z, d):
    return _mul(b, z, z, d)


def _modulus(b, z, d):
    """|z| as NumPy's SIMD loop computes it: larger * sqrt(fma(r, r, 1)) with r = smaller/larger
    (no overflow or underflow in between); inf if either part is infinite, even with a NaN."""
    p = part_dtype(d)
    lanes = L.lanes_of(z[0])
    ar, ai = (L.intrinsic(b, "llvm.fabs", [part]) for part in z)
    larger, smaller = L.intrinsic(b, "llvm.maxnum", [ar, ai]), L.intrinsic(b, "llvm.minnum", [ar, ai])
    zero, one, inf = (L.const(p, v, lanes) for v in (0.0, 1.0, np.inf))
    # 0/0 and inf/inf would make NaN ratios; both cases have the ratio's limit 0.
    no_ratio = b.or_(b.fcmp_ordered("==", larger, zero), b.fcmp_ordered("==", smaller, inf))
    ratio = b.select(no_ratio, zero, b.fdiv(smaller, larger))
    r = b.fmul(L.intrinsic(b, "llvm.sqrt", [_fma(b, ratio, ratio, one)]), larger)
    any_nan = b.or_(L.is_nan(b, ar), L.is_nan(b, ai))
    any_inf = b.or_(b.fcmp_ordered("==", ar, inf), b.fcmp_ordered("==", ai, inf))
    return b.select(any_inf, inf, b.select(any_nan, L.const(p, np.nan, lanes), r))


def _either_part(rule_name, combine):
    """A predicate of a complex number from the real rule on each part (NumPy's isnan, isinf, isfinite)."""
    def rule(b, z, d):
        p = part_dtype(d)
        re, im = (L.UNARY_RULES[rule_name](b, part, p, dtypes.bool_, {}) for part in z)
        return getattr(b, combine)(re, im)
    return rule


UNARY_RULES = {
    "neg": _neg, "conj": _conj, "square": _square, "abs": _modulus, "reciprocal": _reciprocal,
    "real": lambda b, z, d: z[0], "imag": lambda b, z, d: z[1],
    "is_nan": _either_part("is_nan", "or_"), "is_inf": _either_part("is_inf", "or_"),
    "is_finite": _either_part("is_finite", "and_"),
}
BINARY_RULES = {"add": _add, "sub": _sub, "mul": _mul, "div": _div, "eq": _eq, "ne": _ne}
# Reductions (op -> combine step). Products stay NumPy steps: starting from the identity
# 1+0j is not exact for infinities ((1+0j)*(inf+0j) has a NaN imaginary part, NumPy starts
# from the first element); complex max/min order lexicographically.
REDUCE_RULES = {"sum": _add}


# ----------------------------------------------------------------------------- conversion / select

def convert(b, x, src, dst):
    """Casts to, from and between complex dtypes, as ``ndarray.astype``."""
    if is_complex(src) and is_complex(dst):
        return tuple(L.convert(b, part, part_dtype(src), part_dtype(dst)) for part in x)
    if is_complex(dst):
        p = part_dtype(dst)
        re = L.convert(b, x, src, p)
        return re, L.const(p, 0.0, L.lanes_of(re))
    re, im = x
    if dst == dtypes.bool_:
        p = part_dtype(src)
        return b.or_(L.convert(b, re, p, dst), L.convert(b, im, p, dst))
    return L.convert(b, re, part_dtype(src), dst)     # other real targets take the real part


def _select_n(b, args, in_dtypes, out_dtype):
    which, cases = args[0], [_as_pair(c, out_dtype) for c in args[1:]]
    p = part_dtype(out_dtype)
    part_dtypes = [in_dtypes[0]] + [p] * len(cases)
    return tuple(L.emit(b, "select_n", [which] + [c[k] for c in cases], part_dtypes, p, {}) for k in (0, 1))


# ----------------------------------------------------------------------------- entry points

def supports(prim_name: str, in_dtypes, out_dtype) -> bool:
    """Native code for a primitive with a complex operand or result; anything else stays a NumPy step."""
    if any(d not in L.NATIVE_REAL_DTYPES and d not in _PART for d in list(in_dtypes) + [out_dtype]):
        return False
    if prim_name == "convert_element_type":
        return True
    if prim_name == "select_n":
        return all(is_complex(d) for d in in_dtypes[1:]) and not is_complex(in_dtypes[0])
    if not all(is_complex(d) for d in in_dtypes):
        return False
    return prim_name in (UNARY_RULES if len(in_dtypes) == 1 else BINARY_RULES)


def emit(b, prim_name, args, in_dtypes, out_dtype, params):
    if prim_name == "convert_element_type":
        return convert(b, args[0], in_dtypes[0], out_dtype)
    if prim_name == "select_n":
        return _select_n(b, args, in_dtypes, out_dtype)
    d = in_dtypes[0]
    if len(args) == 1:
        return UNARY_RULES[prim_name](b, _as_pair(args[0], d), d)
    return BINARY_RULES[prim_name](b, _as_pair(args[0], d), _as_pair(args[1], d), d)
