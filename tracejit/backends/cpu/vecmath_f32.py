"""Native float32 kernels for :mod:`vecmath` (evaluated in float32 lanes).

Why a separate path: widening float32 to float64 halves the SIMD width and
costs the conversions, so exp/log/sin run ~3x slower than needed.  These
kernels stay in ``<N x float>`` lanes with FMA-based Horner polynomials,
Cody-Waite range reduction with multi-part constants and branch-free selects.
Accuracy is a few tenths of an ulp above correct rounding (see
``tests/test_vecmath.py`` for the budgets, e.g. exp <= 1.5 ulp).

Special values follow NumPy exactly: NaN propagates, +-inf and +-0 map as
IEEE/C99 say, subnormal inputs are pre-scaled, and results are scaled by 2^n
in two exact steps so gradual underflow is a single correct rounding.

The only code not in float32 is the huge-argument trig path (|x| >= 2^17),
which widens the affected lanes to the float64 kernel (exact Payne-Hanek
reduction).  Explicit-vector helpers take it behind a uniform "any lane"
branch, through a slow path compiled on its first call (``rare_paths``);
scalar helpers compute both and select, so loops stay vectorizable.

Polynomials (ascending powers): sin, cos, tan, tanh and sinh are the classic
Cephes single-precision minimax sets; exp, the log(1+f) tail and erf/erfc are
near-minimax fits made with mpmath (Lawson-iterated weighted least squares,
same procedure as the float64 fits), rounded to float32.
"""

from __future__ import annotations

import struct
from fractions import Fraction

import llvmlite.ir as ir

from . import vecmath as _vm

__all__ = ["UNARY32"]

_INF = float("inf")
_NAN = -float("nan")  # the x86 default NaN (sign bit set) that invalid operations give, as in NumPy


def _f32(v) -> float:
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def _split(value: Fraction, parts: int):
    """value as a sum of float32 pieces (each the rounding of the remainder)."""
    out = []
    rem = value
    for _ in range(parts):
        p = _f32(rem)
        out.append(p)
        rem -= Fraction(p)
    return out


_PIO2 = Fraction("1.570796326794896619231321691639751442098584699687552910487")
_LN2 = Fraction("0.693147180559945309417232121458176568075500134360255254120680")
_LOG10_2 = Fraction("0.301029995663981195213738894724493026768189881462108541310")
_INVLN2 = Fraction("1.442695040888963407359924681001892137426645954152985934135")
_INVLN10 = Fraction("0.434294481903251827651128918916605082294397005803666566114")

# pi/2 in four float32 parts.  For |n| < 2^17, x - n*P1 is exact (both are
# multiples of 2^-23 or finer and the difference is < 1), n*P2 is split
# exactly with fma, and the P3/P4 tail error is < 2^-42 absolute.
_P1, _P2, _P3, _P4 = _split(_PIO2, 4)
_TRIG_LIM = 131072.0
_TWO_OVER_PI = _f32(1 / _PIO2)
# ln2 in two parts; x - n*LN2_HI is exact with fma for |n| <= 151.
_LN2_HI, _LN2_LO = _split(_LN2, 2)
_LOG2E = _f32(_INVLN2)
_INVLN2_HI, _INVLN2_LO = _split(_INVLN2, 2)
_INVLN10_HI, _INVLN10_LO = _split(_INVLN10, 2)
_LOG10_2_HI, _LOG10_2_LO = _split(_LOG10_2, 2)

# exp(r) = 1 + r + r^2*P(r), |r| <= ln2/2: fitted, rel. err 3.1e-9.
_EXP_P = (0.4999999403953552, 0.1666652113199234, 0.04166838899254799,
          0.008368710987269878, 0.0013814608100801706)
# log(1+f) = f - f^2/2 + f^3*P(f), sqrt(1/2) <= 1+f < sqrt(2): fitted for the
# relative error of log(1+f), 5.8e-9.
_LOG_P = (0.3333333134651184, -0.250008225440979, 0.20001226663589478, -0.16623355448246002,
          0.14201772212982178, -0.13160216808319092, 0.127614825963974, -0.07634285092353821)
