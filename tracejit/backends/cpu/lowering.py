"""Elementwise lowering rules: primitive name -> LLVM IR, with NumPy semantics.

Each rule gets the IR builder, operand values (scalars or vectors), operand
dtypes and the output dtype. Values of dtype bool are ``i1`` in registers.
No fast-math flags are used anywhere: NaN and signed zeros behave as NumPy.

bfloat16 values are ``float`` in registers (widening is exact) and 16-bit integers in memory:
kernels only convert them (to float32, or from float32 by rounding to nearest even, as
ml_dtypes does) and select or move them; no primitive computes on bfloat16
(core/storage_dtypes.py).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from tracejit.core import dtypes
from tracejit.backends.cpu import mathlib, vecmath

I1 = ir.IntType(1)
_INT_TYPES = {1: ir.IntType(8), 2: ir.IntType(16), 4: ir.IntType(32), 8: ir.IntType(64)}


def scalar_type(dtype: np.dtype) -> ir.Type:
    """Register type of one element."""
    if dtype == dtypes.bool_:
        return I1
    if dtype == dtypes.float32 or dtype == dtypes.bfloat16:
        return ir.FloatType()
    if dtype == dtypes.float64:
        return ir.DoubleType()
    if dtype.kind in "iu":
        return _INT_TYPES[dtype.itemsize]
    raise NotImplementedError(f"no native codegen for dtype {dtype}")


def memory_type(dtype: np.dtype) -> ir.Type:
    """In-memory type of one element (bool is a byte, complex a [2 x T] pair, as in NumPy)."""
    if dtype.kind == "c":
        return lowering_complex.memory_type(dtype)
    if dtype == dtypes.bfloat16:
        return ir.IntType(16)
    return ir.IntType(8) if dtype == dtypes.bool_ else scalar_type(dtype)


def value_type(dtype, lanes: int) -> ir.Type:
    t = scalar_type(dtype)
    return t if lanes == 1 else ir.VectorType(t, lanes)


def const(dtype, value, lanes: int):
    if dtype.kind == "c":
        return lowering_complex.const(dtype, value, lanes)
    t = scalar_type(dtype)
    if dtype == dtypes.bool_:
        c = ir.Constant(t, int(bool(value)))
    elif dtype.kind in "iu":
        c = ir.Constant(t, int(np.asarray(value).astype(dtype).view(f"u{dtype.itemsize}")))
    else:
        c = ir.Constant(t, float(value))
    return c if lanes == 1 else vecmath.splat_constant(c, lanes)


def splat(builder, value, lanes: int):
    if lanes == 1:
        return value
    if isinstance(value, tuple):      # a complex (re, im) pair
        return tuple(splat(builder, part, lanes) for part in value)
    vt = ir.VectorType(value.type, lanes)
    v = builder.insert_element(ir.Constant(vt, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))


def select_value(builder, cond, x, y):
    """``cond ? x : y`` for any value, complex (re, im) pairs included."""
    if isinstance(x, tuple):
        return tuple(builder.select(cond, xp, yp) for xp, yp in zip(x, y))
    return builder.select(cond, x, y)


def extract_lane(builder, v, k: int):
    """Lane ``k`` of a vector value (of each part of a complex pair)."""
    if isinstance(v, tuple):
        return tuple(extract_lane(builder, part, k) for part in v)
    return builder.extract_element(v, ir.Constant(ir.IntType(32), k))


def lanes_of(v) -> int:
    return v.type.count if isinstance(v.type, ir.VectorType) else 1


def _type_suffix(t) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_type_suffix(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    return f"i{t.width}"


def intrinsic(builder, name, args, type_=None):
    """Call an LLVM intrinsic overloaded on its (scalar or vector) operand type."""
    t = type_ or args[0].type
    full = f"{name}.{_type_suffix(t)}"
    fn = builder.module.globals.get(full)
    if fn is None:
        fn = ir.Function(builder.module, ir.FunctionType(t, [a.type for a in args]), name=full)
    return builder.call(fn, args)


def prefetch(builder, ptr, locality: int = 3):
    """Prefetch the cache line at ``ptr`` for reading (``locality`` 3: into every level; 2: not into
    L1). A prefetch never faults: an address past a buffer's end is harmless."""
    fn = builder.module.globals.get("llvm.prefetch.p0")
    if fn is None:
        i32 = ir.IntType(32)
        fn = ir.Function(builder.module, ir.FunctionType(ir.VoidType(), [ir.PointerType(), i32, i32, i32]),
                         name="llvm.prefetch.p0")
    # read, the locality, data cache
    builder.call(fn, [ptr, ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), locality),
                      ir.Constant(ir.IntType(32), 1)])


