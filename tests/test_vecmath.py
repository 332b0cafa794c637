"""Accuracy / special-value tests for tracejit.backends.cpu.vecmath.

float32 functions with a native float32 kernel (``vecmath_f32.UNARY32``) are
checked against their documented ULP budgets (``TOL32``); the others still
widen to float64 internally and must stay correctly rounded (0.5 ulp).

References
----------
* float32: NumPy float64 (or ``math.erf``) evaluated on the exactly widened
  inputs; those are within ~1 ulp(f64) = 2^-29 ulp(f32), negligible here.
  Error = |out - ref| / spacing(float32(ref)).
* float64: NumPy on ``np.longdouble`` (x87 80-bit: glibc's *l functions, with
  ~2^-11 ulp(f64) error; their own argument reduction is exact, so this also
  covers huge trig arguments).  erf uses mpmath.  Error is the fractional ulp
  distance |out - ref| / spacing(float64(ref)), computed in long double; this
  is the integer-representation distance refined by the sub-ulp part.

Kernels: ``void k(ptr in, ptr out, i64 n)`` with an explicit <W x T> body
(W as in compiled kernels: 16 for f32, 8 for f64 on AVX-512) plus a scalar tail, and a second, purely scalar loop
that relies on LLVM's loop vectorizer.  All kernels of one dtype share a
module, compiled once per session.
"""

import ctypes
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import llvmlite.binding as llvm  # noqa: E402
import llvmlite.ir as ir  # noqa: E402

from tracejit.backends.cpu import llvm_engine, vecmath  # noqa: E402

import mpmath  # noqa: E402  (a test dependency: the float64 erf reference)

from tracejit.backends.cpu.vecmath_f32 import UNARY32  # noqa: E402

LD = np.longdouble
HAVE_LD = np.finfo(LD).nmant >= 63

# ----------------------------------------------------------------------------
# kernel construction
# ----------------------------------------------------------------------------

I64 = ir.IntType(64)
PTR = ir.PointerType()
# The kernels' own vector width (64-byte vectors on AVX-512 hosts), so the
# tests run the code paths kernels use (e.g. AVX-512 vscalefps in exp).
_VECTOR_BYTES = 64 if vecmath.host_has_avx512f() else 32
WIDTH = {np.float32: _VECTOR_BYTES // 4, np.float64: _VECTOR_BYTES // 8}
ELT = {np.float32: ir.FloatType(), np.float64: ir.DoubleType()}


def _loop(b, fn, n, start, step, body):
    """for (i = start; i < n; i += step) body(i)  -- with a guard."""
    pre = b.block
    head = fn.append_basic_block("head")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, n), loop, done)
    b.position_at_end(loop)
    body(i)
    nxt = b.add(i, ir.Constant(I64, step))
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)


def build_kernel(module, kname, fname, dt, arity, mode, wrong=False):
    """mode 'vec': explicit vectors + scalar tail; 'scalar': scalar loop only."""
    elt = ELT[dt]
    W = WIDTH[dt]
    fty = ir.FunctionType(ir.VoidType(), [PTR] * (arity + 1) + [I64])
    fn = ir.Function(module, fty, name=kname)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ins, out, n = fn.args[:arity], fn.args[arity], fn.args[arity + 1]

    def op(*vals):
        if wrong:  # deliberately inaccurate "exp": 1 + x + x^2/2
            x = vals[0]
            one = ir.Constant(x.type, 1.0) if not isinstance(x.type, ir.VectorType) else \
                ir.Constant(x.type, [ir.Constant(elt, 1.0)] * x.type.count)
            half = ir.Constant(x.type, 0.5) if not isinstance(x.type, ir.VectorType) else \
                ir.Constant(x.type, [ir.Constant(elt, 0.5)] * x.type.count)
            return b.fadd(b.fadd(one, x), b.fmul(half, b.fmul(x, x)))
        if arity == 1:
            return vecmath.emit_unary(b, fname, vals[0])
        return vecmath.emit_binary(b, fname, vals[0], vals[1])

    def scalar_body(i):
        vals = [b.load(b.gep(p, [i], source_etype=elt), typ=elt) for p in ins]
        b.store(op(*vals), b.gep(out, [i], source_etype=elt))

    zero = ir.Constant(I64, 0)
    if mode == "vec":
        vt = ir.VectorType(elt, W)
        nvec = b.and_(n, ir.Constant(I64, ~(W - 1)))

        def vec_body(i):
            vals = []
            for p in ins:
                ld = b.load(b.gep(p, [i], source_etype=elt), typ=vt)
                ld.align = 1
                vals.append(ld)
            st = b.store(op(*vals), b.gep(out, [i], source_etype=elt))
            st.align = 1

        _loop(b, fn, nvec, zero, W, vec_body)
        _loop(b, fn, n, nvec, 1, scalar_body)
    else:
        _loop(b, fn, n, zero, 1, scalar_body)
    b.ret_void()
    return fn


