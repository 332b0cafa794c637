"""tracejit.lax follows jax.lax (XLA) semantics, not NumPy's: the values pinned here are computed
independently (math.fmod, Python integer arithmetic, Decimal rounding, IEEE rules written out),
eagerly and under jit, with no JAX needed. tests/test_lax_vs_jax.py compares against JAX itself.
"""
from __future__ import annotations

import decimal
import itertools
import math

import numpy as np
import pytest

import tracejit
from tracejit import lax


def both(fn, *args):
    """``fn(*args)`` eagerly and under jit, as NumPy arrays."""
    return np.asarray(fn(*args)), np.asarray(tracejit.jit(fn)(*args))


def same_bits(got, want):
    """Equal values with equal dtypes; floats bit for bit (signed zeros), NaN matching NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "c":
        same_bits(got.real.copy(), want.real.copy())
        same_bits(got.imag.copy(), want.imag.copy())
        return
    if want.dtype.kind == "f":
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), (got, want)
        ui = np.dtype(f"uint{8 * want.dtype.itemsize}")
        assert np.array_equal(got[~nan].view(ui), want[~nan].view(ui)), (got, want)
    else:
        assert np.array_equal(got, want), (got, want)


def pairs(values, dtype):
    a, b = zip(*itertools.product(values, repeat=2))
    return np.array(a, dtype), np.array(b, dtype)


# --------------------------------------------------------------------------- rem and div

INT_DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64]


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_rem_and_div_truncate(dtype):
    info = np.iinfo(dtype)
    vals = sorted({v for v in (0, 1, 2, 3, 7, -1, -3, -7, info.max, info.min, info.min + 1)
                   if info.min <= v <= info.max})
    x, y = pairs(vals, dtype)
    want_rem, want_div = [], []
    for a, b in zip(x.tolist(), y.tolist()):
        if b == 0:                                    # XLA: x % 0 == x, x / 0 == -1 (all bits set)
            want_rem.append(a)
            want_div.append(-1 if info.min < 0 else info.max)
        else:
            q = _trunc_div(a, b)
            want_rem.append(a - b * q)                # sign of the dividend
            want_div.append(int(np.array(q).astype(dtype)) if info.min <= q <= info.max else info.min)  # MIN/-1
    for got in both(lax.rem, x, y):
        same_bits(got, np.array(want_rem, dtype))
    for got in both(lax.div, x, y):
        same_bits(got, np.array(want_div, dtype))


def test_rem_examples():
    x, y = np.array([-7, 7, -7, 7]), np.array([3, 3, -3, -3])
    for got in both(lax.rem, x, y):
        same_bits(got, np.array([-1, 1, -1, 1]))
    for got in both(lax.rem, x.astype(np.float64), y.astype(np.float64)):
        same_bits(got, np.array([-1.0, 1.0, -1.0, 1.0]))
    for got in both(lax.div, x, y):
        same_bits(got, np.array([-2, 2, 2, -2]))
    assert lax.div(np.int32(7), np.int32(2)).dtype == np.int32


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_rem_is_fmod(dtype):
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.0, 7.25, np.inf, -np.inf, np.nan, 100.0]
    x, y = pairs(vals, dtype)
    want = []
    for a, b in zip(x.astype(np.float64).tolist(), y.astype(np.float64).tolist()):
        try:
            want.append(math.fmod(a, b))
        except ValueError:                           # fmod(inf, y) and fmod(x, 0)
            want.append(math.nan)
    for got in both(lax.rem, x, y):
        same_bits(got, np.array(want).astype(dtype))


# --------------------------------------------------------------------------- sign, round

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sign_keeps_signed_zero(dtype):
    x = np.array([-2.0, -0.0, 0.0, 3.0, np.inf, -np.inf, np.nan], dtype)
    want = np.array([-1.0, -0.0, 0.0, 1.0, 1.0, -1.0, np.nan], dtype)
    for got in both(lax.sign, x):
        same_bits(got, want)
    for got in both(lax.sign, np.array([-5, 0, 9], np.int8)):
        same_bits(got, np.array([-1, 0, 1], np.int8))


def test_sign_complex():
    x = np.array([3 + 4j, 0j, complex(-0.0, 0.0), complex(0.0, -0.0), -2j])
    want = np.array([0.6 + 0.8j, 0j, complex(-0.0, 0.0), complex(0.0, -0.0), -1j])
    for got in both(lax.sign, x):
        same_bits(got, want)


def _round_half_away(v):
    if not math.isfinite(v):
        return v
    ctx = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_UP)      # exact for every double
    r = float(ctx.quantize(decimal.Decimal(v), decimal.Decimal(1)))
    return math.copysign(r, v)                       # -0.4 -> -0.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_round_half_away_from_zero_by_default(dtype):
    vals = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, 0.4, -0.4, -0.0, 0.0, 3.0, 1e30, -1e30, np.inf,
            -np.inf, np.nan, 0.49999999999999994, 4503599627370497.0]
    with np.errstate(over="ignore"):
        x = np.array(vals, np.float64).astype(dtype)
    away = np.array([_round_half_away(v) for v in x.astype(np.float64).tolist()]).astype(dtype)
    for got in both(lax.round, x):
        same_bits(got, away)
    for method in (lax.RoundingMethod.AWAY_FROM_ZERO, 0):
        for got in both(lambda v, m=method: lax.round(v, m), x):
            same_bits(got, away)
    for method in (lax.RoundingMethod.TO_NEAREST_EVEN, 1):
        for got in both(lambda v, m=method: lax.round(v, m), x):
            same_bits(got, np.rint(x))
    with pytest.raises(ValueError):
        lax.round(x, 7)
    with pytest.raises(TypeError):
        lax.round(np.array([1, 2]))


def test_piecewise_constant_derivatives_are_zero():
    x = np.array([-2.5, -0.5, 0.0, 0.3, 0.5, 1.5])
    for f in (lax.round, lambda v: lax.round(v, 1), lax.sign, lax.floor, lax.ceil):
        g = tracejit.vmap(tracejit.grad(f))
        for got in (g(x), tracejit.jit(g)(x)):
            same_bits(np.asarray(got), np.zeros_like(x))


def test_rem_derivatives():
    x, y = np.array([5.3, -5.3, 5.3, -5.3, 0.2]), np.array([2.0, 2.0, -2.0, -2.0, 0.7])
    dx = tracejit.vmap(tracejit.grad(lax.rem, argnums=0))
    dy = tracejit.vmap(tracejit.grad(lax.rem, argnums=1))
    for got in (dx(x, y), tracejit.jit(dx)(x, y)):
        same_bits(np.asarray(got), np.ones_like(x))
    want = np.array([-math.trunc(a / b) for a, b in zip(x, y)])      # d fmod(x, y) / dy = -trunc(x / y)
    for got in (dy(x, y), tracejit.jit(dy)(x, y)):
        np.testing.assert_array_equal(np.asarray(got), want)


# --------------------------------------------------------------------------- max, min, nextafter, clamp

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_max_min_order_signed_zeros(dtype):
    x = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0], dtype)
    y = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, np.nan], dtype)
    # IEEE 754-2019 maximum / minimum: NaN propagates, -0.0 < +0.0
    for got in both(lax.max, x, y):
        same_bits(got, np.array([0.0, 0.0, 0.0, -0.0, np.nan, np.nan], dtype))
    for got in both(lax.min, x, y):
        same_bits(got, np.array([-0.0, -0.0, 0.0, -0.0, np.nan, np.nan], dtype))


def test_max_min_ties_split_the_derivative():
    g = tracejit.grad(lambda a, b: lax.max(a, b), argnums=(0, 1))
    assert tuple(map(float, g(1.0, 1.0))) == (0.5, 0.5)
    assert tuple(map(float, g(0.0, -0.0))) == (0.5, 0.5)
    assert tuple(map(float, tracejit.jit(g)(2.0, 1.0))) == (1.0, 0.0)


def test_complex_max_min_lexicographic():
    x = np.array([1 + 2j, 1 + 1j, complex(np.nan, 0), 1 + 0j])
    y = np.array([1 + 1j, 2 + 0j, 1 + 0j, complex(np.nan, 0)])
    # pick x where (x.real, x.imag) > (y.real, y.imag); comparisons with NaN pick y
    for got in both(lax.max, x, y):
        same_bits(got, np.array([1 + 2j, 2 + 0j, 1 + 0j, complex(np.nan, 0)]))
    for got in both(lax.min, x, y):
        same_bits(got, np.array([1 + 1j, 1 + 1j, 1 + 0j, complex(np.nan, 0)]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nextafter_equal_operands_give_the_second(dtype):
    x = np.array([0.0, -0.0, 1.0], dtype)
    y = np.array([-0.0, 0.0, 2.0], dtype)
    want = np.array([-0.0, 0.0, 1.0 + float(np.finfo(dtype).eps)], dtype)
    for got in both(lax.nextafter, x, y):
        same_bits(got, want)


def test_clamp_nan_and_signed_zero_under_jit():
    lo = np.array([np.nan, -1.0, -np.inf, 0.0])
    x = np.array([-1.0, np.nan, -0.0, 5.0])
    hi = np.array([-np.inf, 1.0, 0.0, np.nan])
    for got in both(lax.clamp, lo, x, hi):
        same_bits(got, np.array([np.nan, np.nan, -0.0, np.nan]))
    g = tracejit.grad(lambda lo_, v, hi_: lax.clamp(lo_, v, hi_), argnums=(0, 1, 2))
    assert tuple(map(float, g(-0.5, 2.0, 1.0))) == (0.0, 0.0, 1.0)
    assert tuple(map(float, g(-0.5, 0.2, 1.0))) == (0.0, 1.0, 0.0)
    assert tuple(map(float, g(-0.5, -3.0, 1.0))) == (1.0, 0.0, 0.0)


def test_clamp_complex_compares_real_parts():
    lo, hi = np.complex128(0), np.complex128(1 + 1j)
    x = np.array([0.5 + 9j, 1 + 3j, 2j, -1j, 3 + 0j, complex(np.nan, 0)])
    for got in both(lambda v: lax.clamp(lo, v, hi), x):
        same_bits(got, np.array([0.5 + 9j, 1 + 3j, 0j, 0j, 1 + 1j, 1 + 1j]))


# --------------------------------------------------------------------------- shifts, powers, conversions

@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.int8, np.int64])
def test_shift_right_arithmetic_sign_extends(dtype):
    bits = 8 * np.dtype(dtype).itemsize
    info = np.iinfo(dtype)
    xs = [v for v in (0, 1, 5, info.max, info.max // 2 + 1, info.min) if info.min <= v <= info.max]
    ss = [0, 1, 3, bits - 1, bits, bits + 3]
    x, s = (np.array(v, dtype) for v in zip(*itertools.product(xs, ss)))
    want = []
    for a, k in zip(x.tolist(), s.tolist()):
        signed = a - (1 << bits) if a >= (1 << (bits - 1)) else a          # the bit pattern as signed
        want.append((signed >> min(k, bits - 1)) & ((1 << bits) - 1))        # Python's >> is arithmetic
    want = np.array(want, np.uint64).astype(np.dtype(f"uint{bits}")).view(dtype)
    for got in both(lax.shift_right_arithmetic, x, s):
        same_bits(got, want)


@pytest.mark.parametrize("y", [-3, -2, -1, 0, 1, 2, 3, 7, 8])
def test_integer_pow_is_a_product_chain(y):
    x = np.array([0.1, -0.7, 1.3, 2.5, -3.0, 1e-3], np.float64)
    # JAX's sequence: repeated squaring, factors multiplied in bit order, reciprocal last
    want = []
    for v in x.tolist():
        n, acc, base = abs(y), None, v
        while n:
            if n & 1:
                acc = base if acc is None else acc * base
            n >>= 1
            if n:
                base = base * base
        r = 1.0 if acc is None else acc
        want.append(1.0 / r if y < 0 else r)
    for got in both(lambda v: lax.integer_pow(v, y), x):
        same_bits(got, np.array(want))
    g = tracejit.vmap(tracejit.grad(lambda v: lax.integer_pow(v, y)))
    np.testing.assert_allclose(np.asarray(g(x)), y * x ** (y - 1.0) if y else np.zeros_like(x), rtol=1e-14)


def test_integer_pow_and_pow_dtype_rules():
    same_bits(lax.integer_pow(np.array([3, -2], np.int8), 3), np.array([27, -8], np.int8))
    with pytest.raises(TypeError):
        lax.integer_pow(np.array([3], np.int32), -1)
    # an integer exponent array converts to the base's dtype
    for got in both(lax.pow, np.array([2.0, 4.0], np.float32), np.array([3, -1], np.int32)):
        same_bits(got, np.array([8.0, 0.25], np.float32))
    with pytest.raises(TypeError):
        lax.pow(np.array([2], np.int32), np.array([3], np.int32))


def test_convert_complex_to_bool_reads_the_real_part():
    x = np.array([1j, 0j, 2 + 0j, complex(0, np.nan), complex(np.nan, 0)])
    for got in both(lambda v: lax.convert_element_type(v, np.bool_), x):
        same_bits(got, np.array([False, False, True, False, True]))


def test_conj_of_real_and_complex_builder():
    for got in both(lax.conj, np.array([1.5, -0.0], np.float32)):
        same_bits(got, np.array([1.5 + 0j, complex(-0.0, 0.0)], np.complex64))
    with pytest.raises(TypeError):
        lax.conj(np.array([1.0], np.float16))
    re = np.array([0.0, -0.0, 1.0, -0.0, np.nan, 2.0, -np.inf])
    im = np.array([-0.0, -0.0, np.inf, 3.0, 1.0, np.nan, -0.0])
    want = np.empty(re.shape, np.complex128)
    want.real, want.imag = re, im
    for got in both(lax.complex, re, im):
        same_bits(got, want)
    with pytest.raises(TypeError):
        lax.complex(np.array([1.0], np.float16), np.array([1.0], np.float16))


def test_complex_abs_nan_and_division_special_cases():
    for got in both(lax.abs, np.array([complex(np.inf, np.nan), complex(np.nan, -np.inf), 3 + 4j])):
        same_bits(got, np.array([np.nan, np.nan, 5.0]))
    x = np.array([1 + 0j, 1j, 0j, complex(np.inf, 0), 1 + 2j, 6 + 0j])
    y = np.array([0j, complex(-0.0, 0.0), complex(np.inf, np.inf), 1 + 0j, 0j, 2 + 0j])
    # zero denominator: copysign(inf, y.real) * x part by part; finite / infinite: zeros;
    # infinite / finite: inf times the signed direction
    want = [complex(math.inf, math.nan), complex(math.nan, -math.inf), 0j, complex(math.inf, math.nan),
            complex(math.inf, math.inf), 3 + 0j]
    for got in both(lax.div, x, y):
        assert np.asarray(got).dtype == np.complex128
        for g, w in zip(np.asarray(got).tolist(), want):
            for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
                assert (math.isnan(gp) and math.isnan(wp)) or gp == wp, (got, want)


# --------------------------------------------------------------------------- dtype rules

REJECTED = [
    ("add", (np.array([True]), np.array([False]))), ("sub", (np.array([True]), np.array([True]))),
    ("mul", (np.array([True]), np.array([True]))), ("rem", (np.array([1j]), np.array([1j]))),
    ("div", (np.array([True]), np.array([True]))), ("nextafter", (np.array([1]), np.array([2]))),
    ("shift_left", (np.array([1.0]), np.array([1.0]))), ("atan2", (np.array([1]), np.array([1]))),
    ("lt", (np.array([1j]), np.array([1j]))), ("bitwise_and", (np.array([1.0]), np.array([1.0]))),
    ("add", (np.array([1], np.int32), np.array([1], np.int64))),
]
REJECTED_UNARY = [("sin", np.array([1])), ("exp", np.array([True])), ("floor", np.array([1])),
                  ("is_finite", np.array([1])), ("abs", np.array([1], np.uint8)), ("neg", np.array([True])),
                  ("real", np.array([1.0])), ("imag", np.array([1.0])), ("cbrt", np.array([1j])),
                  ("logistic", np.array([1])), ("erf", np.array([1j])), ("sqrt", np.array([4])),
                  ("population_count", np.array([1.0])), ("square", np.array([True])),
                  ("bitwise_not", np.array([1.0])), ("round", np.array([1])), ("sign", np.array([True]))]


@pytest.mark.parametrize("name,args", REJECTED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(REJECTED)])
def test_binary_dtype_rules(name, args):
    fn = getattr(lax, name)
    with pytest.raises(TypeError):
        fn(*args)
    with pytest.raises(TypeError):
        tracejit.jit(fn)(*args)


@pytest.mark.parametrize("name,x", REJECTED_UNARY, ids=[n for n, _ in REJECTED_UNARY])
def test_unary_dtype_rules(name, x):
    fn = getattr(lax, name)
    with pytest.raises(TypeError):
        fn(x)
    with pytest.raises(TypeError):
        tracejit.jit(fn)(x)


def test_accepted_dtypes_still_work():
    same_bits(lax.neg(np.array([1, 255], np.uint8)), np.array([255, 1], np.uint8))
    same_bits(lax.max(np.array([True, False]), np.array([False, False])), np.array([True, False]))
    same_bits(lax.bitwise_xor(np.array([True]), np.array([True])), np.array([False]))
    same_bits(lax.add(np.float32(1.5), 2.0), np.float32(3.5))                      # weak Python scalar
    assert lax.exp(np.array([0.0]), accuracy=None)[0] == 1.0


# --------------------------------------------------------------------------- special functions

def test_special_function_conventions():
    nan, inf = np.nan, np.inf
    for got in both(lax.digamma, np.array([0.0, -0.0, -1.0, -2.0, -inf])):
        same_bits(got, np.full(5, nan))
    a = np.array([0.0, 0.0, 0.0, 1.0, -1.0, inf, 2.0])
    x = np.array([2.0, 0.0, inf, 0.0, 1.0, 0.5, inf])
    for got in both(lax.igamma, a, x):
        same_bits(got, np.array([1.0, nan, 1.0, 0.0, nan, 0.0, 1.0]))
    for got in both(lax.igammac, a, x):
        same_bits(got, np.array([0.0, nan, 0.0, 1.0, nan, 1.0, 0.0]))
    m = np.array([0.0, 1.0, 2.0, 3.0])
    for got in both(lax.polygamma, m, np.array([0.0, -1.0, 0.0, -2.0])):
        same_bits(got, np.array([nan, inf, nan, inf]))            # poles: NaN for even m, +inf for odd m
    s = np.array([1.0, 2.0, 3.0, 1.5, 0.5])
    q = np.array([nan, -1.0, -1.0, -2.5, 1.0])
    for got in both(lax.zeta, s, q):
        same_bits(got, np.array([inf, inf, nan, nan, nan]))
    for got in both(lax.bessel_i1e, np.array([-0.0, 0.0])):
        same_bits(got, np.array([-0.0, 0.0]))
    big = np.array([1.7976931348623157e308])
    for got in both(lax.bessel_i0e, big):
        np.testing.assert_allclose(got, 1 / np.sqrt(2 * np.pi) / np.sqrt(big), rtol=1e-15)


# --------------------------------------------------------------------------- bitcast

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_bitcast_float_bits_under_jit(dtype):
    fi = np.finfo(dtype)
    x = np.array([0.0, -0.0, 1.0, -1.5, 0.1, fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max,
                  -fi.max, np.inf, -np.inf, 1 / 3, fi.tiny * 0.75], dtype)
    u = np.dtype(f"uint{8 * np.dtype(dtype).itemsize}")
    for got in both(lambda v: lax.bitcast_convert_type(v, u), x):
        same_bits(got, x.view(u))
    for got in both(lambda v: lax.bitcast_convert_type(v, dtype), x.view(u)):
        same_bits(got, x)
    for got in both(lambda v: lax.bitcast_convert_type(v, np.uint8), x):
        same_bits(got, x.reshape(-1, 1).view(np.uint8))
    nan_bits = np.array([np.nan], dtype).view(u)
    for got in both(lambda v: lax.bitcast_convert_type(v, dtype), nan_bits):
        assert np.isnan(got).all()


def test_bitcast_error_classes():
    with pytest.raises(TypeError):
        lax.bitcast_convert_type(np.array([1.0]), np.complex64)       # same width, complex
    with pytest.raises(TypeError):
        lax.bitcast_convert_type(np.array([1], np.uint8), np.bool_)
    with pytest.raises(ValueError):
        lax.bitcast_convert_type(np.array([1.0, 2.0, 3.0], np.float32), np.float64)   # needs a last axis of 2


def test_vmap_of_composed_functions():
    rng = np.random.default_rng(0)
    xf = rng.normal(size=(3, 5)) * 4
    yf = rng.normal(size=(3, 5)) * 2
    xi = rng.integers(-50, 50, size=(3, 5)).astype(np.int32)
    yi = rng.integers(-5, 5, size=(3, 5)).astype(np.int32)
    xc = xf + 1j * yf
    cases = [(lax.rem, (xf, yf)), (lax.rem, (xi, yi)), (lax.div, (xi, yi)), (lax.round, (xf,)), (lax.sign, (xf,)),
             (lax.max, (xf, yf)), (lax.min, (xi, yi)), (lambda v: lax.clamp(-1.0, v, 1.0), (xf,)),
             (lax.div, (xc, xc[::-1])), (lambda v: lax.integer_pow(v, -3), (xf,)), (lax.sign, (xc,)),
             (lambda v: lax.bitcast_convert_type(v.astype(np.float32), np.uint32), (xf,)),
             (lax.complex, (xf, yf)),
             (lax.shift_right_arithmetic, (xi.astype(np.uint32), np.abs(yi).astype(np.uint32)))]
    for fn, args in cases:
        want = np.asarray(fn(*args))
        for got in (tracejit.vmap(fn)(*args), tracejit.jit(tracejit.vmap(fn))(*args)):
            same_bits(np.asarray(got), want)


@pytest.mark.parametrize("run", ["eager", "jit"])
def test_select_n_predicate_rules_are_the_same_eagerly_and_under_jit(run):
    # JAX takes a bool or integer predicate only; eagerly a float one was accepted, and a Python
    # bool predicate raised AttributeError.
    f = lax.select_n if run == "eager" else tracejit.jit(lax.select_n)
    cases = (np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    with pytest.raises(TypeError, match="bool or integer"):
        f(np.array([0.0, 1.0]), *cases)
    np.testing.assert_array_equal(f(np.array([False, True]), *cases), [1.0, 4.0])
    np.testing.assert_array_equal(f(np.array([1, 0], np.int32), *cases), [3.0, 2.0])
    assert float(f(True, 1.0, 2.0)) == 2.0 and float(f(np.int8(0), 1.0, 2.0)) == 1.0


def test_eager_primitives_reject_what_jit_rejects():
    # Eagerly, lax.add of shapes (1, 3) and (2, 3) returned NumPy's broadcast (2, 3) result where
    # JAX -- and tracejit under jit -- raise TypeError: eager binds now run the primitive's
    # abstract rule first, so both modes accept and reject the same applications.
    cases = [lambda: lax.add(np.ones((1, 3)), np.ones((2, 3))),
             lambda: lax.mul(np.ones((3, 1)), np.ones(3)),
             lambda: lax.add(np.ones(3, np.float32), np.ones(3)),
             lambda: lax.dot_general(np.ones((2, 3)), np.ones((4, 5)), (((1,), (0,)), ((), ()))),
             lambda: lax.concatenate([np.ones((2, 3)), np.ones((2, 4))], 0)]
    for case in cases:
        for mode in (case, tracejit.jit(case)):
            with pytest.raises(TypeError):
                mode()
    # what is valid stays valid: rank-0 operands and Python scalars broadcast, as in JAX
    np.testing.assert_array_equal(lax.add(np.ones((2, 3)), 2.0), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(lax.mul(np.float64(2.0), np.ones(3)), np.full(3, 2.0))