# sin(r) = r + r^3*S(r^2), cos(r) = 1 - r^2/2 + r^4*C(r^2), |r| <= pi/4.
_SIN_S = (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)
_COS_C = (4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5)
# tan(r) = r + r^3*P(r^2), |r| <= pi/4 (Cephes tanf).
_TAN_P = (3.33331568548e-1, 1.33387994085e-1, 5.34112807005e-2, 2.44301354525e-2,
          3.11992232697e-3, 9.38540185543e-3)
# tanh(x) = x + x^3*P(x^2), |x| < 0.625 (Cephes tanhf).
_TANH_P = (-3.33332819422e-1, 1.33314422036e-1, -5.37397155531e-2, 2.06390887954e-2,
           -5.70498872745e-3)
# sinh(x) = x + x^3*P(x^2), |x| < 1 (Cephes sinhf).
_SINH_P = (1.66667160211e-1, 8.33028376239e-3, 2.03721912945e-4)
# erf(x)/x = P(x^2) on [0, 1]: rel. err 1.2e-9.
_ERF_P = (1.1283791065216064, -0.3761262595653534, 0.11283600330352783,
          -0.026854444295167923, 0.005189535208046436, -0.0008020838140510023,
          7.889109110692516e-05)
# erfc(x)*exp(x^2) = Q(x - c) on [1, 2.25] (c=1.625) and [2.25, 4] (c=3.125),
# weighted for the absolute error of erf; max 2.3e-9.
_ERFC_Q1 = (0.30226123332977295, -0.14602984488010406, 0.06496148556470871,
            -0.026990652084350586, 0.01055451761931181, -0.0038388599641621113,
            0.0014753398718312383, -0.0006460484582930803)
_ERFC_Q2 = (0.17244434356689453, -0.05060211569070816, 0.014313101768493652,
            -0.003912951331585646, 0.00104580691549927, -0.00026584797888062894,
            5.351915751816705e-05, -3.264707265770994e-05)


# ---- exp family ---------------------------------------------------------------

def _exp_core(F, x, lo=-104.0, hi=89.0, xlo=None):
    """exp(x) = p * 2^n, p in ~[0.7, 1.42], n in [lo, hi]*log2(e); returns
    (p, n, em) with em = p - 1 before the final rounding.  NaN lanes stay
    NaN (callers select them away).  Below ``lo`` exp(x) rounds to 0: those
    lanes get p = 0 (em = -1) from exp(0), so scaling them stays out of the
    subnormal range, where every vector would take a microcode assist (a
    softmax over a masked row: 7x slower)."""
    gone = F.lt(x, lo)
    xc = F.clamp(F.sel(gone, 0.0, x), lo, hi)
    n = F.rint(F.mul(xc, _LOG2E))
    r = F.fma(F.neg(n), _LN2_HI, xc)  # exact
    r = F.fma(F.neg(n), _LN2_LO, r)
    if xlo is not None:
        r = F.add(r, F.sel(gone, 0.0, xlo))
    em = F.fma(F.mul(r, r), F.poly(r, _EXP_P), r)
    return F.sel(gone, 0.0, F.add(em, 1.0)), n, F.sel(gone, -1.0, em)


def _scale(F, p, n):
    """p * 2^n for integral n in [-252, 254]: two exact power-of-two factors,
    so gradual underflow is a single rounding (cheaper than ``F.scale``).
    NaN n (NaN lanes) gives an arbitrary value."""
    if _has_scalef(F):
        return _scalef(F, p, n)
    b = F.b
    ni = F.to_int(n)
    n1 = b.ashr(ni, F.ci(1))
    n2 = b.sub(ni, n1)
    s1 = F.from_bits(b.shl(b.add(n1, F.ci(127)), F.ci(23)))
    s2 = F.from_bits(b.shl(b.add(n2, F.ci(127)), F.ci(23)))
    return F.mul(F.mul(p, s1), s2)


_ZMM_LANES = 16


def _has_scalef(F) -> bool:
    zmms = (F.n or 0) // _ZMM_LANES
    return zmms >= 1 and F.n % _ZMM_LANES == 0 and zmms & (zmms - 1) == 0 and _vm.host_has_avx512f()