UNARY = sorted(vecmath.SUPPORTED_UNARY)
BINARY = sorted(vecmath.SUPPORTED_BINARY)
DTYPES = [np.float32, np.float64]
_MODULES = {}


def _tag(dt):
    return "f32" if dt is np.float32 else "f64"


def compiled(dt):
    """One module per dtype holding every kernel (vec + scalar modes)."""
    if dt not in _MODULES:
        m = ir.Module(name=f"vm_{_tag(dt)}")
        for f in UNARY:
            for mode in ("vec", "scalar"):
                build_kernel(m, f"k_{f}_{mode}", f, dt, 1, mode)
        for f in BINARY:
            for mode in ("vec", "scalar"):
                build_kernel(m, f"k_{f}_{mode}", f, dt, 2, mode)
        build_kernel(m, "k_wrongexp_vec", "exp", dt, 1, "vec", wrong=True)
        llvm.parse_assembly(str(m)).verify()
        _MODULES[dt] = llvm_engine.compile_ir(m, name=f"vm_{_tag(dt)}")
    return _MODULES[dt]


def run(dt, kname, *arrays):
    cm = compiled(dt)
    arity = len(arrays)
    cfn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (arity + 1)), ctypes.c_int64)(
        cm.address(kname))
    ins = [np.ascontiguousarray(a, dtype=dt) for a in arrays]
    out = np.empty_like(ins[0])
    cfn(*[a.ctypes.data for a in ins], out.ctypes.data, out.size)
    return out


# ----------------------------------------------------------------------------
# references and ULP measurement
# ----------------------------------------------------------------------------

def _logistic_ref(x):
    return 1 / (1 + np.exp(-x))


NP_NAME = {"logistic": None, "erf": None}


def reference(name, dt, *args):
    """Reference in float64 (for f32) or long double (for f64)."""
    wide = np.float64 if dt is np.float32 else LD
    a = [np.asarray(x, dtype=dt).astype(wide) for x in args]
    with np.errstate(all="ignore"):
        if name == "logistic":
            return _logistic_ref(a[0])
        if name == "erf":
            if dt is np.float32:
                return np.array([math.erf(v) for v in a[0].tolist()], dtype=np.float64)
            mpmath.mp.dps = 30
            return np.array([LD(str(mpmath.erf(mpmath.mpf(float(v))))) if np.isfinite(v)
                             else LD(math.erf(float(v))) for v in a[0]], dtype=LD)
        return getattr(np, name)(*a)


def ulp_error(out, ref, dt):
    """Per-element error in ulps of dt; inf where finiteness/NaN-ness differ."""
    out = np.asarray(out)
    with np.errstate(all="ignore"):
        ref_r = ref.astype(dt)
        err = np.zeros(out.shape, dtype=np.float64)
        fin = np.isfinite(out) & np.isfinite(ref_r)
        wide = np.float64 if dt is np.float32 else LD
        sp = np.spacing(np.abs(ref_r[fin])).astype(wide)
        # np.spacing(max finite) is inf; use the ulp below it
        big = ~np.isfinite(sp)
        sp[big] = np.spacing(np.finfo(dt).max / 2).astype(wide) * 2
        err[fin] = (np.abs(out[fin].astype(wide) - ref[fin]) / sp).astype(np.float64)
        nf = ~fin
        same = (np.isnan(out[nf]) & np.isnan(ref_r[nf])) | (out[nf] == ref_r[nf])
        err[nf] = np.where(same, 0.0, np.inf)
    return err


# ----------------------------------------------------------------------------
# samples
# ----------------------------------------------------------------------------

def random_bits(dt, n, seed):
    """Uniform over bit patterns == log-uniform over the whole finite range."""
    rng = np.random.default_rng(seed)
    if dt is np.float32:
        x = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        x = rng.integers(0, 2 ** 63, n, dtype=np.uint64)
        x = (x | (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63))).view(np.float64)
    return x[np.isfinite(x)]


def special_values(dt):
    fi = np.finfo(dt)
    tiny = fi.smallest_normal
    dn = fi.smallest_subnormal
    vals = [0.0, 1.0, 2.0, 0.5, 10.0, 100.0, dn, 2 * dn, 3 * dn, tiny * 0.5, tiny, tiny * 1.5,
            fi.max, fi.max / 2, fi.eps, 1 - fi.epsneg, 1 + fi.eps, 0.75, 1.25, 3.0, 22.0,
            88.72, 88.73, 89.0, 103.9, 104.0, 709.78, 709.79, 710.0, 745.1, 745.2,
            1e5, 1e6, 1e10, 1e22, 1e300, 2 ** 20, 2 ** 28, 2 ** 53]
    pio2 = math.pi / 2
    for k in [1, 2, 3, 4, 5, 10, 100, 1000, 12345, 2 ** 19, 2 ** 20, 2 ** 21, 2 ** 40]:
        c = k * pio2
        vals += [c, float(np.nextafter(c, 0)), float(np.nextafter(c, 2 * c))]
    # known hard case for double reduction (x mod pi/2 ~ 4.7e-19)
    vals += [6381956970095103.0 * 2.0 ** 797, 5.319372648326541e255]
    a = np.array(vals, dtype=np.float64)
    with np.errstate(over="ignore"):
        a = a.astype(dt)
    a = a[np.isfinite(a)]
    return np.concatenate([a, -a])