def masked_intrinsic(module, kind, vt):
    """``llvm.masked.load`` / ``llvm.masked.store`` (``kind``) for vector type ``vt`` in ``module``."""
    name = f"llvm.masked.{kind}.{_type_suffix(vt)}.p0"
    fn = module.globals.get(name)
    if fn is None:
        mask_t = ir.VectorType(ir.IntType(1), vt.count)
        if kind == "load":
            fnty = ir.FunctionType(vt, [ir.PointerType(), ir.IntType(32), mask_t, vt])
        else:
            fnty = ir.FunctionType(ir.VoidType(), [vt, ir.PointerType(), ir.IntType(32), mask_t])
        fn = ir.Function(module, fnty, name=name)
    return fn


def tail_mask(b, j, stop, lanes: int):
    """The lanes ``j + l < stop`` of a vector step (i64 ``j``, ``stop``).

    The bound goes through an empty inline asm so the mask never becomes a constant, not even in a
    loop driver that inlines the kernel with known sizes: LLVM 22's x86 code generator turns a
    one-lane constant-mask load -> trunc -> masked store into a scalar store of the *wide* value
    (8 bytes for an int32 element: an out-of-bounds write; program fuzzer seed 6036976, a scan
    stacking uint64 -> int32 rows of 9 elements)."""
    i64 = ir.IntType(64)
    stop = b.asm(ir.FunctionType(i64, [i64]), "", "=r,0", [stop], side_effect=False)
    ramp = ir.Constant(ir.VectorType(i64, lanes), [ir.Constant(i64, k) for k in range(lanes)])
    return b.icmp_signed("<", b.add(splat(b, j, lanes), ramp), splat(b, stop, lanes))


def zero_bytes(b, ptr, nbytes) -> None:
    """``memset(ptr, 0, nbytes)`` (``nbytes``: an i64 value or an int)."""
    i8, i64 = ir.IntType(8), ir.IntType(64)
    fill = b.module.globals.get("llvm.memset.p0.i64") or ir.Function(
        b.module, ir.FunctionType(ir.VoidType(), [ir.PointerType(), i8, i64, I1]), name="llvm.memset.p0.i64")
    size = nbytes if isinstance(nbytes, ir.Value) else ir.Constant(i64, nbytes)
    b.call(fill, [ptr, ir.Constant(i8, 0), size, ir.Constant(I1, 0)])


def i64_table(module, name: str, values) -> ir.GlobalVariable:
    """A private constant array of the i64 ``values``, named ``name`` in ``module`` (made once):
    offsets generated code looks up instead of computing (a convolution's taps and lines)."""
    table = module.globals.get(name)
    if table is None:
        t = ir.ArrayType(ir.IntType(64), len(values))
        table = ir.GlobalVariable(module, t, name=name)
        table.initializer = ir.Constant(t, [int(v) for v in values])
        table.global_constant = True
        table.linkage = "private"
    return table


def load_i64(b, table, index):
    """Element ``index`` (an i64 value) of an :func:`i64_table`."""
    i64 = ir.IntType(64)
    return b.load(b.gep(table, [ir.Constant(i64, 0), index], source_etype=table.value_type), typ=i64)


def _is_float(d):
    return d.kind == "f"


def _signed(d):
    return d.kind == "i"


# ----------------------------------------------------------------------------- comparisons / select

_FCMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compare(b, op, x, y, d):
    if _is_float(d):
        return b.fcmp_unordered("!=", x, y) if op == "ne" else b.fcmp_ordered(_FCMP[op], x, y)
    if d == dtypes.bool_ or d.kind == "u":
        return b.icmp_unsigned(_FCMP[op], x, y)
    return b.icmp_signed(_FCMP[op], x, y)


def is_nan(b, x):
    return b.fcmp_unordered("uno", x, x)