def _scalef(F, p, n):
    """AVX-512 ``vscalefps``: p * 2^floor(n) with one rounding (gradual
    underflow and overflow included) in one instruction instead of nine;
    NaN in n or p gives NaN.  Wider vectors are done 16 lanes at a time."""
    b = F.b
    zmm = ir.VectorType(F.el, _ZMM_LANES)
    name = "llvm.x86.avx512.mask.scalef.ps.512"
    fn = F.m.globals.get(name)
    if fn is None:
        i16, i32 = ir.IntType(16), ir.IntType(32)
        fn = ir.Function(F.m, ir.FunctionType(zmm, [zmm, zmm, zmm, i16, i32]), name=name)
    # all lanes, rounding as MXCSR says (4 = _MM_FROUND_CUR_DIRECTION)
    all_lanes, current_rounding = ir.Constant(ir.IntType(16), -1), ir.Constant(ir.IntType(32), 4)
    if F.n == _ZMM_LANES:
        return b.call(fn, [p, n, p, all_lanes, current_rounding])
    parts = []
    for start in range(0, F.n, _ZMM_LANES):
        lanes = ir.Constant(ir.VectorType(ir.IntType(32), _ZMM_LANES), list(range(start, start + _ZMM_LANES)))
        ps, ns = (b.shuffle_vector(v, ir.Constant(F.ty, ir.Undefined), lanes) for v in (p, n))
        parts.append(b.call(fn, [ps, ns, ps, all_lanes, current_rounding]))
    while len(parts) > 1:   # concatenate pairwise: shufflevector joins two equal halves
        width = parts[0].type.count
        join = ir.Constant(ir.VectorType(ir.IntType(32), 2 * width), list(range(2 * width)))
        parts = [b.shuffle_vector(parts[i], parts[i + 1], join) for i in range(0, len(parts), 2)]
    return parts[0]


def _k_exp(F, x):
    p, n, _ = _exp_core(F, x)
    if _has_scalef(F):
        return _scalef(F, p, n)   # NaN x -> NaN n -> NaN
    return F.sel(F.isnan(x), x, _scale(F, p, n))


def _k_exp2(F, x):
    xc = F.sel(F.isnan(x), 0.0, x)
    xc = F.clamp(xc, -152.0, 129.0)
    n = F.rint(xc)
    r = F.sub(xc, n)  # exact, |r| <= 1/2
    uh = F.mul(r, _LN2_HI)  # u = r*ln2 = uh + ul
    ul = F.fma(r, _LN2_LO, F.fma(r, _LN2_HI, F.neg(uh)))
    p = F.add(1.0, F.fma(F.mul(uh, uh), F.poly(uh, _EXP_P), uh))
    p = F.fma(p, ul, p)
    return F.sel(F.isnan(x), x, _scale(F, p, n))


def _k_expm1(F, x):
    xc = F.sel(F.isnan(x), 0.0, x)
    # below -18 the result rounds to -1; above 89 it overflows
    xc = F.clamp(xc, -18.0, 89.0)
    n = F.rint(F.mul(xc, _LOG2E))
    t = F.fma(F.neg(n), _LN2_HI, xc)  # exact
    r = F.fma(F.neg(n), _LN2_LO, t)
    rlo = F.fma(F.neg(n), _LN2_LO, F.sub(t, r))  # rounding error of r
    em = F.fma(F.mul(r, r), F.poly(r, _EXP_P), r)
    em = F.fma(rlo, F.add(em, 1.0), em)
    # expm1(x) = 2^n*expm1(r) + (2^n - 1); 2^128 is split off as a final *2.
    na = F.sel(F.gt(n, 127.0), 127.0, n)
    s = F.pow2i(na)
    res = F.fma(s, em, F.sub(s, 1.0))
    res = F.sel(F.gt(n, na), F.mul(res, 2.0), res)
    res = F.sel(F.eq(x, 0.0), x, res)  # keeps -0
    return F.sel(F.isnan(x), x, res)


# ---- log family ---------------------------------------------------------------------