EXACT_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]

# per-function dense core ranges (lo, hi) in float64
CORE = {
    "exp": (-750, 710), "exp2": (-1080, 1025), "expm1": (-40, 710),
    "log": (0, 10), "log1p": (-1, 10), "log2": (0, 10), "log10": (0, 10),
    "sin": (-20, 20), "cos": (-20, 20), "tan": (-20, 20),
    "tanh": (-25, 25), "sinh": (-712, 712), "cosh": (-712, 712),
    "arcsin": (-1, 1), "arccos": (-1, 1), "arctan": (-10, 10),
    "arcsinh": (-10, 10), "arccosh": (1, 10), "arctanh": (-1, 1),
    "erf": (-7, 7), "logistic": (-760, 60), "cbrt": (-10, 10), "sqrt": (0, 10),
}
CORE32 = {"exp": (-104, 89), "exp2": (-150, 129), "expm1": (-20, 89), "sinh": (-90, 90),
          "cosh": (-90, 90), "logistic": (-105, 20)}
EXTRA = {  # extra dense windows where accuracy is delicate
    "expm1": [(-1, 1), (-1e-5, 1e-5)], "log1p": [(-1e-5, 1e-5), (-0.5, 0.5)],
    "sin": [(-1e4, 1e4), (-1e7, 1e7), (1e15, 1e16)],
    "cos": [(-1e4, 1e4), (-1e7, 1e7), (1e15, 1e16)],
    "tan": [(-1e4, 1e4), (-1e7, 1e7)],
    "tanh": [(-1.5, 1.5), (-1e-4, 1e-4)], "sinh": [(-2, 2)], "erf": [(-2, 2), (-1e-3, 1e-3)],
    "arcsin": [(0.45, 0.55), (0.999, 1)], "arccos": [(-1, -0.999), (0.45, 0.55)],
    "arctanh": [(-0.6, 0.6), (0.999, 1)], "arccosh": [(1, 1.01), (1e7, 1e9)],
    "arcsinh": [(-1e-3, 1e-3), (1e7, 1e9)], "log": [(0.7, 1.5)], "log2": [(0.7, 1.5)],
    "log10": [(0.7, 1.5)], "cbrt": [(1e-310, 1e-300)],
}

# max ULP budgets.  float32: native-f32 kernels get the product budgets below;
# functions still evaluated in float64 and rounded once must be within 0.5 ulp.
TOL32_NATIVE = {"exp": 1.5, "exp2": 1.5, "log": 1.5, "sin": 1.0, "cos": 1.0, "tan": 2.0,
                "tanh": 5.0, "log1p": 3.0, "expm1": 6.5, "erf": 7.0, "logistic": 2.5,
                "log2": 2.5, "log10": 2.5, "sinh": 4.0, "cosh": 4.0}
TOL32 = {name: TOL32_NATIVE.get(name, 0.5) if name in UNARY32 else 0.5
         for name in sorted(vecmath.SUPPORTED_UNARY | vecmath.SUPPORTED_BINARY)}
TOL64 = {"exp": 2, "log": 1, "sin": 1.5, "cos": 1.5, "tanh": 3, "log1p": 2, "expm1": 2,
         "erf": 2, "sqrt": 0.5}
DEFAULT64 = 4.0

N_RANDOM = 200_000
N_LINEAR = 100_000