def select_float(b, cond, x, y):
    """``cond ? x : y`` on floats, safe from LLVM's signed-zero min/max folds.

    InstCombine reads ``select(a < 0, 0.0, fpext(a))`` as a maximum and
    rewrites it to ``select(a <= 0, 0.0, a)``, which turns ``-0.0`` into
    ``+0.0`` (llvm/llvm-project#157254, open in LLVM 22; our fuzzer's seed
    4054491).  The rewrite needs a constant arm and a compare on the other
    arm's value, so every arm that is not a constant goes through
    ``llvm.arithmetic.fence``: the same value, but not one the pattern
    matcher can see through.  It costs at most a register move.
    """
    x_const, y_const = isinstance(x, ir.Constant), isinstance(y, ir.Constant)
    if not x_const:
        x = intrinsic(b, "llvm.arithmetic.fence", [x])
    if not y_const:
        # Also when neither arm is a constant here: LLVM's own constant folding can make one a
        # constant later (``minimum(zeros(int64) -> float64, x)``: fuzzer seed 9602661), so each
        # non-constant arm is fenced.
        y = intrinsic(b, "llvm.arithmetic.fence", [y])
    return b.select(cond, x, y)


def np_maximum(b, x, y, d, is_max=True):
    if _is_float(d):
        # As NumPy's loops: (x > y || isnan(x)) ? x : y  (< for minimum), so equal values,
        # e.g. maximum(0.0, -0.0), give the second operand.
        keep = b.or_(b.fcmp_ordered(">" if is_max else "<", x, y), is_nan(b, x))
        return select_float(b, keep, x, y)
    if d == dtypes.bool_:
        return b.or_(x, y) if is_max else b.and_(x, y)
    cmp = (b.icmp_signed if _signed(d) else b.icmp_unsigned)(">=" if is_max else "<=", x, y)
    return b.select(cmp, x, y)


# ----------------------------------------------------------------------------- integer division

def _int_floordiv_rem(b, x, y, d):
    """NumPy integer // and %: floor semantics; x // 0 == 0 and x % 0 == 0."""
    zero = const(d, 0, lanes_of(x))
    one = const(d, 1, lanes_of(x))
    y_zero = b.icmp_unsigned("==", y, zero)
    if not _signed(d):
        safe = b.select(y_zero, one, y)
        q, r = b.udiv(x, safe), b.urem(x, safe)
        return b.select(y_zero, zero, q), b.select(y_zero, zero, r)
    minus_one = const(d, -1, lanes_of(x))
    y_m1 = b.icmp_signed("==", y, minus_one)
    safe = b.select(b.or_(y_zero, y_m1), one, y)
    q, r = b.sdiv(x, safe), b.srem(x, safe)
    # Round the truncated quotient toward -inf when signs differ and it is inexact.
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("!=", b.icmp_signed("<", r, zero),
                                                                     b.icmp_signed("<", safe, zero)))
    q = b.select(adjust, b.sub(q, one), q)
    r = b.select(adjust, b.add(r, safe), r)
    q = b.select(y_m1, b.neg(x), q)      # x // -1 wraps like NumPy (MIN // -1 == MIN)
    r = b.select(y_m1, zero, r)
    return b.select(y_zero, zero, q), b.select(y_zero, zero, r)


def _c_fmod(b, x, y, d):
    """C's ``fmod`` (``frem``), whose invalid cases (x infinite, y zero; neither a NaN) give the x86
    default NaN (sign bit set), as NumPy's: with a constant divisor LLVM's expansion gave +NaN."""
    lanes = lanes_of(x)
    invalid = b.or_(b.fcmp_ordered("==", intrinsic(b, "llvm.fabs", [x]), const(d, float("inf"), lanes)),
                    b.fcmp_ordered("==", y, const(d, 0.0, lanes)))
    invalid = b.and_(invalid, b.fcmp_ordered("ord", x, y))
    return b.select(invalid, const(d, -float("nan"), lanes), b.frem(x, y))