def _log_parts(F, x):
    """x > 0 finite -> (e, f, t): log(x) = e*ln2 + f + t, |f| < 0.415, |t| << |f|."""
    tiny = F.lt(x, 1.1754943508222875e-38)
    xs = F.sel(tiny, F.mul(x, 8388608.0), x)  # 2^23: subnormals
    b = F.b
    bi = F.bits(xs)
    # bits relative to sqrt(1/2) -> exponent k with mantissa in [sqrt(1/2), sqrt(2))
    ix = b.sub(bi, F.ci(0x3F3504F3))
    k = b.ashr(ix, F.ci(23))
    m = F.from_bits(b.sub(bi, b.shl(k, F.ci(23))))
    e = F.add(F.to_float(k), F.sel(tiny, -23.0, 0.0))
    f = F.sub(m, 1.0)  # exact
    return e, f, _log_tail(F, f)


def _log_tail(F, f):
    z = F.mul(f, f)
    return F.fma(F.mul(z, f), F.poly(f, _LOG_P), F.mul(F.mul(f, -0.5), f))


def _log_finish(F, x, res):
    """Special inputs (0, <0, inf, nan); the other lanes' results are kept.
    The kernels run on the raw bits of every lane: that is harmless (no
    traps, no poison) and cheaper than sanitizing first."""
    ok = F.and_(F.gt(x, 0.0), F.lt(x, _INF))
    special = F.sel(F.eq(x, 0.0), -_INF, F.sel(F.lt(x, 0.0), _NAN, x))
    return F.sel(ok, res, special)


def _k_log(F, x):
    e, f, t = _log_parts(F, x)
    res = F.fma(e, _LN2_HI, F.add(f, F.fma(e, _LN2_LO, t)))
    return _log_finish(F, x, res)


def _scaled_log(F, x, c_hi, c_lo, e_hi, e_lo):
    """(log(m)*c) + e*E with c and E as float32 pairs."""
    e, f, t = _log_parts(F, x)
    v = F.fma(t, c_hi, F.mul(f, c_lo))
    v = F.fma(f, c_hi, v)
    if e_lo is None:
        res = F.add(F.mul(e, e_hi), v)  # e*1 exact
    else:
        res = F.fma(e, e_hi, F.fma(e, e_lo, v))
    return _log_finish(F, x, res)


def _k_log2(F, x):
    return _scaled_log(F, x, _INVLN2_HI, _INVLN2_LO, 1.0, None)


def _k_log10(F, x):
    return _scaled_log(F, x, _INVLN10_HI, _INVLN10_LO, _LOG10_2_HI, _LOG10_2_LO)


def _k_log1p(F, x):
    ok = F.and_(F.gt(x, -1.0), F.lt(x, _INF))
    xc = F.sel(ok, x, 0.0)
    # 1+x in [sqrt(1/2), sqrt(2)): f = x exactly, no reduction needed.
    mid = F.and_(F.ge(xc, -0.29289321881345254), F.lt(xc, 0.41421356237309503))
    u = F.add(xc, 1.0)
    # Kahan: the rounding error of u, relative to u, corrects log(u).
    c = F.sel(F.ge(u, 2.0), F.sub(1.0, F.sub(u, xc)), F.sub(xc, F.sub(u, 1.0)))
    c = F.div(c, F.sel(mid, 1.0, u))
    e, f, _ = _log_parts(F, F.sel(mid, 1.0, u))
    f = F.sel(mid, xc, f)
    e = F.sel(mid, 0.0, e)
    c = F.sel(mid, 0.0, c)
    t = _log_tail(F, f)
    res = F.fma(e, _LN2_HI, F.add(f, F.fma(e, _LN2_LO, F.add(t, c))))
    res = F.sel(F.eq(x, -1.0), -_INF, res)
    res = F.sel(F.lt(x, -1.0), _NAN, res)
    res = F.sel(F.eq(x, _INF), _INF, res)
    res = F.sel(F.eq(x, 0.0), x, res)
    return F.sel(F.isnan(x), x, res)


# ---- trig -----------------------------------------------------------------------------

def _reduce(F, x):
    """|x| < 2^17 -> (rh, rl, q): x = q*pi/2 + rh + rl, |rh| <~ pi/4."""
    n = F.rint(F.mul(x, _TWO_OVER_PI))
    nn = F.neg(n)
    r1 = F.fma(nn, _P1, x)  # exact
    p = F.mul(n, _P2)
    pe = F.fma(n, _P2, F.neg(p))
    # Fast2Sum is exact here: r1 is a multiple of 2^-24 and |p| < 2^-7, so r1
    # is a multiple of ulp(p) (Dekker's condition, with r1's exponent >= p's).
    # Written as a difference, the same values as fast_two_sum(r1, -p) with
    # no negation left for the code generator to materialize.
    rh = F.sub(r1, p)
    e = F.sub(F.sub(r1, rh), p)
    rl = F.fma(nn, _P4, F.fma(nn, _P3, F.sub(e, pe)))
    qi = F.b.and_(F.to_int(n), F.ci(3))
    return rh, rl, qi