def unary_samples(name, dt):
    parts = [random_bits(dt, N_RANDOM, sum(map(ord, name))), special_values(dt)]
    lo, hi = (CORE32.get(name) if dt is np.float32 and name in CORE32 else CORE[name])
    parts.append(np.linspace(lo, hi, N_LINEAR))
    for lo, hi in EXTRA.get(name, []):
        parts.append(np.linspace(lo, hi, N_LINEAR // 5))
    with np.errstate(over="ignore"):
        x = np.concatenate([p.astype(dt) for p in parts])
    x = x[np.isfinite(x)]
    if name == "erf" and dt is np.float64:  # mpmath is slow: subsample
        rng = np.random.default_rng(7)
        x = np.concatenate([rng.choice(x, 40_000, replace=False), special_values(dt)])
    return x


def measure_unary(name, dt, mode="vec"):
    x = unary_samples(name, dt)
    out = run(dt, f"k_{name}_{mode}", x)
    ref = reference(name, dt, x)
    err = ulp_error(out, ref, dt)
    return x, out, ref, err


_RESULTS = {}

# ----------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("dt", DTYPES, ids=_tag)
@pytest.mark.parametrize("name", UNARY)
def test_unary_accuracy(name, dt):
    if dt is np.float64 and not HAVE_LD:
        pytest.skip("needs an 80-bit long double for a float64 reference")
    x, out, ref, err = measure_unary(name, dt)
    tol = (TOL32[name] if dt is np.float32 else TOL64.get(name, DEFAULT64))
    i = int(np.argmax(err))
    _RESULTS[(name, _tag(dt))] = float(err[i])
    assert err[i] <= tol, (f"{name}[{_tag(dt)}] max ulp {err[i]:.3f} > {tol} at x={x[i]!r}: "
                           f"got {out[i]!r}, ref {ref[i]!r}")


@pytest.mark.parametrize("dt", DTYPES, ids=_tag)
@pytest.mark.parametrize("name", UNARY)
def test_unary_scalar_path_matches(name, dt):
    """The scalar helper (auto-vectorized loop) agrees with the vector form."""
    x = np.concatenate([random_bits(dt, 20_000, 3), special_values(dt),
                        np.linspace(*CORE[name], 5003).astype(dt)])
    a = run(dt, f"k_{name}_vec", x)
    s = run(dt, f"k_{name}_scalar", x)
    same = (a.view(np.uint32 if dt is np.float32 else np.uint64) ==
            s.view(np.uint32 if dt is np.float32 else np.uint64)) | (np.isnan(a) & np.isnan(s))
    assert same.all(), f"{name}: scalar/vector mismatch at {x[~same][:5]}"


def _np_special(name, dt, xs):
    if name == "logistic":
        with np.errstate(all="ignore"):
            return (1 / (1 + np.exp(-np.asarray(xs, dtype=np.float64)))).astype(dt)
    if name == "erf":
        return np.array([math.erf(v) if not math.isnan(v) else math.nan for v in xs], dtype=dt)
    with np.errstate(all="ignore"):
        return getattr(np, name)(np.asarray(xs, dtype=dt))


def _bits_equal(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


@pytest.mark.parametrize("dt", DTYPES, ids=_tag)
@pytest.mark.parametrize("name", UNARY)
def test_unary_exact_specials(name, dt):
    xs = np.array(EXACT_SPECIALS, dtype=dt)
    for mode in ("vec", "scalar"):
        out = run(dt, f"k_{name}_{mode}", xs)
        exp = _np_special(name, dt, xs)
        # +-1 inputs are only compared where the true result is exact
        exact = (np.abs(xs) != 1) | np.isnan(exp) | np.isinf(exp) | (exp == 0) | (np.abs(exp) == 1)
        ok = _bits_equal(out, exp) | ~exact
        assert ok.all(), f"{name}[{mode}] specials {xs[~ok]} -> {out[~ok]}, numpy {exp[~ok]}"


def _binary_samples(name, dt):
    rng = np.random.default_rng(11)
    n = 120_000
    if name == "arctan2":
        y = random_bits(dt, n, 1)
        x = random_bits(dt, n, 2)
        m = min(len(x), len(y))
        y, x = y[:m], x[:m]
        g = rng.uniform(-10, 10, (2, 100_000))
        return np.concatenate([y, g[0]]).astype(dt), np.concatenate([x, g[1]]).astype(dt)
    # power: positive bases over the range, exponents chosen so results span
    # normal/subnormal/overflow; negative bases with integer exponents.
    lim = 700 if dt is np.float64 else 100
    xb = np.abs(random_bits(dt, n, 4)).astype(np.float64)
    with np.errstate(all="ignore"):
        lg = np.log(xb)
        target = rng.uniform(-1.05 * lim, lim, xb.size)
        yb = np.where(lg != 0, target / lg, 1.0)
    x1 = rng.uniform(0, 5, 100_000)
    y1 = rng.uniform(-30, 30, 100_000)
    x2 = -rng.uniform(0, 3, 20_000)
    y2 = np.round(rng.uniform(-40, 40, 20_000))
    x3 = rng.uniform(0.999, 1.001, 20_000)
    y3 = rng.uniform(-5e5, 5e5, 20_000) if dt is np.float64 else rng.uniform(-5e4, 5e4, 20_000)
    with np.errstate(all="ignore"):
        x = np.concatenate([xb, x1, x2, x3]).astype(dt)
        y = np.concatenate([yb, y1, y2, y3]).astype(dt)
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]


@pytest.mark.parametrize("dt", DTYPES, ids=_tag)
@pytest.mark.parametrize("name", BINARY)
def test_binary_accuracy(name, dt):
    a, b = _binary_samples(name, dt)
    out = run(dt, f"k_{name}_vec", a, b)
    ref = reference(name, dt, a, b)
    err = ulp_error(out, ref, dt)
    tol = TOL32[name] if dt is np.float32 else DEFAULT64
    i = int(np.argmax(err))
    _RESULTS[(name, _tag(dt))] = float(err[i])
    assert err[i] <= tol, (f"{name}[{_tag(dt)}] max ulp {err[i]:.3f} > {tol} at "
                           f"({a[i]!r}, {b[i]!r}): got {out[i]!r}, ref {ref[i]!r}")
    s = run(dt, f"k_{name}_scalar", a, b)
    assert (_bits_equal(out, s)).all()


@pytest.mark.parametrize("dt", DTYPES, ids=_tag)
@pytest.mark.parametrize("name", BINARY)
def test_binary_exact_specials(name, dt):
    sv = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0,
          1.5, -1.5, 1e300, -1e300, 5e-324, -5e-324]
    g = np.array(np.meshgrid(sv, sv)).reshape(2, -1)
    with np.errstate(all="ignore"):
        a, b = g[0].astype(dt), g[1].astype(dt)
        exp = getattr(np, name)(a, b)
    for mode in ("vec", "scalar"):
        out = run(dt, f"k_{name}_{mode}", a, b)
        if name == "power":  # exact cases only: specials, and results that are exact
            sel = ~np.isfinite(exp) | (exp == 0) | (np.abs(exp) == 1) | \
                  ~np.isfinite(a) | ~np.isfinite(b) | (a == 0) | (b == 0)
        else:
            sel = ~np.isfinite(a) | ~np.isfinite(b) | (a == 0) | (b == 0)
        ok = _bits_equal(out, exp) | ~sel
        assert ok.all(), (f"{name}[{mode}] {list(zip(a[~ok], b[~ok]))[:6]} -> {out[~ok][:6]}, "
                          f"numpy {exp[~ok][:6]}")


def test_power_integer_and_negative_bases():
    for dt in DTYPES:
        x = np.array([-2.0, -2.0, -2.0, -0.5, -3.0, 2.0, 10.0, -1.0, -1.0], dtype=dt)
        y = np.array([3.0, 2.0, -3.0, 3.0, 0.5, 10.0, -2.0, 1e10, 3.0], dtype=dt)
        out = run(dt, "k_power_vec", x, y)
        with np.errstate(all="ignore"):
            exp = np.power(x, y)
        assert _bits_equal(out, exp).all(), (out, exp)


def test_native_f32_kernels_have_budgets():
    assert set(UNARY32) <= vecmath.SUPPORTED_UNARY
    assert set(UNARY32) == set(TOL32_NATIVE), "every native f32 kernel needs a ULP budget"


def test_f32_fast_path_stays_in_float32():
    """Native f32 kernels must not widen to double on the hot path.

    Trig functions may only reach double code in their cold huge-argument
    block; the rest must contain no double arithmetic at all."""
    vt = ir.VectorType(ir.FloatType(), 16)
    for name in sorted(UNARY32):
        m = ir.Module()
        f = ir.Function(m, ir.FunctionType(vt, [vt]), "g")
        b = ir.IRBuilder(f.append_basic_block())
        b.ret(vecmath.emit_unary(b, name, f.args[0]))
        text = llvm_engine.optimize_ir(m)
        body = text[text.index("@g("):]
        body = body[:body.index("\n}\n")]
        if name in ("sin", "cos", "tan"):
            entry = body.split("\n\n")[0]  # the entry block holds the fast path
            assert "double" not in entry, name
            assert "@__tj_rare_" in body  # huge arguments: the lazily compiled f64 path
        else:
            assert "double" not in body, name


def test_f32_trig_reduction_near_multiples_of_pio2():
    """Inputs closest to k*pi/2 (worst cancellation) on both sides of the
    fast-path limit 2^17, against a long-double reference."""
    if not HAVE_LD:
        pytest.skip("needs an 80-bit long double reference")
    k = np.concatenate([np.arange(1, 3000), np.arange(3000, 2 ** 17 + 2000, 7)]).astype(np.float64)
    c = (k * (np.pi / 2)).astype(np.float32)
    xs = [c]
    for _ in range(2):
        xs.append(np.nextafter(xs[-1], np.float32(np.inf)))
        xs.insert(0, np.nextafter(xs[0], np.float32(0)))
    x = np.concatenate(xs)
    x = np.concatenate([x, -x, np.float32([131071.99, 131072.0, 131072.01, 2e5, 3e38])])
    for name in ("sin", "cos", "tan"):
        for mode in ("vec", "scalar"):
            out = run(np.float32, f"k_{name}_{mode}", x)
            ref = getattr(np, name)(x.astype(LD))
            err = ulp_error(out, ref, np.float32)
            i = int(np.argmax(err))
            assert err[i] <= TOL32[name], f"{name}[{mode}] {err[i]:.3f} ulp at x={x[i]!r}"


def test_f32_overflow_underflow_thresholds():
    """Around the float32 overflow / underflow edges: overflow to inf exactly
    where NumPy overflows, and zero exactly where the correctly rounded result
    is zero (NumPy's own f32 exp2 flushes some results >= 2^-150 to 0, so
    zeros are compared with the reference), subnormals within budget."""
    cases = {"exp": (88.72, 88.73, -103.98, -103.96), "exp2": (127.99, 128.0, -149.6, -149.4),
             "expm1": (88.72, 88.73, -17.0, -18.0), "sinh": (89.41, 89.42, -89.41, -89.42),
             "cosh": (89.41, 89.42, -89.41, -89.42)}
    for name, pts in cases.items():
        x = np.concatenate([np.linspace(p - 0.02, p + 0.02, 2001) for p in pts]).astype(np.float32)
        x = np.concatenate([x, np.float32([-87.0, -95.5, -100.0, -126.0, -149.0, -150.0])])
        out = run(np.float32, f"k_{name}_vec", x)
        with np.errstate(all="ignore"):
            np_out = getattr(np, name)(x)
        ref = reference(name, np.float32, x)
        with np.errstate(over="ignore"):
            ref32 = ref.astype(np.float32)
        assert (np.isinf(out) == np.isinf(np_out)).all(), name
        assert ((out == 0) == (ref32 == 0)).all(), name
        assert (out != 0).any() and (np.abs(out) < np.finfo(np.float32).tiny).any() or \
            name in ("expm1", "sinh", "cosh"), name
        err = ulp_error(out, ref, np.float32)
        assert err.max() <= TOL32[name], (name, err.max(), x[np.argmax(err)])


def test_meta_wrong_kernel_is_detected():
    """The ULP machinery must flag a bad implementation."""
    for dt in DTYPES:
        x = np.linspace(-2, 2, 10001).astype(dt)
        out = run(dt, "k_wrongexp_vec", x)
        err = ulp_error(out, reference("exp", dt, x), dt)
        assert err.max() > 1000
    # and a 1-ulp perturbation is measured as ~1
    x = np.linspace(0.1, 2, 1001)
    ref = reference("exp", np.float64, x)
    bumped = np.nextafter(np.exp(x), np.inf)
    e = ulp_error(bumped, ref, np.float64)
    assert 0.4 < e.max() <= 1.6


def test_denormal_results_not_flushed():
    for dt, lo in ((np.float32, -103.0), (np.float64, -744.0)):
        x = np.linspace(lo, lo + 15, 1001).astype(dt)
        out = run(dt, "k_exp_vec", x)
        assert (out > 0).all()
        assert (out < np.finfo(dt).smallest_normal).any()
        dn = np.array([np.finfo(dt).smallest_subnormal * k for k in (1, 3, 1000)], dtype=dt)
        lg = run(dt, "k_log_vec", dn)
        ref = reference("log", dt, dn)
        assert ulp_error(lg, ref, dt).max() <= 1.5


def test_ir_valid_and_helpers_cached():
    m = ir.Module()
    fty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()])
    f = ir.Function(m, fty, "g")
    b = ir.IRBuilder(f.append_basic_block())
    v = vecmath.emit_unary(b, "exp", f.args[0])
    v = vecmath.emit_unary(b, "exp", v)
    v = vecmath.emit_binary(b, "power", v, f.args[0])
    b.ret(v)
    names = [g.name for g in m.functions]
    assert names.count("__tj_vm_exp_f64") == 1
    fn = m.globals["__tj_vm_exp_f64"]
    assert fn.linkage == "internal" and "alwaysinline" in fn.attributes
    text = str(m)
    mod = llvm.parse_assembly(text)
    mod.verify()
    assert "call double @exp" not in text and "@llvm.exp" not in text
    for name in UNARY:
        for ty in (ir.FloatType(), ir.DoubleType(), ir.VectorType(ir.FloatType(), 16),
                   ir.VectorType(ir.DoubleType(), 2)):
            mm = ir.Module()
            ff = ir.Function(mm, ir.FunctionType(ty, [ty]), "h")
            bb = ir.IRBuilder(ff.append_basic_block())
            bb.ret(vecmath.emit_unary(bb, name, ff.args[0]))
            llvm.parse_assembly(str(mm)).verify()
    with pytest.raises(ValueError):
        vecmath.emit_unary(b, "nope", f.args[0])


