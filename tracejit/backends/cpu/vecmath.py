"""Vectorizable elementwise math emitted as LLVM IR (no libm calls).

Design
------
* Every function is emitted once per (name, type) into the module as an
  ``internal`` ``alwaysinline`` helper; ``emit_unary``/``emit_binary`` only emit
  a call.  After inlining the code is straight-line (selects instead of
  branches), so the loop vectorizer can widen loops that call the scalar
  helpers, and explicit vector types work for any width.  (Sole exception:
  explicit-vector sin/cos/tan hand huge arguments to the scalar kernel,
  compiled on first use, behind a uniform branch taken only when some lane
  needs it: ``rare_lanes``.)
* float32: exp/exp2/expm1, log/log1p/log2/log10, sin/cos/tan, tanh/sinh/
  cosh, logistic and erf have native float32 kernels (``vecmath_f32``:
  full SIMD width, within ~1-2.5 ulp; huge trig arguments widen per lane to
  the float64 kernel).  The remaining functions are written once, for
  float64 lanes: float32 inputs are widened, evaluated, and rounded back
  once (within 0.5 ulp(f32) + 2^-28; f32 overflow/underflow/denormal
  rounding falls out of the final ``fptrunc``), at half the SIMD width.
* Only instruction-level intrinsics are used (fma, fabs, copysign, rint,
  floor, sqrt).  No fast-math flags: the error-free transformations
  (two-sum / two-prod) used below rely on IEEE semantics.
* Denormals are never flushed: exponent extraction pre-scales subnormal
  inputs, and results are scaled by 2^n in two exact steps so gradual
  underflow happens in a single, correctly rounded multiplication.

Polynomials: exp/expm1/sin/cos and the pow log-tail are truncated Taylor
series (the reduced ranges are small enough that the truncation error is far
below 2^-60).  atan, asin, erf/erfc, the log atanh-series and the cbrt seed
are near-minimax fits computed with mpmath (Lawson-iterated weighted least
squares on Chebyshev nodes, 45 digits), weighted for relative error of the
final result.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Dict, Tuple

import llvmlite.ir as ir

from . import rare_paths

__all__ = ["emit_unary", "emit_binary", "SUPPORTED_UNARY", "SUPPORTED_BINARY",
           "helper_function", "host_has_avx512f"]

_F64 = ir.DoubleType()
_F32 = ir.FloatType()


def splat_constant(scalar: ir.Constant, lanes: int) -> ir.Constant:
    """``<lanes x T>`` with ``scalar`` in every lane, written as LLVM's ``splat (T v)``.

    Element by element, a 64-lane constant is ~1.6 KB of IR text; a kernel
    with a few transcendental calls has dozens of them, and formatting plus
    parsing that text cost ~3 ms of its compile.
    """
    const = ir.FormattedConstant(scalar.type, f"splat ({scalar.type} {scalar.get_reference()})")
    # Built for the scalar type: llvmlite would expand a text constant of a vector type
    # element by element.
    const.type = ir.VectorType(scalar.type, lanes)
    const.splat_of = scalar          # lowering rules that special-case a constant operand read it here
    return const
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_I1 = ir.IntType(1)

# --------------------------------------------------------------------------
# constants
# --------------------------------------------------------------------------

# pi/2 split into 33-bit pieces: n * PIO2_k is exact for |n| < 2^20, so the
# Cody-Waite reduction below loses nothing before the final tail term.
_PIO2_1 = 1.5707963267341256
_PIO2_2 = 6.077100506303966e-11
_PIO2_3 = 2.0222662487111665e-21
_PIO2_4 = 8.4784276603689e-32
_PIO2_H, _PIO2_L = 1.5707963267948966, 6.123233995736766e-17
_PI_H, _PI_L = 3.141592653589793, 1.2246467991473532e-16
_PIO4_H, _PIO4_L = 0.7853981633974483, 3.061616997868383e-17
_PI3O4_H, _PI3O4_L = 2.356194490192345, 9.184850993605148e-17
_TWO_OVER_PI = 0.6366197723675814
# ln2 split with a 32-bit head: n * LN2_HI is exact for |n| < 2^21.
_LN2_HI, _LN2_LO = 0.6931471803691238, 1.9082149292705877e-10
_LN2_DH, _LN2_DL = 0.6931471805599453, 2.3190468138462996e-17
_LOG2E = 1.4426950408889634
_INVLN2 = 1.4426950408889634
_INVLN10 = 0.4342944819032518
_LOG10_2_HI, _LOG10_2_LO = 0.3010299955494702, 1.1451100898021838e-10
_TWO_THIRDS_H, _TWO_THIRDS_L = 0.6666666666666666, 3.700743415417188e-17
_SQRT2 = 1.4142135623730951
_TAN_PI8 = 0.41421356237309503
_TAN_3PI8 = 2.414213562373095
_NAN = -float("nan")  # the x86 default NaN (sign bit set) that invalid operations give, as in NumPy
_INF = float("inf")


def _inv_fact(k):
    return float(Fraction(1, math.factorial(k)))


# exp(r) - 1 - r = r^2 * poly(r), |r| <= ln2/2; Taylor to r^14 (trunc < 2^-60).
_EXP_Q = tuple(_inv_fact(k) for k in range(2, 15))
# sin(r) = r + r^3*S(r^2), cos(r) = 1 - r^2/2 + r^4*C(r^2), |r| <= pi/4.
_SIN_S = tuple(float(Fraction((-1) ** k, math.factorial(2 * k + 1))) for k in range(1, 10))
_COS_C = tuple(float(Fraction((-1) ** k, math.factorial(2 * k))) for k in range(2, 11))
# Tail of 2*atanh(s) beyond s^3 (used by the double-double log inside pow):
# 2/5 + 2/7 z + ... ; z = s^2 <= 0.0295 so 12 terms are plenty.
_LOGDD_T = tuple(float(Fraction(2, 2 * k + 1)) for k in range(2, 14))

# --- fitted coefficients (ascending powers; see module docstring) ---------
# (atan(t) - t)/t^3 = P(t^2) on |t| <= tan(pi/8); max rel. err 1.3e-18.
_ATAN_P = (-0.333333333333332, 0.199999999999532, -0.14285714280161677, 0.11111110781903721,
           -0.09090897717824298, 0.0769205958188412, -0.06663097626322809, 0.05847847544747962,
           -0.050391365165011005, 0.03806074474782097, -0.017903485243029454)
# (asin(t) - t)/t^3 = P(t^2) on |t| <= 1/2; max rel. err 9.6e-19.
_ASIN_P = (0.1666666666666676, 0.07499999999970756, 0.04464285717465464, 0.030381942705662128,
           0.02237221504939857, 0.017351610869042407, 0.013980834690168231,
           0.011398793063487948, 0.010780940004857577, 0.0037037401949475937,
           0.021714115530772817, -0.02100874532828283, 0.03263483111324718)
# erf(x)/x = P(x^2) on |x| <= 1; max rel. err 1.3e-19.
_ERF_P0 = (1.1283791670955126, -0.3761263890318375, 0.11283791670954857, -0.026866170645072837,
           0.005223977624780296, -0.0008548326978708207, 0.00012055331035615756,
           -1.492559347502601e-05, 1.6460972290346138e-06, -1.6350019482181978e-07,
           1.4657840226609287e-08, -1.1365509141237684e-09, 5.944990529921011e-11)
# erfc(x)*exp(x^2) = Q(x - c) on [1, 2.5] (c=1.75) and [2.5, 6] (c=4.25), fitted
# for absolute error of erf = 1 - erfc (weight exp(-x^2)); max 6.5e-18.
_ERFC_Q1 = (0.28497223473743644, -0.1309763455144881, 0.05576363008706529, -0.022259995241169638,
            0.008404319208643193, -0.003020974655645794, 0.0010392044964341208,
            -0.0003435333235398371, 0.00010950552236222188, -3.3755418133293104e-05,
            1.008559226515729e-05, -2.928130480254675e-06, 8.298871458346979e-07,
            -2.2662043278716993e-07, 5.758230729404688e-08, -1.798914383440146e-08,
            6.260799726903748e-09)
_ERFC_Q2 = (0.12934527478601476, -0.028944331415002203, 0.006331866268002237,
            -0.001355933186625022, 0.0002845751665632113, -5.859530827534825e-05,
            1.1848521040478864e-05, -2.3543705995855975e-06, 4.5965831028318846e-07,
            -8.985081799895649e-08, 1.5792804817017503e-08, -3.1469250336139194e-09,
            1.190628449987394e-09, 4.595246603043809e-10, 2.790339515164828e-10,
            6.270357267136665e-11, 8.406757919621492e-12)
# cbrt(t) on [1, 8]: seed with rel. err 7e-4, refined by Newton steps.
_CBRT_P = (0.5871211120508356, 0.5261446572757061, -0.1345224532910215, 0.024180659363292865,
           -0.0023078537143483803, 8.810533522554921e-05)
# log(1+f) = 2s + s*R(s^2), R(z) = z*P(z), s = f/(2+f), |s| <= 0.1716; err 8e-21.
_LOG_P = (0.6666666666666666, 0.4000000000000626, 0.28571428569083274, 0.22222222647109943,
          0.18181775644827985, 0.15387091522751634, 0.13250103256086568, 0.13251447457767318)

# Bits of 2/pi: floor(2/pi * 2^1280), for the Payne-Hanek reduction.
_TWO_OVER_PI_BITS = 1280
_TWO_OVER_PI_HEX = (
    'a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561'
    'b7246e3a424dd2e006492eea09d1921cfe1deb1cb129a73ee88235f52ebb4484'
    'e99c7026b45f7e413991d639835339f49c845f8bbdf9283b1ff897ffde05980f'
    'ef2f118b5a0a6d1f6d367ecf27cb09b74f463f669e5fea2d7527bac7ebe5f17b'
    '3d0739f78a5292ea6bfb5fb11f8d5d0856033046fc7b6babf0cfbc209af4361d'
)

_PH_TABLE = None


def _payne_hanek_table():
    """4 doubles per binary exponent e (0..1023) of the argument x.

    For x in [2^e, 2^(e+1)), x = M*2^(e-52) with integer M, so bits of 2/pi of
    weight >= 2^(54-e) contribute multiples of 4 to x*2/pi and are dropped.
    The next 4*53 bits are stored as four 53-bit doubles T0..T3; products
    x*Ti are computed exactly with fma, which gives x*2/pi mod 4 to ~2^-159
    absolute -- enough for the worst-case double (|x mod pi/2| ~ 2^-61).
    For e > 512 the entries are pre-multiplied by 2^256 (and x by 2^-256) so
    that T3 never becomes subnormal.
    """
    global _PH_TABLE
    if _PH_TABLE is None:
        c = int("".join(_TWO_OVER_PI_HEX), 16)
        k = _TWO_OVER_PI_BITS
        vals = []
        for e in range(1024):
            scale = 256 if e > 512 else 0
            for i in range(4):
                s = e - 1 + 53 * i
                bits = (c >> (k - s)) if s <= k else (c << (s - k))
                mant = bits & ((1 << 53) - 1)
                vals.append(math.ldexp(float(mant), scale - s))
        _PH_TABLE = vals
    return _PH_TABLE


# --------------------------------------------------------------------------
# emission helper for f64 lanes
# --------------------------------------------------------------------------

class _F:
    """Arithmetic on a float64 or float32 scalar-or-vector type through an IRBuilder.

    Integer views use the same-width integer (i64 / i32); ``pow2i`` and
    ``scale`` adapt their exponent bias and limits to the element type.
    """

    def __init__(self, b: ir.IRBuilder, ty):
        self.b = b
        self.ty = ty
        self.m = b.module
        el = ty.element if isinstance(ty, ir.VectorType) else ty
        self.el = el
        self.f32 = isinstance(el, ir.FloatType)
        self.iel = _I32 if self.f32 else _I64
        tag = "f32" if self.f32 else "f64"
        if isinstance(ty, ir.VectorType):
            self.n = ty.count
            self.ity = ir.VectorType(self.iel, self.n)
            self.sfx = f"v{self.n}{tag}"
        else:
            self.n = None
            self.ity = self.iel
            self.sfx = tag

    # constants ----------------------------------------------------------
    def c(self, v):
        if isinstance(v, ir.Value):
            return v
        if self.n is None:
            return ir.Constant(self.ty, float(v))
        return splat_constant(ir.Constant(self.el, float(v)), self.n)

    def ci(self, v):
        if isinstance(v, ir.Value):
            return v
        if self.n is None:
            return ir.Constant(self.iel, int(v))
        return splat_constant(ir.Constant(self.iel, int(v)), self.n)

    # float arithmetic ---------------------------------------------------
    def add(self, a, b):
        return self.b.fadd(self.c(a), self.c(b))

    def sub(self, a, b):
        return self.b.fsub(self.c(a), self.c(b))

    def mul(self, a, b):
        return self.b.fmul(self.c(a), self.c(b))

    def div(self, a, b):
        return self.b.fdiv(self.c(a), self.c(b))

    def neg(self, a):
        return self.b.fneg(self.c(a))

    def _intr(self, name, nargs):
        full = f"llvm.{name}.{self.sfx}"
        fn = self.m.globals.get(full)
        if fn is None:
            fn = ir.Function(self.m, ir.FunctionType(self.ty, [self.ty] * nargs), name=full)
        return fn

    def fma(self, a, b, c):
        return self.b.call(self._intr("fma", 3), [self.c(a), self.c(b), self.c(c)])

    def abs(self, a):
        return self.b.call(self._intr("fabs", 1), [self.c(a)])

    def copysign(self, mag, sgn):
        return self.b.call(self._intr("copysign", 2), [self.c(mag), self.c(sgn)])

    def rint(self, a):
        return self.b.call(self._intr("rint", 1), [self.c(a)])

    def floor(self, a):
        return self.b.call(self._intr("floor", 1), [self.c(a)])

    def sqrt(self, a):
        return self.b.call(self._intr("sqrt", 1), [self.c(a)])

    # comparisons / selects ---------------------------------------------
    def lt(self, a, b):
        return self.b.fcmp_ordered("<", self.c(a), self.c(b))

    def le(self, a, b):
        return self.b.fcmp_ordered("<=", self.c(a), self.c(b))

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", self.c(a), self.c(b))

    def ge(self, a, b):
        return self.b.fcmp_ordered(">=", self.c(a), self.c(b))

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", self.c(a), self.c(b))

    def ne(self, a, b):  # unordered-or-not-equal
        return self.b.fcmp_unordered("!=", self.c(a), self.c(b))

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def isinf(self, a):
        return self.eq(self.abs(a), _INF)

    def isfinite(self, a):
        return self.lt(self.abs(a), _INF)

    def or_(self, a, b):
        return self.b.or_(a, b)

    def and_(self, a, b):
        return self.b.and_(a, b)

    def not_(self, a):
        if isinstance(a.type, ir.VectorType):
            return self.b.xor(a, splat_constant(ir.Constant(a.type.element, -1), a.type.count))
        return self.b.not_(a)

    def sel(self, cond, a, b):
        a, b = self.c(a), self.c(b)
        return self.b.select(cond, a, b)

    def sel_i(self, cond, a, b):
        return self.b.select(cond, self.ci(a), self.ci(b))

    def clamp(self, a, lo, hi):
        a = self.sel(self.gt(a, hi), hi, a)
        return self.sel(self.lt(a, lo), lo, a)

    # integer views --------------------------------------------------------
    def bits(self, a):
        return self.b.bitcast(self.c(a), self.ity)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ty)

    def to_int(self, a):
        """fptosi of a value the caller guarantees is finite and in range."""
        return self.b.fptosi(a, self.ity)

    def to_float(self, i):
        return self.b.sitofp(i, self.ty)

    def signbit(self, a):
        return self.b.icmp_signed("<", self.bits(a), self.ci(0))

    # polynomials ----------------------------------------------------------
    def poly(self, x, coeffs):
        """Horner with fma; coeffs in ascending powers."""
        acc = self.c(coeffs[-1])
        for cf in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, cf)
        return acc

    # exact transformations -----------------------------------------------
    def two_sum(self, a, b):
        s = self.add(a, b)
        bb = self.sub(s, a)
        err = self.add(self.sub(a, self.sub(s, bb)), self.sub(b, bb))
        return s, err

    def fast_two_sum(self, a, b):  # requires |a| >= |b| (or a == 0)
        s = self.add(a, b)
        return s, self.sub(b, self.sub(s, a))

    def two_prod(self, a, b):
        p = self.mul(a, b)
        return p, self.fma(a, b, self.neg(p))

    def dd_add(self, ah, al, bh, bl):
        """Accurate double-double add (relative error ~2^-104 of the result)."""
        s, e = self.two_sum(ah, bh)
        t, f = self.two_sum(al, bl)
        e = self.add(e, t)
        s, e = self.fast_two_sum(s, e)
        e = self.add(e, f)
        return self.fast_two_sum(s, e)

    def dd_mul(self, ah, al, bh, bl):
        p, e = self.two_prod(ah, bh)
        e = self.fma(ah, bl, e)
        e = self.fma(al, bh, e)
        return self.fast_two_sum(p, e)

    def dd_mul_d(self, ah, al, b):
        p, e = self.two_prod(ah, b)
        e = self.fma(al, b, e)
        return self.fast_two_sum(p, e)

    # scaling --------------------------------------------------------------
    def pow2i(self, n):
        """2^n for an integral float n in the normal exponent range."""
        ni = self.to_int(n)
        bias, mant = (127, 23) if self.f32 else (1023, 52)
        return self.from_bits(self.b.shl(self.b.add(ni, self.ci(bias)), self.ci(mant)))

    def scale(self, p, n):
        """p * 2^n, n integral (any finite value), correctly rounded.

        Two exact-range steps: the first product stays normal, so the only
        rounding is the last multiply -- gradual underflow is exact.
        """
        lim = 250.0 if self.f32 else 2000.0
        n = self.clamp(n, -lim, lim)
        n1 = self.floor(self.mul(n, 0.5))
        n2 = self.sub(n, n1)
        return self.mul(self.mul(p, self.pow2i(n1)), self.pow2i(n2))

    # table load (per lane; the loop vectorizer turns the scalar form into a gather)
    def load_table(self, gv, count, idx):
        b = self.b
        arr_t = ir.ArrayType(_F64, count)
        zero = ir.Constant(_I64, 0)
        if self.n is None:
            ptr = b.gep(gv, [zero, idx], inbounds=True, source_etype=arr_t)
            return b.load(ptr, typ=_F64)
        out = ir.Constant(self.ty, ir.Undefined)
        for lane in range(self.n):
            li = ir.Constant(ir.IntType(32), lane)
            ptr = b.gep(gv, [zero, b.extract_element(idx, li)], inbounds=True,
                        source_etype=arr_t)
            out = b.insert_element(out, b.load(ptr, typ=_F64), li)
        return out


# --------------------------------------------------------------------------
# kernels (float64 lanes)
# --------------------------------------------------------------------------

def _exp_core(F: _F, x, xlo=None):
    """exp(x + xlo) = p * 2^n with p in ~[0.7, 1.42]; x sanitized & clamped.

    Cody-Waite reduction by ln2 (32-bit head, exact for |n| < 2^21) to
    |r| <= ln2/2, then a degree-14 Taylor polynomial.
    """
    xc = F.sel(F.isnan(x), 0.0, x)
    xc = F.clamp(xc, -1100.0, 1000.0)
    n = F.rint(F.mul(xc, _LOG2E))
    t = F.fma(F.neg(n), _LN2_HI, xc)
    r = F.fma(F.neg(n), _LN2_LO, t)
    if xlo is not None:
        r = F.add(r, xlo)
    q = F.poly(r, _EXP_Q)
    p = F.add(1.0, F.fma(F.mul(r, r), q, r))
    return p, n


def _k_exp(F, x):
    p, n = _exp_core(F, x)
    return F.sel(F.isnan(x), x, F.scale(p, n))


def _k_exp2(F, x):
    xc = F.sel(F.isnan(x), 0.0, x)
    xc = F.clamp(xc, -1100.0, 1100.0)
    n = F.rint(xc)
    r = F.sub(xc, n)  # exact, |r| <= 1/2
    # u = r*ln2 as a double-double so the ln2 rounding does not leak in.
    uh, ul = F.two_prod(r, _LN2_DH)
    ul = F.fma(r, _LN2_DL, ul)
    q = F.poly(uh, _EXP_Q)
    p = F.add(1.0, F.fma(F.mul(uh, uh), q, uh))
    p = F.fma(p, ul, p)
    return F.sel(F.isnan(x), x, F.scale(p, n))


def _k_expm1(F, x):
    xc = F.sel(F.isnan(x), 0.0, x)
    # expm1 < -1 + 2^-54 below -38; above 710 it overflows anyway.
    xc = F.clamp(xc, -45.0, 710.0)
    n = F.rint(F.mul(xc, _LOG2E))
    t = F.fma(F.neg(n), _LN2_HI, xc)
    cc = F.mul(n, _LN2_LO)
    r = F.sub(t, cc)
    rlo = F.sub(F.sub(t, r), cc)
    em = F.fma(F.mul(r, r), F.poly(r, _EXP_Q), r)  # expm1(r), relative accuracy
    em = F.fma(rlo, F.add(em, 1.0), em)
    # expm1(x) = 2^n*expm1(r) + (2^n - 1); 2^1024 is split off as a final *2.
    na = F.sel(F.gt(n, 1023.0), 1023.0, n)
    s = F.pow2i(na)
    res = F.fma(s, em, F.sub(s, 1.0))
    res = F.sel(F.gt(n, na), F.mul(res, 2.0), res)
    res = F.sel(F.eq(x, 0.0), x, res)  # keeps -0
    return F.sel(F.isnan(x), x, res)


def _log_parts(F, x):
    """x > 0 finite: x = 2^e * (1+f), 1+f in [sqrt(1/2), sqrt(2)).

    Returns e (double), f, hfsq = f^2/2, s = f/(2+f), R = s*... tail so that
    log(1+f) = f - hfsq + s*(hfsq + R)  (the fdlibm arrangement, which keeps
    the large terms exact).
    """
    tiny = F.lt(x, 2.2250738585072014e-308)
    xs = F.sel(tiny, F.mul(x, 18014398509481984.0), x)  # 2^54: subnormals
    eadj = F.sel(tiny, -54.0, 0.0)
    bi = F.bits(xs)
    b = F.b
    ebits = b.lshr(bi, F.ci(52))
    e = F.to_float(b.sub(ebits, F.ci(1023)))
    mb = b.or_(b.and_(bi, F.ci(0x000FFFFFFFFFFFFF)), F.ci(0x3FF0000000000000))
    m = F.from_bits(mb)
    big = F.gt(m, _SQRT2)
    m = F.sel(big, F.mul(m, 0.5), m)
    e = F.add(F.add(e, F.sel(big, 1.0, 0.0)), eadj)
    f = F.sub(m, 1.0)
    s = F.div(f, F.add(f, 2.0))
    z = F.mul(s, s)
    R = F.mul(z, F.poly(z, _LOG_P))
    hfsq = F.mul(F.mul(f, f), 0.5)
    return e, f, hfsq, s, R


def _log_special(F, x, res):
    res = F.sel(F.eq(x, 0.0), -_INF, res)
    res = F.sel(F.lt(x, 0.0), _NAN, res)
    res = F.sel(F.eq(x, _INF), _INF, res)
    return F.sel(F.isnan(x), x, res)


def _sanitize_pos(F, x):
    ok = F.and_(F.gt(x, 0.0), F.lt(x, _INF))
    return F.sel(ok, x, 1.0)


def _k_log(F, x):
    e, f, hfsq, s, R = _log_parts(F, _sanitize_pos(F, x))
    inner = F.fma(s, F.add(hfsq, R), F.mul(e, _LN2_LO))
    res = F.fma(e, _LN2_HI, F.sub(f, F.sub(hfsq, inner)))
    return _log_special(F, x, res)


def _lnm(F, f, hfsq, s, R):
    return F.sub(f, F.sub(hfsq, F.mul(s, F.add(hfsq, R))))


def _k_log2(F, x):
    e, f, hfsq, s, R = _log_parts(F, _sanitize_pos(F, x))
    res = F.fma(_lnm(F, f, hfsq, s, R), _INVLN2, e)  # e exact -> error ~ that of log(m)
    return _log_special(F, x, res)


def _k_log10(F, x):
    e, f, hfsq, s, R = _log_parts(F, _sanitize_pos(F, x))
    lo = F.fma(_lnm(F, f, hfsq, s, R), _INVLN10, F.mul(e, _LOG10_2_LO))
    res = F.fma(e, _LOG10_2_HI, lo)
    return _log_special(F, x, res)


def _log1p_core(F, x):
    """log1p for sanitized x > -1 finite (Kahan: log(u) + (x-(u-1))/u)."""
    u = F.add(x, 1.0)
    c = F.sel(F.ge(u, 2.0), F.sub(1.0, F.sub(u, x)), F.sub(x, F.sub(u, 1.0)))
    c = F.div(c, u)
    e, f, hfsq, s, R = _log_parts(F, u)
    inner = F.fma(s, F.add(hfsq, R), F.fma(e, _LN2_LO, c))
    return F.fma(e, _LN2_HI, F.sub(f, F.sub(hfsq, inner)))


def _k_log1p(F, x):
    ok = F.and_(F.gt(x, -1.0), F.lt(x, _INF))
    res = _log1p_core(F, F.sel(ok, x, 0.0))
    res = F.sel(F.eq(x, -1.0), -_INF, res)
    res = F.sel(F.lt(x, -1.0), _NAN, res)
    res = F.sel(F.eq(x, _INF), _INF, res)
    res = F.sel(F.eq(x, 0.0), x, res)
    return F.sel(F.isnan(x), x, res)


# ---- trig ------------------------------------------------------------------

_CW_LIMIT = 1048576.0  # 2^20: n*PIO2_k exact below this


def _ph_global(m):
    name = "__tj_vm_pio2_table"
    gv = m.globals.get(name)
    if gv is None:
        tab = _payne_hanek_table()
        arr_t = ir.ArrayType(_F64, len(tab))
        gv = ir.GlobalVariable(m, arr_t, name=name)
        gv.linkage = "internal"
        gv.global_constant = True
        gv.initializer = ir.Constant(arr_t, [ir.Constant(_F64, v) for v in tab])
        gv.align = 64
    return gv


def _reduce_pio2(F, x):
    """x finite -> (rh, rl, q): x = q*pi/2 + (rh + rl), |rh| <~ pi/4.

    |x| < 2^20: Cody-Waite with a 4-part pi/2 (first three parts 33 bits, so
    n*part is exact) accumulated as a double-double.
    Otherwise: Payne-Hanek with the exponent-indexed table of 2/pi bits,
    computing x*2/pi mod 4 with exact fma products and accurate
    double-double additions.  Scalar helpers compute both and select per
    lane (branch-free, loop-vectorizable).  Explicit-vector helpers reduce
    with Cody-Waite only (lanes at or above 2^20 get a harmless wrong value)
    and their callers replace those lanes with :func:`rare_lanes`: the table
    path is ~5x the code of the rest and almost never needed.
    """
    b = F.b
    ax = F.abs(x)
    small = F.lt(ax, _CW_LIMIT)
    # --- Cody-Waite
    xc = F.sel(small, x, 0.0)
    n = F.rint(F.mul(xc, _TWO_OVER_PI))
    nn = F.neg(n)
    t1 = F.fma(nn, _PIO2_1, xc)
    s, e1 = F.two_sum(t1, F.mul(nn, _PIO2_2))
    s2, e2 = F.two_sum(s, F.mul(nn, _PIO2_3))
    lo = F.fma(nn, _PIO2_4, F.add(e1, e2))
    crh, crl = F.two_sum(s2, lo)
    if F.n is None:
        # Scalar helper: both paths, selected per element, so a loop calling
        # it stays branch-free and the loop vectorizer can widen it.
        prh, prl, q = _payne_hanek(F, x, small)
        rh = F.sel(small, crh, prh)
        rl = F.sel(small, crl, prl)
        qq = F.sel(small, n, q)
    else:
        rh, rl, qq = crh, crl, n
    qi = F.b.and_(F.to_int(qq), F.ci(3))
    return rh, rl, qi


def _payne_hanek(F, x, small):
    b = F.b
    xl = F.sel(small, 1073741824.0, x)  # keep lanes in range for the table path
    bi = F.bits(xl)
    ex = b.sub(b.and_(b.lshr(bi, F.ci(52)), F.ci(0x7FF)), F.ci(1023))
    ex = b.select(b.icmp_signed(">", ex, F.ci(1023)), F.ci(1023), ex)
    hi_e = b.icmp_signed(">", ex, F.ci(512))
    xs = F.sel(hi_e, F.mul(xl, 2.0 ** -256), xl)
    gv = _ph_global(F.m)
    base = b.shl(ex, F.ci(2))
    T = [F.load_table(gv, 4096, b.add(base, F.ci(i))) for i in range(4)]
    h0, l0 = F.two_prod(xs, T[0])
    h0 = F.sub(h0, F.mul(F.rint(F.mul(h0, 0.25)), 4.0))
    sh, sl = F.two_sum(h0, l0)
    k = F.rint(sh)
    q = k
    sh, sl = F.fast_two_sum(F.sub(sh, k), sl)
    h1, l1 = F.two_prod(xs, T[1])
    sh, sl = F.dd_add(sh, sl, h1, l1)
    k = F.rint(sh)
    q = F.add(q, k)
    sh, sl = F.fast_two_sum(F.sub(sh, k), sl)
    h2, l2 = F.two_prod(xs, T[2])
    sh, sl = F.dd_add(sh, sl, h2, l2)
    sh, sl = F.dd_add(sh, sl, F.mul(xs, T[3]), 0.0)
    k = F.rint(sh)
    q = F.add(q, k)
    sh, sl = F.fast_two_sum(F.sub(sh, k), sl)
    # quarter turns -> radians
    prh, prl = F.two_prod(sh, _PIO2_H)
    prl = F.add(prl, F.fma(sh, _PIO2_L, F.mul(sl, _PIO2_H)))
    prh, prl = F.fast_two_sum(prh, prl)
    return prh, prl, q


def _sin_cos_poly(F, rh, rl):
    z = F.mul(rh, rh)
    v = F.mul(z, rh)
    sn = F.add(rh, F.fma(v, F.poly(z, _SIN_S), F.mul(rl, F.fma(z, -0.5, 1.0))))
    hz = F.mul(z, 0.5)
    w = F.sub(1.0, hz)
    corr = F.add(F.sub(F.sub(1.0, w), hz),
                 F.fma(F.mul(z, z), F.poly(z, _COS_C), F.neg(F.mul(rh, rl))))
    cs = F.add(w, corr)
    return sn, cs


def _trig_prep(F, x):
    fin = F.isfinite(x)
    xs = F.sel(fin, x, 0.0)
    rh, rl, qi = _reduce_pio2(F, xs)
    sn, cs = _sin_cos_poly(F, rh, rl)
    b = F.b
    odd = b.icmp_unsigned("!=", b.and_(qi, F.ci(1)), F.ci(0))
    return fin, sn, cs, qi, odd


def _trig_finish(F, x, fin, res):
    res = F.sel(F.eq(x, 0.0), x, res)
    return F.sel(fin, res, F.add(x, _NAN))  # inf -> nan, nan -> nan


def _huge_trig_lanes(F, name, x, fin, res):
    """Explicit vectors: lanes beyond the Cody-Waite range take the complete
    scalar kernel (Payne-Hanek), see _reduce_pio2."""
    if F.n is None:
        return res
    return rare_lanes(F, name, x, F.and_(fin, F.not_(F.lt(F.abs(x), _CW_LIMIT))), res)


def rare_lanes(F, name, x, rare, res):
    """``res``, or when some lane is in mask ``rare``, ``name(x)`` for every lane
    from the complete scalar kernel, compiled on its first call (``rare_paths``).
    Explicit vectors only.

    The slow branch recomputes the common lanes too (the scalar kernel gives
    them the same bits): without the two lane selects the branch costs the
    kernel's compile ~0.7 ms less per call site, and it is almost never taken.
    """
    b = F.b
    red = f"llvm.vector.reduce.or.v{F.n}i1"
    fn = F.m.globals.get(red)
    if fn is None:
        fn = ir.Function(F.m, ir.FunctionType(_I1, [ir.VectorType(_I1, F.n)]), name=red)
    pre = b.block
    with b.if_then(b.call(fn, [rare]), likely=False):
        slow = rare_paths.call(b, name, x)
        slow_blk = b.block
    out = b.phi(F.ty)
    out.add_incoming(slow, slow_blk)
    out.add_incoming(res, pre)
    return out


def _k_sin(F, x):
    fin, sn, cs, qi, odd = _trig_prep(F, x)
    b = F.b
    v = F.sel(odd, cs, sn)
    neg = b.icmp_unsigned("!=", b.and_(qi, F.ci(2)), F.ci(0))
    v = F.sel(neg, F.neg(v), v)
    return _huge_trig_lanes(F, "sin", x, fin, _trig_finish(F, x, fin, v))


def _k_cos(F, x):
    fin, sn, cs, qi, odd = _trig_prep(F, x)
    b = F.b
    v = F.sel(odd, sn, cs)
    neg = b.icmp_unsigned("!=", b.and_(b.add(qi, F.ci(1)), F.ci(2)), F.ci(0))
    v = F.sel(neg, F.neg(v), v)
    v = F.sel(fin, v, F.add(x, _NAN))
    return _huge_trig_lanes(F, "cos", x, fin, v)


def _k_tan(F, x):
    fin, sn, cs, qi, odd = _trig_prep(F, x)
    v = F.sel(odd, F.neg(F.div(cs, sn)), F.div(sn, cs))
    return _huge_trig_lanes(F, "tan", x, fin, _trig_finish(F, x, fin, v))


# ---- hyperbolic ---------------------------------------------------------------

def _k_cosh(F, x):
    a = F.abs(x)
    p, n = _exp_core(F, a)
    # cosh = 2^(n-1) * (p + 2^(-2n)/p), n >= 0
    q = F.scale(F.div(1.0, p), F.mul(n, -2.0))
    res = F.scale(F.add(p, q), F.sub(n, 1.0))
    return F.sel(F.isnan(x), x, res)


def _k_sinh(F, x):
    a = F.abs(x)
    mid = F.lt(a, 22.0)
    em = _k_expm1(F, F.sel(mid, a, 0.0))
    small = F.mul(0.5, F.add(em, F.div(em, F.add(em, 1.0))))
    p, n = _exp_core(F, a)
    large = F.scale(p, F.sub(n, 1.0))
    res = F.copysign(F.sel(mid, small, large), x)
    return F.sel(F.isnan(x), x, res)


def _k_tanh(F, x):
    a = F.abs(x)
    lt1 = F.lt(a, 1.0)
    ac = F.sel(F.lt(a, 22.0), a, 22.0)
    em = _k_expm1(F, F.sel(lt1, F.mul(ac, -2.0), F.mul(ac, 2.0)))
    r_small = F.div(F.neg(em), F.add(em, 2.0))
    r_big = F.sub(1.0, F.div(2.0, F.add(em, 2.0)))
    res = F.copysign(F.sel(lt1, r_small, r_big), x)
    return F.sel(F.isnan(x), x, res)


def _k_logistic(F, x):
    E = _k_exp(F, F.neg(F.abs(x)))
    d = F.add(E, 1.0)
    res = F.sel(F.ge(x, 0.0), F.div(1.0, d), F.div(E, d))
    return F.sel(F.isnan(x), x, res)


# ---- inverse trig ----------------------------------------------------------------

def _atan_parts(F, a):
    """a >= 0 (or nan): atan(a) = bh + (tp + bl), three-interval reduction."""
    s1 = F.gt(a, _TAN_PI8)
    s2 = F.gt(a, _TAN_3PI8)
    t = F.sel(s2, F.div(-1.0, a),
              F.sel(s1, F.div(F.sub(a, 1.0), F.add(a, 1.0)), a))
    bh = F.sel(s2, _PIO2_H, F.sel(s1, _PIO4_H, 0.0))
    bl = F.sel(s2, _PIO2_L, F.sel(s1, _PIO4_L, 0.0))
    z = F.mul(t, t)
    tp = F.fma(F.mul(t, z), F.poly(z, _ATAN_P), t)
    return bh, bl, tp


def _k_arctan(F, x):
    bh, bl, tp = _atan_parts(F, F.abs(x))
    res = F.add(bh, F.add(tp, bl))
    res = F.copysign(res, x)
    return F.sel(F.isnan(x), x, res)


def _asin_parts(F, a):
    """a = |x| <= 1: returns small-branch flag, R(z), s, w for the reductions."""
    small = F.le(a, 0.5)
    zb = F.mul(F.sub(1.0, a), 0.5)  # exact for a in [1/2, 1]
    z = F.sel(small, F.mul(a, a), zb)
    R = F.mul(z, F.poly(z, _ASIN_P))
    s = F.sqrt(zb)
    den = F.sel(F.gt(s, 0.0), F.add(s, s), 1.0)
    s_lo = F.div(F.fma(F.neg(s), s, zb), den)  # sqrt(zb) = s + s_lo
    w = F.fma(s, R, s_lo)  # asin(sqrt zb) = s + w
    return small, R, s, w


def _k_arcsin(F, x):
    a = F.abs(x)
    ac = F.sel(F.le(a, 1.0), a, 0.0)
    small, R, s, w = _asin_parts(F, ac)
    r_small = F.fma(ac, R, ac)
    # asin(a) = pi/2 - 2*asin(sqrt((1-a)/2))
    r_big = F.sub(_PIO2_H, F.add(F.add(s, s), F.sub(F.add(w, w), _PIO2_L)))
    res = F.copysign(F.sel(small, r_small, r_big), x)
    res = F.sel(F.gt(a, 1.0), _NAN, res)
    return F.sel(F.isnan(x), x, res)


def _k_arccos(F, x):
    a = F.abs(x)
    ok = F.le(a, 1.0)
    xc = F.sel(ok, x, 0.0)
    ac = F.abs(xc)
    small, R, s, w = _asin_parts(F, ac)
    r_small = F.sub(_PIO2_H, F.add(xc, F.fma(xc, R, F.neg(_PIO2_L))))
    r_pos = F.mul(F.add(s, w), 2.0)
    r_neg = F.sub(_PI_H, F.add(F.add(s, s), F.sub(F.add(w, w), _PI_L)))
    res = F.sel(small, r_small, F.sel(F.gt(xc, 0.0), r_pos, r_neg))
    res = F.sel(F.gt(a, 1.0), _NAN, res)
    return F.sel(F.isnan(x), x, res)


def _k_arcsinh(F, x):
    a = F.abs(x)
    big = F.gt(a, 268435456.0)  # 2^28: asinh(a) = log(2a) to double precision
    fin = F.lt(a, _INF)
    am = F.sel(big, 1.0, a)
    mid_arg = F.add(am, F.div(F.mul(am, am), F.add(1.0, F.sqrt(F.fma(am, am, 1.0)))))
    arg = F.sel(big, F.sub(F.sel(fin, a, 2.0), 1.0), mid_arg)
    res = F.add(_log1p_core(F, arg), F.sel(big, _LN2_DH, 0.0))
    res = F.sel(fin, res, _INF)
    res = F.copysign(res, x)
    return F.sel(F.isnan(x), x, res)


def _k_arccosh(F, x):
    ok = F.ge(x, 1.0)
    fin = F.lt(x, _INF)
    big = F.gt(x, 268435456.0)
    xc = F.sel(F.and_(ok, fin), x, 1.0)
    t = F.sub(xc, 1.0)
    mid_arg = F.add(t, F.sqrt(F.mul(t, F.add(t, 2.0))))
    arg = F.sel(big, t, mid_arg)
    res = F.add(_log1p_core(F, arg), F.sel(big, _LN2_DH, 0.0))
    res = F.sel(fin, res, _INF)
    res = F.sel(ok, res, _NAN)
    return F.sel(F.isnan(x), x, res)


def _k_arctanh(F, x):
    a = F.abs(x)
    ok = F.lt(a, 1.0)
    ac = F.sel(ok, a, 0.0)
    d = F.sub(1.0, ac)
    t_small = F.fma(F.add(ac, ac), F.div(ac, d), F.add(ac, ac))
    t_big = F.div(F.add(ac, ac), d)
    t = F.sel(F.lt(ac, 0.5), t_small, t_big)
    res = F.mul(_log1p_core(F, t), 0.5)
    res = F.sel(F.eq(a, 1.0), _INF, res)
    res = F.sel(F.gt(a, 1.0), _NAN, res)
    res = F.copysign(res, x)
    res = F.sel(F.gt(a, 1.0), _NAN, res)
    return F.sel(F.isnan(x), x, res)


def _k_erf(F, x):
    a = F.abs(x)
    ac = F.sel(F.lt(a, 6.0), a, 6.0)  # also maps nan/inf to 6 (erf == 1)
    r1 = F.mul(ac, F.poly(F.mul(ac, ac), _ERF_P0))
    # 1 <= a < 6: erf = 1 - exp(-a^2) * Q(a - c); a^2 carried as double-double
    # so exp(-a^2) keeps full relative accuracy.
    lo = F.lt(ac, 2.5)
    v = F.sub(ac, F.sel(lo, 1.75, 4.25))
    coeffs = [F.sel(lo, q1, q2) for q1, q2 in zip(_ERFC_Q1, _ERFC_Q2)]
    acc = coeffs[-1]
    for cf in reversed(coeffs[:-1]):
        acc = F.fma(acc, v, cf)
    sqh, sql = F.two_prod(ac, ac)
    p, n = _exp_core(F, F.neg(sqh), F.neg(sql))
    E = F.scale(p, n)
    r2 = F.sub(1.0, F.mul(E, acc))
    res = F.sel(F.lt(a, 1.0), r1, F.sel(F.lt(a, 6.0), r2, 1.0))
    res = F.copysign(res, x)
    return F.sel(F.isnan(x), x, res)


def _k_cbrt(F, x):
    a = F.abs(x)
    ok = F.and_(F.gt(a, 0.0), F.lt(a, _INF))
    a = F.sel(ok, a, 1.0)
    tiny = F.lt(a, 2.2250738585072014e-308)
    a = F.sel(tiny, F.mul(a, 18014398509481984.0), a)  # 2^54 = (2^18)^3
    b = F.b
    bi = F.bits(a)
    e = F.to_float(b.sub(b.lshr(bi, F.ci(52)), F.ci(1023)))
    m = F.from_bits(b.or_(b.and_(bi, F.ci(0x000FFFFFFFFFFFFF)), F.ci(0x3FF0000000000000)))
    k = F.floor(F.mul(F.add(e, 0.5), 1.0 / 3.0))  # (e+0.5)/3 is never near an integer
    r = F.sub(e, F.mul(k, 3.0))
    t = F.mul(m, F.sel(F.eq(r, 1.0), 2.0, F.sel(F.eq(r, 2.0), 4.0, 1.0)))  # [1, 8)
    y = F.poly(t, _CBRT_P)
    for _ in range(3):  # Newton: 7e-4 -> 5e-7 -> 2e-13 -> rounding
        y = F.fma(F.sub(F.div(t, F.mul(y, y)), y), 1.0 / 3.0, y)
    # final correction with an exact residual t - y^3
    yy, yyl = F.two_prod(y, y)
    y3, y3l = F.two_prod(yy, y)
    y3l = F.fma(yyl, y, y3l)
    res = F.sub(F.sub(t, y3), y3l)
    y = F.add(y, F.div(res, F.mul(yy, 3.0)))
    k = F.sub(k, F.sel(tiny, 18.0, 0.0))
    out = F.copysign(F.mul(y, F.pow2i(k)), x)
    return F.sel(ok, out, F.add(x, x))  # 0, inf, nan pass through


def _k_sqrt(F, x):
    return F.sqrt(x)


# ---- binary -------------------------------------------------------------------------

def _k_arctan2(F, y, x):
    b = F.b
    ax, ay = F.abs(x), F.abs(y)
    swap = F.gt(ay, ax)
    num = F.sel(swap, ax, ay)
    den = F.sel(swap, ay, ax)
    t = F.div(num, den)
    tc = F.sel(F.isnan(t), 0.0, t)
    bh, bl, tp = _atan_parts(F, tc)
    xneg = F.signbit(x)
    # (swap, xneg) -> base + sgn*atan(t):
    #   (F,F): 0 + a, (T,F): pi/2 - a, (F,T): pi - a, (T,T): pi/2 + a
    base_h = F.sel(swap, _PIO2_H, F.sel(xneg, _PI_H, 0.0))
    base_l = F.sel(swap, _PIO2_L, F.sel(xneg, _PI_L, 0.0))
    neg = b.xor(swap, xneg)
    sg = F.sel(neg, -1.0, 1.0)
    H, e = F.two_sum(base_h, F.mul(sg, bh))
    lo = F.add(F.add(e, base_l), F.mul(sg, bl))
    res = F.add(H, F.fma(sg, tp, lo))
    both0 = F.and_(F.eq(ax, 0.0), F.eq(ay, 0.0))
    bothinf = F.and_(F.eq(ax, _INF), F.eq(ay, _INF))
    res = F.sel(both0, F.sel(xneg, _PI_H, 0.0), res)
    res = F.sel(bothinf, F.sel(xneg, _PI3O4_H, _PIO4_H), res)
    res = F.copysign(res, y)
    return F.sel(F.or_(F.isnan(x), F.isnan(y)), F.add(x, y), res)


def _log_dd(F, x):
    """log(x) as a double-double (~2^-100 rel.) for finite x > 0 (pow helper).

    log(m) = 2*atanh(s) with s = (m-1)/(m+1) carried as double-double through
    the s and s^3 terms; only the s^5 tail (< 6e-5 relative) is in double.
    """
    tiny = F.lt(x, 2.2250738585072014e-308)
    xs = F.sel(tiny, F.mul(x, 18014398509481984.0), x)
    b = F.b
    bi = F.bits(xs)
    e = F.to_float(b.sub(b.lshr(bi, F.ci(52)), F.ci(1023)))
    m = F.from_bits(b.or_(b.and_(bi, F.ci(0x000FFFFFFFFFFFFF)), F.ci(0x3FF0000000000000)))
    big = F.gt(m, _SQRT2)
    m = F.sel(big, F.mul(m, 0.5), m)
    e = F.add(F.add(e, F.sel(big, 1.0, 0.0)), F.sel(tiny, -54.0, 0.0))
    f = F.sub(m, 1.0)  # exact
    dh, dl = F.two_sum(m, 1.0)
    sh = F.div(f, dh)
    rr = F.fma(F.neg(sh), dh, f)
    rr = F.fma(F.neg(sh), dl, rr)
    sl = F.div(rr, dh)
    sh, sl = F.fast_two_sum(sh, sl)
    zh, zl = F.dd_mul(sh, sl, sh, sl)
    ch, cl = F.dd_mul(zh, zl, sh, sl)  # s^3
    ch, cl = F.dd_mul(ch, cl, _TWO_THIRDS_H, _TWO_THIRDS_L)
    tail = F.mul(F.mul(ch, zh), F.poly(zh, _LOGDD_T))  # (2/3 s^3) * z * T(z) ~ s^5 terms
    tail = F.mul(tail, 1.5)  # undo the 2/3 factor folded into ch
    eh, el = F.dd_mul_d(_LN2_DH, _LN2_DL, e)
    Lh, Ll = F.dd_add(eh, el, F.add(sh, sh), F.add(sl, sl))
    Lh, Ll = F.dd_add(Lh, Ll, ch, cl)
    Lh, Ll = F.dd_add(Lh, Ll, tail, 0.0)
    return Lh, Ll


def _is_int(F, y):
    return F.and_(F.eq(F.rint(y), y), F.isfinite(y))


def _is_odd_int(F, y):
    h = F.mul(y, 0.5)
    return F.and_(_is_int(F, y), F.ne(F.rint(h), h))


def _k_power(F, x, y):
    ax = F.abs(x)
    generic = F.and_(F.and_(F.gt(ax, 0.0), F.lt(ax, _INF)), F.isfinite(y))
    axs = F.sel(generic, ax, 2.0)
    ys = F.sel(generic, y, 1.0)
    Lh, Ll = _log_dd(F, axs)
    ph, pl = F.two_prod(ys, Lh)
    # |y*log(x)| beyond 2000 over/underflows anyway; clamping keeps exp's reduction finite
    # (an infinite product would otherwise turn the error terms, and the result, into NaN).
    small = F.lt(F.abs(ph), 2000.0)
    negative = F.lt(ph, 0.0)
    pl = F.fma(ys, Ll, pl)
    ph, pl = F.fast_two_sum(ph, pl)
    pl = F.sel(small, pl, 0.0)
    ph = F.sel(small, ph, F.sel(negative, -2000.0, 2000.0))
    p, n = _exp_core(F, ph, pl)
    mag = F.scale(p, n)
    # special magnitudes (C99 Annex F / NumPy)
    ylt0 = F.lt(y, 0.0)
    yinf = F.isinf(y)
    mag = F.sel(F.eq(ax, 0.0), F.sel(ylt0, _INF, 0.0), mag)
    mag = F.sel(F.eq(ax, _INF), F.sel(ylt0, 0.0, _INF), mag)
    inf_case = F.sel(F.b.xor(F.lt(ax, 1.0), ylt0), 0.0, _INF)
    mag = F.sel(yinf, inf_case, mag)
    odd = _is_odd_int(F, y)
    xneg = F.signbit(x)
    res = F.sel(F.and_(xneg, odd), F.neg(mag), mag)
    # negative finite base with a finite non-integer exponent
    bad = F.and_(F.and_(F.lt(x, 0.0), F.isfinite(x)),
                 F.and_(F.isfinite(y), F.not_(_is_int(F, y))))
    res = F.sel(bad, _NAN, res)
    res = F.sel(F.or_(F.isnan(x), F.isnan(y)), F.add(x, y), res)
    one = F.or_(F.eq(y, 0.0), F.eq(x, 1.0))
    res = F.sel(one, 1.0, res)
    res = F.sel(F.and_(F.eq(x, -1.0), yinf), 1.0, res)
    return res


_UNARY: Dict[str, Callable] = {
    "exp": _k_exp, "exp2": _k_exp2, "expm1": _k_expm1,
    "log": _k_log, "log1p": _k_log1p, "log2": _k_log2, "log10": _k_log10,
    "sin": _k_sin, "cos": _k_cos, "tan": _k_tan,
    "tanh": _k_tanh, "sinh": _k_sinh, "cosh": _k_cosh,
    "arcsin": _k_arcsin, "arccos": _k_arccos, "arctan": _k_arctan,
    "arcsinh": _k_arcsinh, "arccosh": _k_arccosh, "arctanh": _k_arctanh,
    "erf": _k_erf, "logistic": _k_logistic, "cbrt": _k_cbrt, "sqrt": _k_sqrt,
}
_BINARY: Dict[str, Callable] = {"arctan2": _k_arctan2, "power": _k_power}

SUPPORTED_UNARY = frozenset(_UNARY)
SUPPORTED_BINARY = frozenset(_BINARY)


# --------------------------------------------------------------------------
# helper functions & public API
# --------------------------------------------------------------------------

def _type_info(ty) -> Tuple[object, object, str]:
    """-> (element type, f64 lane type, mangled suffix)."""
    if isinstance(ty, ir.VectorType):
        el = ty.element
        wide = ir.VectorType(_F64, ty.count)
        sfx = f"v{ty.count}" + ("f32" if isinstance(el, ir.FloatType) else "f64")
    else:
        el = ty
        wide = _F64
        sfx = "f32" if isinstance(el, ir.FloatType) else "f64"
    if not isinstance(el, (ir.FloatType, ir.DoubleType)):
        raise TypeError(f"vecmath: unsupported type {ty}")
    return el, wide, sfx


def helper_function(module: ir.Module, name: str, ty, arity: int) -> ir.Function:
    """Get-or-create the internal alwaysinline helper for (name, type)."""
    table = _UNARY if arity == 1 else _BINARY
    if name not in table:
        raise ValueError(f"vecmath: unsupported {'unary' if arity == 1 else 'binary'} "
                         f"function {name!r}")
    el, wide, sfx = _type_info(ty)
    fname = f"__tj_vm_{name}_{sfx}"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * arity), name=fname)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = list(fn.args)
    if isinstance(el, ir.FloatType):
        if name == "sqrt":  # sqrt is correctly rounded in either width
            b.ret(b.call(_sqrt_decl(module, ty, sfx), args))
            return fn
        k32 = _f32_kernels().get(name) if arity == 1 else None
        if k32 is not None:
            b.ret(k32(_F(b, ty), *args))
            return fn
        inner = helper_function(module, name, wide, arity)
        wargs = [b.fpext(a, wide) for a in args]
        b.ret(b.fptrunc(b.call(inner, wargs), ty))
    else:
        F = _F(b, ty)
        b.ret(table[name](F, *args))
    return fn


def host_has_avx512f() -> bool:
    """Whether helpers may use AVX-512 instructions (code is compiled for the host CPU)."""
    from . import llvm_engine
    return "+avx512f" in llvm_engine.host_cpu_features().split(",")


def _f32_kernels():
    # imported lazily: vecmath_f32 builds on this module's helpers
    from .vecmath_f32 import UNARY32
    return UNARY32


def _sqrt_decl(module, ty, sfx):
    full = f"llvm.sqrt.{sfx}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty]), name=full)
    return fn


def emit_unary(builder: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """Emit ``name(x)`` for float/double scalars or vectors; returns the value."""
    fn = helper_function(builder.module, name, x.type, 1)
    return builder.call(fn, [x])


def emit_binary(builder: ir.IRBuilder, name: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """Emit ``name(x, y)`` with NumPy argument order: ``arctan2(x, y)`` is
    ``np.arctan2(x, y)`` (x is the y-coordinate), ``power(x, y)`` is x**y."""
    if x.type != y.type:
        raise TypeError(f"vecmath.{name}: operand types differ ({x.type} vs {y.type})")
    fn = helper_function(builder.module, name, x.type, 2)
    return builder.call(fn, [x, y])