def _sin_cos_poly(F, rh, rl):
    z = F.mul(rh, rh)
    sn = F.add(rh, F.fma(F.mul(z, rh), F.poly(z, _SIN_S), F.mul(rl, F.fma(z, -0.5, 1.0))))
    hz = F.mul(z, 0.5)
    w = F.sub(1.0, hz)
    corr = F.add(F.sub(F.sub(1.0, w), hz),
                 F.fma(F.mul(z, z), F.poly(z, _COS_C), F.neg(F.mul(rh, rl))))
    return sn, F.add(w, corr)


def _trig_fast(F, name, x):
    """float32 result for |x| < 2^17 (other lanes: garbage, replaced later)."""
    rh, rl, qi = _reduce(F, x)
    b = F.b
    odd = b.icmp_unsigned("!=", b.and_(qi, F.ci(1)), F.ci(0))
    if name == "tan":  # tan(rh + rl) ~ tan(rh) + rl*(1 + rh^2); odd quadrant: -1/tan
        z = F.mul(rh, rh)
        t = F.add(rh, F.fma(F.mul(z, rh), F.poly(z, _TAN_P), F.fma(rl, z, rl)))
        return F.sel(odd, F.div(-1.0, t), t)
    sn, cs = _sin_cos_poly(F, rh, rl)
    if name == "sin":
        v = F.sel(odd, cs, sn)
        neg = b.icmp_unsigned("!=", b.and_(qi, F.ci(2)), F.ci(0))
    else:
        v = F.sel(odd, sn, cs)
        neg = b.icmp_unsigned("!=", b.and_(b.add(qi, F.ci(1)), F.ci(2)), F.ci(0))
    return F.sel(neg, F.neg(v), v)


def _wide(F, name, x):
    """fptrunc(f64 kernel(fpext x)) -- correctly rounded to ~0.5 ulp."""
    wty = ir.VectorType(ir.DoubleType(), F.n) if F.n else ir.DoubleType()
    fn = _vm.helper_function(F.m, name, wty, 1)
    return F.b.fptrunc(F.b.call(fn, [F.b.fpext(x, wty)]), F.ty)


def _trig(F, name, x):
    fin = F.isfinite(x)
    small = F.lt(F.abs(x), _TRIG_LIM)
    # lanes that are not small get poison/garbage here and are replaced below
    res = _trig_fast(F, name, x)
    if name != "cos":
        res = F.sel(F.eq(x, 0.0), x, res)  # keeps -0
    res = F.sel(fin, res, F.add(x, _NAN))  # inf -> nan, nan -> nan
    large = F.and_(fin, F.not_(small))
    if F.n is None:
        # scalar helper: branch-free, so loops calling it stay vectorizable
        return F.sel(large, _wide(F, name, F.sel(large, x, 0.0)), res)
    # Compiled on first use: the float64 reduction is ~10x the code of the
    # rest and almost never needed.
    return _vm.rare_lanes(F, name, x, large, res)


def _k_sin(F, x):
    return _trig(F, "sin", x)


def _k_cos(F, x):
    return _trig(F, "cos", x)


def _k_tan(F, x):
    return _trig(F, "tan", x)


# ---- hyperbolic / logistic ----------------------------------------------------------

def _k_tanh(F, x):
    a = F.abs(x)
    z = F.mul(x, x)
    r_small = F.fma(F.mul(x, z), F.poly(z, _TANH_P), x)
    # 1 - 2/(e^{2a}+1); tanh rounds to 1 beyond a = 9.01
    p, n, _ = _exp_core(F, F.mul(F.sel(F.lt(a, 10.0), a, 10.0), 2.0))
    E = F.mul(p, F.pow2i(n))  # n <= 29
    r_big = F.sub(1.0, F.div(2.0, F.add(E, 1.0)))
    res = F.copysign(F.sel(F.lt(a, 0.625), r_small, r_big), x)
    return F.sel(F.isnan(x), x, res)