def test_scalar_loop_is_vectorized():
    ir_text = compiled(np.float32).llvm_ir
    # find the optimized scalar-mode exp kernel and look for wide float vectors
    start = ir_text.index("@k_exp_scalar(")
    body = ir_text[start:ir_text.index("\n}\n", start)]
    assert "<8 x float>" in body or "<16 x float>" in body, "exp loop not vectorized"
    # no libm calls anywhere
    for fn in ("@exp(", "@expf(", "@sin(", "@log(", "@pow("):
        assert fn not in ir_text


def test_engine_object_roundtrip():
    m = ir.Module()
    fty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()])
    f = ir.Function(m, fty, "objsin")
    b = ir.IRBuilder(f.append_basic_block())
    b.ret(vecmath.emit_unary(b, "sin", f.args[0]))
    obj = llvm_engine.object_code(m)
    assert isinstance(obj, bytes) and len(obj) > 100
    cm = llvm_engine.load_object(obj)
    fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(cm.address("objsin"))
    for v in (0.5, 1e6, 1e300, -3.0):
        assert abs(fn(v) - math.sin(v)) <= 2 * np.spacing(abs(math.sin(v)))
    cm2 = llvm_engine.compile_ir(str(m))
    assert set(cm2.timings) == {"parse", "optimize", "codegen"}
    assert "objsin" in cm2.asm()
    assert llvm_engine.triple and llvm_engine.target_data_layout
    assert llvm_engine.host_cpu_name() and "," in llvm_engine.host_cpu_features()