def _float_divmod(b, x, y, d):
    """NumPy's npy_divmod for floats (floor division and modulo with Python signs)."""
    lanes = lanes_of(x)
    zero, one, half = const(d, 0.0, lanes), const(d, 1.0, lanes), const(d, 0.5, lanes)
    mod = _c_fmod(b, x, y, d)
    div = b.fdiv(b.fsub(x, mod), y)
    mod_nz = b.fcmp_unordered("!=", mod, zero)
    fix = b.and_(mod_nz, b.icmp_unsigned("!=", b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
    mod = b.select(fix, b.fadd(mod, y), mod)
    div = b.select(fix, b.fsub(div, one), div)
    mod = b.select(mod_nz, mod, intrinsic(b, "llvm.copysign", [zero, y]))
    floordiv = intrinsic(b, "llvm.floor", [div])
    floordiv = b.select(b.fcmp_ordered(">", b.fsub(div, floordiv), half), b.fadd(floordiv, one), floordiv)
    div_nz = b.fcmp_unordered("!=", div, zero)
    floordiv = b.select(div_nz, floordiv, intrinsic(b, "llvm.copysign", [zero, b.fdiv(x, y)]))
    y_zero = b.fcmp_ordered("==", y, zero)
    floordiv = b.select(y_zero, b.fdiv(x, y), floordiv)
    mod = b.select(y_zero, _c_fmod(b, x, y, d), mod)
    return floordiv, mod


# ----------------------------------------------------------------------------- conversions

def convert(b, x, src: np.dtype, dst: np.dtype):
    if src == dst:
        return x
    if src == dtypes.bfloat16:    # a float32 register holding the value exactly
        return convert(b, x, dtypes.float32, dst)
    if dst == dtypes.bfloat16:
        return round_to_bfloat16(b, convert(b, x, src, dtypes.float32))
    lanes = lanes_of(x)
    dt = value_type(dst, lanes)
    if dst == dtypes.bool_:
        if _is_float(src):
            return b.fcmp_unordered("!=", x, const(src, 0.0, lanes))
        return b.icmp_unsigned("!=", x, const(src, 0, lanes))
    if src == dtypes.bool_:
        return b.uitofp(x, dt) if _is_float(dst) else b.zext(x, dt)
    if _is_float(src) and _is_float(dst):
        return b.fpext(x, dt) if dst.itemsize > src.itemsize else b.fptrunc(x, dt)
    if _is_float(dst):
        return b.sitofp(x, dt) if _signed(src) else b.uitofp(x, dt)
    if _is_float(src):
        return _float_to_int(b, x, src, dst)
    if dst.itemsize > src.itemsize:
        return b.sext(x, dt) if _signed(src) else b.zext(x, dt)
    if dst.itemsize < src.itemsize:
        return b.trunc(x, dt)
    return x


def _float_to_int(b, x, src, dst):
    """C casts as x86 performs them: out-of-range and NaN give the 'integer indefinite' value."""
    lanes = lanes_of(x)
    via = dst if dst.kind == "i" and dst.itemsize >= 4 else (dtypes.int32 if dst.itemsize < 4 else dtypes.int64)
    big = None
    if dst == dtypes.uint64:
        # As gcc/clang compile NumPy's (npy_uint64)x on x86-64: x >= 2**63 converts x - 2**63 and
        # flips the top bit, anything else (NaN too) converts as int64. So NaN, -inf and values
        # below -2**63 give 2**63, and +inf and values >= 2**64 give 0 (the indefinite value, flipped).
        via = dtypes.int64
        two63 = const(src, 2.0 ** 63, lanes)
        big = b.fcmp_ordered(">=", x, two63)
        x = b.select(big, b.fsub(x, two63), x)
    info = np.iinfo(via)
    lo, hi = const(src, float(info.min), lanes), const(src, float(info.max) + 1.0, lanes)
    in_range = b.and_(b.fcmp_ordered(">=", x, lo), b.fcmp_ordered("<", x, hi))
    safe = b.select(in_range, x, const(src, 0.0, lanes))
    r = b.select(in_range, b.fptosi(safe, value_type(via, lanes)), const(via, info.min, lanes))
    if big is not None:
        return b.select(big, b.xor(r, const(via, info.min, lanes)), r)
    return convert(b, r, via, dst)


# ----------------------------------------------------------------------------- the rule table

def _ew_unary_float(name):
    def rule(b, x, d, out_d, params):
        return mathlib.call(b, name, [x])
    return rule


def _neg(b, x, d, od, p):
    return b.fneg(x) if _is_float(d) else b.neg(x)


def _abs(b, x, d, od, p):
    if _is_float(d):
        return intrinsic(b, "llvm.fabs", [x])
    if not _signed(d):
        return x
    return b.select(b.icmp_signed("<", x, const(d, 0, lanes_of(x))), b.neg(x), x)


def _sign(b, x, d, od, p):
    lanes = lanes_of(x)
    zero = const(d, 0, lanes)
    if _is_float(d):
        pos = b.select(b.fcmp_ordered(">", x, zero), const(d, 1.0, lanes), zero)
        s = b.select(b.fcmp_ordered("<", x, zero), const(d, -1.0, lanes), pos)
        return b.select(is_nan(b, x), x, s)
    if not _signed(d):
        return b.zext(b.icmp_unsigned("!=", x, zero), x.type)
    gt = b.zext(b.icmp_signed(">", x, zero), x.type)
    lt = b.zext(b.icmp_signed("<", x, zero), x.type)
    return b.sub(gt, lt)


def _not(b, x, d, od, p):
    return b.not_(x)


def _square(b, x, d, od, p):
    return b.fmul(x, x) if _is_float(d) else b.mul(x, x)


def _is_finite(b, x, d, od, p):
    if not _is_float(d):
        return const(dtypes.bool_, True, lanes_of(x))
    return b.fcmp_ordered("<", intrinsic(b, "llvm.fabs", [x]), const(d, np.inf, lanes_of(x)))


def _is_nan(b, x, d, od, p):
    if not _is_float(d):
        return const(dtypes.bool_, False, lanes_of(x))
    return is_nan(b, x)


def _is_inf(b, x, d, od, p):
    if not _is_float(d):
        return const(dtypes.bool_, False, lanes_of(x))
    return b.fcmp_ordered("==", intrinsic(b, "llvm.fabs", [x]), const(d, np.inf, lanes_of(x)))


def _signbit(b, x, d, od, p):
    it = ir.IntType(d.itemsize * 8)
    lanes = lanes_of(x)
    bits = b.bitcast(x, it if lanes == 1 else ir.VectorType(it, lanes))
    return b.icmp_signed("<", bits, ir.Constant(bits.type, 0) if lanes == 1 else
                         ir.Constant(bits.type, [ir.Constant(it, 0)] * lanes))


def _rounding(intr):
    def rule(b, x, d, od, p):
        return intrinsic(b, intr, [x])
    return rule


def _binary_arith(fop, iop):
    def rule(b, x, y, d, od, p):
        if _is_float(d):
            return getattr(b, fop)(x, y)
        if d == dtypes.bool_:
            return (b.or_ if iop == "add" else b.and_)(x, y)
        return getattr(b, iop)(x, y)
    return rule


def _floordiv(b, x, y, d, od, p):
    return (_float_divmod if _is_float(d) else _int_floordiv_rem)(b, x, y, d)[0]


def _rem(b, x, y, d, od, p):
    return (_float_divmod if _is_float(d) else _int_floordiv_rem)(b, x, y, d)[1]


def _fmod(b, x, y, d, od, p):
    if _is_float(d):
        return _c_fmod(b, x, y, d)
    zero, one = const(d, 0, lanes_of(x)), const(d, 1, lanes_of(x))
    bad = b.icmp_unsigned("==", y, zero)
    if _signed(d):
        bad = b.or_(bad, b.icmp_signed("==", y, const(d, -1, lanes_of(x))))
    safe = b.select(bad, one, y)
    r = b.srem(x, safe) if _signed(d) else b.urem(x, safe)
    return b.select(bad, zero, r)


def float_constant(value):
    """The Python float of a constant float operand (scalar or ``splat``), else None."""
    scalar = getattr(value, "splat_of", value)
    if (isinstance(scalar, ir.Constant) and not isinstance(scalar, ir.FormattedConstant)
            and isinstance(scalar.type, (ir.FloatType, ir.DoubleType))):
        return float(scalar.constant)
    return None


def _pow(b, x, y, d, od, p):
    if _is_float(d) and float_constant(y) in _HALF_INTEGER_POWERS:
        return _HALF_INTEGER_POWERS[float_constant(y)](b, x, d)
    return mathlib.call(b, "power", [x, y])


def _fma(b, x, y, z):
    return intrinsic(b, "llvm.fma", [x, y, z])


def _pow_half_integer(c):
    """``x ** c`` for c in (1.5, -0.5, -1.5) from IEEE sqrt and divisions with FMA residuals, within
    ~0.6 ULP of the exact power (NumPy's pow: ~0.7 here), where the general pow's double-double
    log and exp cost several times more per element (n-body's ``r2 ** -1.5``).

    With ``s = sqrt(x)`` and its exact residual ``r = x - s*s``, ``sqrt(x) = s + r / (2s)`` to
    second order; each product or quotient below is corrected by its own exact FMA residual, so
    only the final addition rounds at full weight. NumPy's special values (zeros, infinities,
    overflow to inf) are selected at the end: the residuals of an infinite intermediate are NaN.
    """
    def rule(b, x, d):
        lanes = _lanes(x)
        k = lambda v: const(d, v, lanes)        # noqa: E731
        s = intrinsic(b, "llvm.sqrt", [x])
        r = _fma(b, b.fneg(s), s, x)
        if c == 1.5:
            hi = b.fmul(x, s)
            lo = b.fadd(_fma(b, x, s, b.fneg(hi)), b.fmul(b.fmul(k(0.5), s), r))
            result, at_zero, at_inf = b.fadd(hi, lo), 0.0, np.inf
            overflow = hi
        else:
            q = b.fdiv(k(1.0), s)
            e = _fma(b, b.fneg(q), s, k(1.0))                      # 1/s = q (1 + e)
            # 1/sqrt(x) = q + q (e - r q^2 / 2); (r q / 2) q: no overflow of q^2 for subnormal x.
            corr = b.fmul(q, b.fsub(e, b.fmul(b.fmul(b.fmul(k(0.5), r), q), q)))
            if c == -0.5:
                result, overflow = b.fadd(q, corr), q
            else:                                                  # x^-1.5 = x^-0.5 / x
                t = b.fdiv(q, x)
                et = _fma(b, b.fneg(t), x, q)                      # q - t x, exactly
                result, overflow = b.fadd(t, b.fdiv(b.fadd(et, corr), x)), t
            at_zero, at_inf = np.inf, 0.0
        is_inf = lambda v: b.fcmp_ordered("==", intrinsic(b, "llvm.fabs", [v]), k(np.inf))  # noqa: E731
        result = b.select(is_inf(overflow), overflow, result)
        result = b.select(b.fcmp_ordered("==", x, k(0.0)), k(at_zero), result)     # +-0
        return b.select(is_inf(x), k(at_inf), result)                              # +-inf
    return rule


def _lanes(v) -> int:
    return v.type.count if isinstance(v.type, ir.VectorType) else 1


_HALF_INTEGER_POWERS = {c: _pow_half_integer(c) for c in (1.5, -0.5, -1.5)}


def _atan2(b, x, y, d, od, p):
    return mathlib.call(b, "arctan2", [x, y])


def _copysign(b, x, y, d, od, p):
    return intrinsic(b, "llvm.copysign", [x, y])


def _fmax(is_max):
    def rule(b, x, y, d, od, p):
        if not _is_float(d):
            return np_maximum(b, x, y, d, is_max)
        # Not llvm.maxnum: its choice between +0.0 and -0.0 is unspecified (and differs between
        # vector and scalar code). The first operand wins ties; a NaN loses to a number.
        keep_x = b.or_(b.fcmp_ordered(">=" if is_max else "<=", x, y), b.fcmp_unordered("uno", y, y))
        return b.select(keep_x, x, y)
    return rule


def _bitwise(op):
    def rule(b, x, y, d, od, p):
        return getattr(b, op)(x, y)
    return rule


def _shift(left):
    def rule(b, x, y, d, od, p):
        lanes = lanes_of(x)
        width = const(d, d.itemsize * 8, lanes)
        in_range = b.icmp_unsigned("<", y, width)
        safe = b.select(in_range, y, const(d, 0, lanes))
        if left:
            return b.select(in_range, b.shl(x, safe), const(d, 0, lanes))
        if _signed(d):
            shifted = b.ashr(x, safe)
            fill = b.select(b.icmp_signed("<", x, const(d, 0, lanes)), const(d, -1, lanes), const(d, 0, lanes))
            return b.select(in_range, shifted, fill)
        return b.select(in_range, b.lshr(x, safe), const(d, 0, lanes))
    return rule


def _cmp(op):
    def rule(b, x, y, d, od, p):
        return compare(b, op, x, y, d)
    return rule


def _max(is_max):
    def rule(b, x, y, d, od, p):
        return np_maximum(b, x, y, d, is_max)
    return rule


def _hypot(b, x, y, d, od, p):
    # Scale by the larger magnitude so squares neither overflow nor underflow.
    ax, ay = intrinsic(b, "llvm.fabs", [x]), intrinsic(b, "llvm.fabs", [y])
    big = intrinsic(b, "llvm.maxnum", [ax, ay])
    small = intrinsic(b, "llvm.minnum", [ax, ay])
    lanes = lanes_of(x)
    zero = const(d, 0.0, lanes)
    ratio = b.fdiv(small, b.select(b.fcmp_ordered("==", big, zero), const(d, 1.0, lanes), big))
    r = b.fmul(big, intrinsic(b, "llvm.sqrt", [b.fadd(const(d, 1.0, lanes), b.fmul(ratio, ratio))]))
    inf = const(d, np.inf, lanes)
    any_inf = b.or_(b.fcmp_ordered("==", ax, inf), b.fcmp_ordered("==", ay, inf))
    any_nan = b.or_(is_nan(b, x), is_nan(b, y))
    r = b.select(any_nan, b.fadd(x, y), r)
    return b.select(any_inf, inf, r)


UNARY_RULES = {
    "neg": _neg, "abs": _abs, "sign": _sign, "not": _not, "square": _square,
    "is_finite": _is_finite, "is_nan": _is_nan, "is_inf": _is_inf, "signbit": _signbit,
    "floor": _rounding("llvm.floor"), "ceil": _rounding("llvm.ceil"), "round": _rounding("llvm.rint"),
    "trunc": _rounding("llvm.trunc"),
}
_VEC_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
              "atanh": "arctanh"}
# Primitives lowered to calls of math-library helpers (compiled once per vector type).
MATH_HELPER_PRIMS = {"pow", "atan2"}
for _n in ("exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sinh",
           "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sqrt", "cbrt", "logistic", "erf"):
    if _VEC_NAMES.get(_n, _n) in vecmath.SUPPORTED_UNARY:
        UNARY_RULES[_n] = _ew_unary_float(_VEC_NAMES.get(_n, _n))
        MATH_HELPER_PRIMS.add(_n)

BINARY_RULES = {
    "add": _binary_arith("fadd", "add"), "sub": _binary_arith("fsub", "sub"),
    "mul": _binary_arith("fmul", "mul"), "div": lambda b, x, y, d, od, p: b.fdiv(x, y),
    "floordiv": _floordiv, "rem": _rem, "fmod": _fmod, "pow": _pow, "atan2": _atan2,
    "max": _max(True), "min": _max(False), "fmax": _fmax(True), "fmin": _fmax(False),
    "copysign": _copysign, "hypot": _hypot,
    "and": _bitwise("and_"), "or": _bitwise("or_"), "xor": _bitwise("xor"),
    "shift_left": _shift(True), "shift_right": _shift(False),
}
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    BINARY_RULES[_op] = _cmp(_op)

# Rules that only exist for some dtype kinds.
_FLOAT_ONLY = {"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sinh",
               "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sqrt", "cbrt", "logistic", "erf",
               "div", "pow", "atan2", "copysign", "hypot", "floor", "ceil", "round", "trunc"}


NATIVE_REAL_DTYPES = frozenset({dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
                                dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.float32, dtypes.float64})


def _involves_complex(in_dtypes, out_dtype) -> bool:
    return out_dtype.kind == "c" or any(d.kind == "c" for d in in_dtypes)


def supports(prim_name: str, in_dtypes, out_dtype) -> bool:
    """Whether native code exists for this primitive at these dtypes."""
    if _involves_complex(in_dtypes, out_dtype):
        return lowering_complex.supports(prim_name, in_dtypes, out_dtype)
    native = NATIVE_REAL_DTYPES
    if dtypes.bfloat16 in in_dtypes or out_dtype == dtypes.bfloat16:
        return _supports_bfloat16(prim_name, in_dtypes, out_dtype)
    if any(d not in native for d in in_dtypes) or out_dtype not in native:
        return False
    if prim_name in ("select_n", "convert_element_type", "iota"):
        return True
    if prim_name in _FLOAT_ONLY and any(d.kind != "f" for d in in_dtypes):
        return False
    if prim_name in ("floordiv", "rem", "fmod") and in_dtypes[0] == dtypes.bool_:
        return False
    return prim_name in UNARY_RULES or prim_name in BINARY_RULES


def _supports_bfloat16(prim_name, in_dtypes, out_dtype) -> bool:
    """bfloat16 kernels convert and select. Conversions to bfloat16 come from float32 only: from
    float64 or integers ml_dtypes rounds once, directly, which float32 cannot reproduce."""
    if prim_name == "select_n":
        return all(d == out_dtype for d in in_dtypes[1:])
    if prim_name != "convert_element_type":
        return False
    if out_dtype == dtypes.bfloat16:
        return in_dtypes[0] in (dtypes.float32, dtypes.bfloat16)
    return out_dtype in NATIVE_REAL_DTYPES


def round_to_bfloat16(b, x):
    """A float32 value (scalar or vector) rounded to bfloat16 precision, still a float: round to
    nearest even on the bits (overflow gives inf); NaN becomes the quiet NaN of its sign, as
    ml_dtypes converts."""
    lanes = lanes_of(x)
    i32 = value_type(dtypes.int32, lanes)
    bits = b.bitcast(x, i32)
    odd = b.and_(b.lshr(bits, const(dtypes.int32, 16, lanes)), const(dtypes.int32, 1, lanes))
    rounded = b.add(b.add(bits, const(dtypes.int32, 0x7FFF, lanes)), odd)
    rounded = b.and_(rounded, const(dtypes.uint32, 0xFFFF0000, lanes))
    quiet_nan = b.or_(b.and_(bits, const(dtypes.uint32, 0x80000000, lanes)), const(dtypes.int32, 0x7FC00000, lanes))
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.bitcast(b.select(is_nan, quiet_nan, rounded), x.type)


def bfloat16_from_memory(b, raw):
    """A loaded 16-bit bfloat16 pattern (scalar or vector of i16) as a float: its upper half."""
    lanes = lanes_of(raw)
    wide = b.shl(b.zext(raw, value_type(dtypes.int32, lanes)), const(dtypes.int32, 16, lanes))
    return b.bitcast(wide, value_type(dtypes.float32, lanes))


def bfloat16_to_memory(b, x):
    """A float holding a bfloat16 value as its 16-bit pattern (the upper half of its bits)."""
    lanes = lanes_of(x)
    bits = b.lshr(b.bitcast(x, value_type(dtypes.int32, lanes)), const(dtypes.int32, 16, lanes))
    return b.trunc(bits, value_type(dtypes.int16, lanes))


def index_in_range(b, raw, dtype, n: int, mode: str):
    """An integer index as i64 inside ``[0, n)``: clamped (``mode='clip'``), or replaced by 0 with
    a false flag when out of range (any other mode). Returns ``(index, in_range or None)``.

    uint64 values of 2**63 and above are out of range (not negative)."""
    I64 = ir.IntType(64)
    if dtype == dtypes.uint64:
        raw = b.select(b.icmp_signed("<", raw, ir.Constant(I64, 0)), ir.Constant(I64, (1 << 63) - 1), raw)
    elif dtype != dtypes.int64:
        raw = convert(b, raw, dtype, dtypes.int64)
    zero, last = ir.Constant(I64, 0), ir.Constant(I64, n - 1)
    if mode == "clip":
        raw = b.select(b.icmp_signed("<", raw, zero), zero, raw)
        return b.select(b.icmp_signed(">", raw, last), last, raw), None
    ok = b.and_(b.icmp_signed(">=", raw, zero), b.icmp_signed("<=", raw, last))
    return b.select(ok, raw, zero), ok


def emit(b, prim_name, args, in_dtypes, out_dtype, params):
    """Emit one elementwise operation."""
    if _involves_complex(in_dtypes, out_dtype):
        return lowering_complex.emit(b, prim_name, args, in_dtypes, out_dtype, params)
    if prim_name == "convert_element_type":
        return convert(b, args[0], in_dtypes[0], out_dtype)
    if prim_name == "select_n":
        which, cases = args[0], args[1:]
        select = (lambda c, x, y: select_float(b, c, x, y)) if _is_float(out_dtype) else b.select
        if len(cases) == 2 and in_dtypes[0] == dtypes.bool_:
            return select(which, cases[1], cases[0])
        out = cases[-1]
        for i in range(len(cases) - 2, -1, -1):
            hit = b.icmp_signed("<=", which, const(in_dtypes[0], i, lanes_of(which)))
            out = select(hit, cases[i], out)
        return out
    if len(args) == 1:
        return UNARY_RULES[prim_name](b, args[0], in_dtypes[0], out_dtype, params)
    return BINARY_RULES[prim_name](b, args[0], args[1], in_dtypes[0], out_dtype, params)


# Complex rules build on the real ones above (a cycle resolved at call time).
from tracejit.backends.cpu import lowering_complex  # noqa: E402