def _k_logistic(F, x):
    # exp(-|x|) = Eh + El and 1 + exp(-|x|) = dh + dl are kept as float32
    # pairs and the quotient gets one residual correction: the result is
    # then within ~1 ulp instead of the ~3 a plain E/(1+E) allows.
    p, n, em = _exp_core(F, F.neg(F.abs(x)))
    pl = F.sub(em, F.sub(p, 1.0))  # rounding error of p = 1 + em (exact)
    eh, el = _scale(F, p, n), _scale(F, pl, n)
    dh = F.add(eh, 1.0)
    dl = F.add(F.sub(eh, F.sub(dh, 1.0)), el)
    pos = F.ge(x, 0.0)
    num = F.sel(pos, 1.0, eh)
    rcp = F.div(1.0, dh)
    q0 = F.mul(num, rcp)
    rr = F.add(F.fma(F.neg(q0), dh, num), F.fma(F.neg(q0), dl, F.sel(pos, 0.0, el)))
    res = F.fma(rr, rcp, q0)
    return F.sel(F.isnan(x), x, res)


def _cosh_sinh_big(F, a, sign):
    """2^(n-1) * (p + sign*2^(-2n)/p) = (e^a + sign*e^-a)/2 for a >= 0."""
    p, n, _ = _exp_core(F, a, hi=90.0)
    # q = 2^-2n/p; once it is below 2^-40 relative it cannot affect the
    # rounding, and clamping the exponent keeps it out of the (slow)
    # subnormal range.
    q = F.mul(F.div(1.0, p), F.pow2i(F.sel(F.gt(n, 20.0), -40.0, F.mul(n, -2.0))))
    s = F.add(p, q) if sign > 0 else F.sub(p, q)
    return _scale(F, s, F.sub(n, 1.0))


def _k_cosh(F, x):
    res = _cosh_sinh_big(F, F.abs(x), +1)
    return F.sel(F.isnan(x), x, res)


def _k_sinh(F, x):
    a = F.abs(x)
    z = F.mul(x, x)
    r_small = F.fma(F.mul(x, z), F.poly(z, _SINH_P), x)
    r_big = F.copysign(_cosh_sinh_big(F, a, -1), x)
    res = F.sel(F.lt(a, 1.0), r_small, r_big)
    return F.sel(F.isnan(x), x, res)


def _k_erf(F, x):
    a = F.abs(x)
    ac = F.sel(F.lt(a, 4.0), a, 4.0)  # also maps nan/inf to 4 (erf == 1)
    r1 = F.mul(ac, F.poly(F.mul(ac, ac), _ERF_P))
    # 1 <= a < 4: erf = 1 - exp(-a^2) * Q(a - c); a^2 is carried as a
    # float32 pair so exp(-a^2) keeps full relative accuracy.
    lo = F.lt(ac, 2.25)
    v = F.sub(ac, F.sel(lo, 1.625, 3.125))
    coeffs = [F.sel(lo, q1, q2) for q1, q2 in zip(_ERFC_Q1, _ERFC_Q2)]
    acc = coeffs[-1]
    for cf in reversed(coeffs[:-1]):
        acc = F.fma(acc, v, cf)
    sqh, sql = F.two_prod(ac, ac)
    p, n, _ = _exp_core(F, F.neg(sqh), xlo=F.neg(sql))
    E = F.mul(p, F.pow2i(n))  # n >= -24: normal
    r2 = F.fma(F.neg(E), acc, 1.0)
    res = F.sel(F.lt(a, 1.0), r1, F.sel(F.lt(a, 4.0), r2, 1.0))
    res = F.copysign(res, x)
    return F.sel(F.isnan(x), x, res)


UNARY32 = {
    "exp": _k_exp, "exp2": _k_exp2, "expm1": _k_expm1,
    "log": _k_log, "log1p": _k_log1p, "log2": _k_log2, "log10": _k_log10,
    "sin": _k_sin, "cos": _k_cos, "tan": _k_tan,
    "tanh": _k_tanh, "sinh": _k_sinh, "cosh": _k_cosh,
    "logistic": _k_logistic, "erf": _k_erf,
}