def test_zz_report(capsys):
    """Prints the measured max ULP table (run with -s to see it)."""
    with capsys.disabled():
        if _RESULTS:
            print("\nmax ulp:", ", ".join(f"{k[0]}/{k[1]}={v:.3g}"
                                           for k, v in sorted(_RESULTS.items())))


def test_power_huge_products_over_and_underflow():
    # Regression: y*log(x) = ±inf made the exponent NaN (pow(max, max) gave 1, pow(max, -max) inf).
    big = np.finfo(np.float64).max
    x = np.array([big, big, 1e300, 0.5, 1e-300, 2.0], np.float64)
    y = np.array([big, -big, 1e10, 1e300, 1e10, -2000.0], np.float64)
    import tracejit
    import tracejit.numpy as jnp
    out = tracejit.jit(lambda a, b: jnp.power(a, b))(x, y)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, np.power(x, y))


def test_f32_trig_huge_arguments_in_jitted_kernels():
    """Huge arguments take the lazily compiled slow path (rare_paths) from
    kernel threads: results in every lane, mixed with small, special and
    tail-step lanes, must match the float64 reference."""
    import tracejit
    rng = np.random.default_rng(7)
    n = 200_003                                       # several threads and a masked tail
    x = rng.standard_normal(n).astype(np.float32)
    pick = rng.random(n) < 0.01
    x[pick] = (rng.uniform(-1, 1, pick.sum()) * 3e38).astype(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 131072.0, -131071.99]
    x[-3:] = [1e30, -2.5e5, 1e-42]
    for name in ("sin", "cos", "tan"):
        out = tracejit.jit(getattr(np, name))(x)
        err = ulp_error(out, reference(name, np.float32, x), np.float32)
        assert err.max() <= TOL32[name], (name, err.max(), x[np.argmax(err)])
        assert _bits_equal(out[3:4], getattr(np, name)(x[3:4]))   # sin(-0) keeps its sign


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_huge_trig_lane_leaves_its_neighbours_bits_alone(dt):
    """A vector with one huge lane runs every lane through the scalar slow path
    (vecmath.rare_lanes): its ordinary lanes must keep the fast path's bits."""
    import tracejit
    x = (np.random.default_rng(3).standard_normal(4096) * 10).astype(dt)
    y = x.copy()
    y[::97] = dt(3e5)
    y[5], y[7] = np.inf, np.nan
    common = np.ones(x.size, bool)
    common[::97] = common[5] = common[7] = False
    for name in ("sin", "cos", "tan"):
        f = tracejit.jit(getattr(np, name))
        assert _bits_equal(f(x)[common], f(y)[common]).all(), name
        assert np.isnan(f(y)[[5, 7]]).all()


def _vector_loop_kernel(math, finish, after=None):
    """Optimized IR of ``k(float* p, n)``: ``p[i:i+16] = math(p[i:i+16])`` in a loop, then ``after``;
    ``finish(module)`` runs first. Returns (module text, the kernel's text)."""
    vt = ir.VectorType(ir.FloatType(), 16)
    m = ir.Module()
    f = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, I64]), "k")
    b = ir.IRBuilder(f.append_basic_block("entry"))

    def body(i):
        p = b.gep(f.args[0], [i], source_etype=ir.FloatType())
        b.store(math(b, b.load(p, typ=vt)), p)
    _loop(b, f, f.args[1], ir.Constant(I64, 0), 16, body)
    if after is not None:
        after(b, f, vt)
    b.ret_void()
    finish(m)
    text = llvm_engine.optimize_ir(m, speed_level=llvm_engine.LIGHT)
    kernel = text[text.index("@k("):]
    return text, kernel[:kernel.index("\n}\n")]


def test_cold_math_calls_are_outlined_and_hot_ones_inlined():
    """mathlib inlines small helpers into loops only: a call outside every
    loop (a kernel's masked tail) calls the one out-of-line copy."""
    from tracejit.backends.cpu import mathlib

    def after(b, f, vt):
        b.store(mathlib.call(b, "exp", [b.load(f.args[0], typ=vt)]), f.args[0])   # outside the loop
    text, kernel = _vector_loop_kernel(lambda b, v: mathlib.call(b, "exp", [v]), mathlib.outline_cold_calls, after)
    assert kernel.count("call <16 x float> @__tj_vm_exp_v16f32") == 1   # only the cold call...
    assert kernel.count("call <16 x float> @__tj_vm_exp_v16f32.cold(") == 1   # ...to the unoptimized copy
    assert "optnone" in text[text.index("define internal <16 x float> @__tj_vm_exp_v16f32.cold"):]


def test_helpers_called_twice_in_loops_are_compiled_once():
    """mathlib.finish_module: a helper with two hot call sites becomes one out-of-line copy
    (seed g's two sin calls); a helper called once stays inlined; results are unchanged."""
    import tracejit
    from tracejit.backends.cpu import mathlib

    def math(b, v):
        return mathlib.call(b, "sin", [mathlib.call(b, "sin", [mathlib.call(b, "exp", [v])])])
    _, kernel = _vector_loop_kernel(math, mathlib.finish_module)
    assert kernel.count("call <16 x float> @__tj_vm_sin_v16f32(") == 2
    assert "@__tj_vm_exp_v16f32" not in kernel
    x = np.linspace(-30, 30, 10_000, dtype=np.float32)
    out = tracejit.jit(lambda a: np.exp(np.sin(np.sin(a) * 2 + a)) - a)(x)
    want = np.exp(np.sin(np.sin(x.astype(np.float64)) * 2 + x)) - x
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("lanes", [1, 8, 16, 32, 64])
def test_f32_exp_family_same_bits_at_every_vector_width(lanes):
    """Every width (AVX-512 vscalefps 16 lanes at a time, or the integer
    scaling elsewhere) rounds exactly like the scalar kernel."""
    el = ir.FloatType()
    ty = el if lanes == 1 else ir.VectorType(el, lanes)
    m = ir.Module()
    names = ("exp", "exp2", "logistic", "cosh")
    for name in names:
        f = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64]), f"k_{name}")
        b = ir.IRBuilder(f.append_basic_block("entry"))

        def body(i, name=name, f=f, b=b):
            v = b.load(b.gep(f.args[0], [i], source_etype=el), typ=ty, align=4)
            b.store(vecmath.emit_unary(b, name, v), b.gep(f.args[1], [i], source_etype=el), align=4)
        _loop(b, f, f.args[2], ir.Constant(I64, 0), lanes, body)
        b.ret_void()
    cm = llvm_engine.compile_ir(m, name=f"exp_family_{lanes}", vectorize=False)
    x = np.concatenate([np.array(EXACT_SPECIALS, np.float32), random_bits(np.float32, 4096, 11),
                        np.linspace(-110, 100, 4096, dtype=np.float32)])
    x = x[: len(x) // 64 * 64]
    for name in names:
        out = np.empty_like(x)
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(cm.address(f"k_{name}"))
        fn(x.ctypes.data, out.ctypes.data, x.size)
        assert _bits_equal(out, run(np.float32, f"k_{name}_scalar", x)).all(), (name, lanes)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("c", [1.5, -1.5, -0.5])
def test_half_integer_constant_powers(c, dt):
    # x ** c for a constant half-integer c takes sqrt with FMA residuals (lowering._pow_half_integer),
    # not the general pow: within 1 ULP of the exact power over the whole range, and NumPy's special
    # values, overflow and underflow (results in the subnormal range included).
    import tracejit
    rng = np.random.default_rng(7)
    lim = 700 if dt == np.float64 else 85
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, -2.5, 4.0, 0.25]
    tiny = [np.finfo(dt).smallest_subnormal, np.finfo(dt).tiny, np.finfo(dt).max]
    with np.errstate(all="ignore"):
        x = np.concatenate([special, tiny, np.exp(rng.uniform(-lim, lim, 50000)), rng.random(5000)]).astype(dt)
        want = np.power(x, dt(c))
        got = tracejit.jit(lambda x: x ** c)(x)
        exact = np.power(x.astype(np.longdouble), np.longdouble(c))
    assert got.dtype == dt
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    nonfinite = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[nonfinite & ~np.isnan(want)], want[nonfinite & ~np.isnan(want)])
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    normal = np.isfinite(exact) & (np.abs(exact) >= np.finfo(dt).tiny) & (np.abs(exact) <= np.finfo(dt).max)
    ulps = np.abs(got[normal] - exact[normal]) / np.spacing(np.abs(exact[normal]).astype(dt)).astype(np.longdouble)
    assert float(ulps.max()) <= 1.0
    # Subnormal results: within one subnormal step.
    sub = np.isfinite(exact) & (np.abs(exact) < np.finfo(dt).tiny) & (exact != 0)
    step = np.longdouble(np.finfo(dt).smallest_subnormal)
    assert float((np.abs(got[sub] - exact[sub]) / step).max(initial=0)) <= 1.0
    # Not the general pow helper: the kernel has no call to it.
    text = tracejit.jit(lambda x: x ** c).lower(x[:8]).compile().as_text(llvm_ir=True)
    assert "power" not in text or "persistent compile cache" in text
