"""NumPy 2 semantics of Python scalars, out-of-range integers and scalar fast paths, eagerly and
under jit (reference and CPU backends).

- Comparisons of integer arrays with Python ints of any size, and of int64 with uint64, are exact.
- Arithmetic with a Python int outside the array's dtype raises OverflowError, as NumPy.
- ``clip`` drops Python-int bounds beyond the dtype's range (NumPy 2's ``_clip``).
- A Python scalar passed through a NumPy *function* comes out strongly typed (``np.conj(7)`` is
  ``np.int64``), also when it is a traced jit argument; Python operators keep it weak.
- ``ndarray.__pow__``'s fast paths (``bool_array ** 2`` is int8, ``x ** 0.5`` is ``sqrt``) and the
  float power loop's scalar-exponent fast path (``power(x, 0.5)`` is ``sqrt(x)``).
"""
import itertools
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from helpers import assert_same, check_against_numpy, special_values

BACKENDS = ["reference", "cpu"]
INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
BIG_INTS = [-2**70, -2**63 - 1, -2**63, -2**32, -70000, -1000, -3, -1, 0, 5, 127, 255, 300, 70000, 2**32,
            2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70]
CMP = [("eq", lambda a, b: a == b), ("ne", lambda a, b: a != b), ("lt", lambda a, b: a < b),
       ("le", lambda a, b: a <= b), ("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= b)]


def _ints(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, -1 if info.min else 0, 0, 1, 5, info.max - 1, info.max], dtype)


def _all_comparisons(xp, x, s):
    # every comparison with the scalar on each side, as operators and as functions
    return tuple(f(x, s) for _, f in CMP) + tuple(f(s, x) for _, f in CMP) + (
        xp.less(x, s), xp.greater_equal(s, x), xp.equal(x, s), xp.not_equal(s, x))


def _outcome(fn, *args):
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    except (OverflowError, TypeError, ValueError) as e:
        return e


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_comparison_with_python_int_of_any_size(dtype, backend):
    """``uint32 >= -3`` is True, ``uint8 < -2`` False, ``int8 == 1000`` False (NumPy 2); was
    OverflowError (literal) or a wrapped comparison."""
    x = _ints(dtype)
    for s in BIG_INTS:
        check_against_numpy(_all_comparisons, x, s, static_argnums=(1,), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_comparison_with_traced_python_int(dtype, backend):
    """A Python int jit argument (weak int64) compares by value: it was wrapped to the array's dtype
    (``uint8 < s`` with ``s = -3`` gave True)."""
    x = _ints(dtype)
    for s in [-2**63, -2**32, -1000, -3, -1, 0, 5, 255, 300, 2**32, 2**63 - 1]:
        check_against_numpy(_all_comparisons, x, s, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_int64_against_uint64(backend):
    """int64 vs uint64 compares by value (it raised TypeError); arithmetic promotes to float64."""
    i = np.array([-2**63, -1, 0, 1, 5, 2**62, 2**63 - 1, -5, 7], np.int64)
    u = np.array([0, 2**64 - 1, 0, 2, 5, 2**62, 2**63, 3, 2**63 + 7], np.uint64)
    for a, b in ((i, u), (u, i)):
        check_against_numpy(lambda xp, a, b: tuple(f(a, b) for _, f in CMP), a, b, backend=backend)
        check_against_numpy(lambda xp, a, b: (a + b, a * b, a - b, xp.maximum(a, b), a / b), a, b,
                            backend=backend)
        check_against_numpy(lambda xp, a: tuple(f(a, b[3]) for _, f in CMP), a, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.uint64, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_arithmetic_with_out_of_range_python_int_raises(dtype, backend):
    x = np.array([0, 1, 1], dtype)
    cases = [lambda xp, a, s: a + s, lambda xp, a, s: s - a, lambda xp, a, s: a * s,
             lambda xp, a, s: xp.maximum(a, s), lambda xp, a, s: a // s, lambda xp, a, s: xp.minimum(s, a)]
    info = np.iinfo(np.int64 if dtype == np.bool_ else dtype)
    for s in [info.min - 1, info.max + 1, -1, 300, 2**64]:
        for fn in cases:
            want = _outcome(fn, np, x, s)
            if not isinstance(want, OverflowError):
                continue
            with pytest.raises(OverflowError):
                fn(jnp, x, s)
            with pytest.raises(OverflowError):
                tracejit.jit(lambda a, fn=fn: fn(jnp, a, s), backend=backend)(x)


CLIP_LO = [None, -1, 0, 2, 300, -2**63, 2**64, -1.5, np.int64(-1), np.float32(1)]
CLIP_HI = [None, -1, 3, 300, 2**64, 2.5, np.uint8(2)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.bool_,
                                   np.float16, np.float32], ids=lambda d: np.dtype(d).name)
def test_clip_python_int_bounds(dtype, backend):
    """NumPy 2: ``clip(uint8, -1, 3)`` is ``minimum(a, 3)``; a bound beyond the other side overflows."""
    x = np.array([0, 1, 3, 5], dtype)
    for lo, hi in itertools.product(CLIP_LO, CLIP_HI):
        if lo is None and hi is None:
            continue
        want = _outcome(lambda: np.clip(x, lo, hi))
        jitted = tracejit.jit(lambda a: jnp.clip(a, lo, hi), backend=backend)
        if isinstance(want, Exception):
            with pytest.raises((OverflowError, TypeError)):
                jitted(x)
            continue
        assert_same(jitted(x), want, backend=backend, what=f"clip({lo!r}, {hi!r})")
        assert_same(_outcome(jnp.clip, x, lo, hi), want, what=f"eager clip({lo!r}, {hi!r})")


# ----------------------------------------------------------------------------- strong function results

UNARY_FUNCTIONS = ["conj", "conjugate", "absolute", "abs", "negative", "positive", "square", "sqrt", "exp",
                   "sin", "floor", "trunc", "rint", "sign", "invert", "isnan", "signbit", "real", "imag",
                   "asarray", "array", "round", "clip01", "where", "atleast_1d", "ravel", "copy", "max",
                   "sum", "cumsum", "reciprocal"]
BINARY_FUNCTIONS = ["add", "multiply", "subtract", "maximum", "fmin", "power", "true_divide", "floor_divide",
                    "hypot", "arctan2", "equal", "less", "logical_and", "bitwise_or", "left_shift"]
ARRAY_DTYPES = [np.bool_, np.int8, np.uint8, np.float16, np.float32, np.complex64]
SCALARS = [True, 2, 2.5, 1j]


def _unary(name):
    if name == "clip01":
        return lambda xp, s: xp.clip(s, 0, 1)
    if name == "where":
        return lambda xp, s: xp.where(True, s, s)
    return lambda xp, s: getattr(xp, name)(s)


def _check_strong(fn, x, scalars, backend):
    want = _outcome(lambda: fn(np, x, *scalars))
    if isinstance(want, Exception):
        return
    # the scalars as jit arguments (weak tracers) and closed over (literals)
    got = tracejit.jit(lambda a, *s: fn(jnp, a, *s), backend=backend)(x, *scalars)
    assert_same(got, want, backend=backend, transcendental=True)
    got = tracejit.jit(lambda a: fn(jnp, a, *scalars), backend=backend)(x)
    assert_same(got, want, backend=backend, transcendental=True)


@pytest.mark.parametrize("name", UNARY_FUNCTIONS)
def test_python_scalar_through_unary_function_is_strong(name):
    """``complex64_array + np.conj(7)`` is complex128: NumPy functions return NumPy scalars. A traced
    Python scalar argument stayed weak through ``jnp.conj`` (complex64)."""
    f = _unary(name)
    for d, s in itertools.product(ARRAY_DTYPES, SCALARS):
        if name in ("rint", "sign", "round", "max") and isinstance(s, complex):
            continue  # not supported on traced values (complex rint/sign/round/max)
        x = np.array([1, 0, 1], d)
        _check_strong(lambda xp, a, s: a + f(xp, s), x, (s,), "reference")


@pytest.mark.parametrize("name", BINARY_FUNCTIONS)
def test_python_scalars_through_binary_function_are_strong(name):
    for d, s in itertools.product(ARRAY_DTYPES, SCALARS):
        x = np.array([1, 0, 1], d)
        _check_strong(lambda xp, a, s, t: a + getattr(xp, name)(s, t), x, (s, s), "reference")


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.complex64, np.float16])
def test_strong_results_on_cpu_backend(dtype):
    x = np.array([1, 0, 1], dtype)
    for s in SCALARS:
        _check_strong(lambda xp, a, s: (a + xp.conj(s), a * xp.abs(s), a - xp.where(True, s, 0)), x, (s,), "cpu")


def test_python_operators_keep_python_scalars_weak():
    x = np.ones(3, np.float32)
    f = tracejit.jit(lambda a, s: (a * s, a * (s * 2), a + (-s), a * abs(s), a / (s ** 2), a - (1 + s) / 3,
                                   a * (s // 1), a * (2 ** s)))
    for got in f(x, 2.0):
        assert got.dtype == np.float32
    g = tracejit.jit(lambda a, s: (a * s, a + (s << 1), a & ~s))
    for got in g(np.ones(3, np.uint8), 3):
        assert got.dtype == np.uint8


# ----------------------------------------------------------------------------- power

POW_DTYPES = [np.bool_, np.int8, np.uint8, np.int64, np.float16, np.float32, np.float64, np.complex64,
              np.complex128]
EXPONENTS = [2, -1, 0.5, 2.0, -1.0, 1, 0, 3, True, 1.0, 0.0, np.float64(0.5), np.float32(0.5),
             np.float64(2.0), np.int64(2)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", POW_DTYPES, ids=lambda d: np.dtype(d).name)
def test_power_operator_fast_paths(dtype, backend):
    """``ndarray.__pow__``: exact Python ``2`` is ``square`` (bool ** 2 is int8, was int64), float/complex
    ``-1`` is ``reciprocal`` and ``0.5`` is ``sqrt`` (``(-inf) ** 0.5`` is nan, ``(-0.0) ** 0.5`` is -0.0;
    was inf and 0.0)."""
    x = special_values(dtype)
    if np.dtype(dtype).kind in "iu":
        x = np.abs(x[:5])  # no negative bases for integer powers
    for e in EXPONENTS:
        if np.dtype(dtype).kind == "c" and type(e) is float and e in (-1.0, 2.0):
            continue  # complex power(z, 2.0 / -1.0) is rewritten by simplify: see docs/compiler.md
        if isinstance(_outcome(lambda: x ** e), Exception):
            continue
        check_against_numpy(lambda xp, a: a ** e, x, backend=backend, transcendental=np.dtype(dtype).kind == "c",
                            np_protocol=False)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_power_with_scalar_exponent_uses_numpy_loop_fast_path(dtype, backend):
    """NumPy's float32/float64 power loop treats a scalar exponent 0.5 as sqrt (also as a traced 0-d
    argument), -1 as 1/x, 1 as x and 2 as x*x."""
    x = special_values(dtype)
    for e in [0.5, -1.0, 1.0, 2.0, 0.0, 3.0, -0.5, np.nan]:
        check_against_numpy(lambda xp, a: xp.power(a, e), x, backend=backend, transcendental=True)
        check_against_numpy(lambda xp, a, y: xp.power(a, y), x, np.asarray(e, dtype), backend=backend,
                            transcendental=True)
        check_against_numpy(lambda xp, a, y: xp.power(a, y), x, e, backend=backend, transcendental=True)
    # exponent arrays (not scalars) use C pow: (-inf) ** 0.5 is inf
    e = np.full(x.shape, 0.5, dtype)
    check_against_numpy(lambda xp, a, y: xp.power(a, y), x, e, backend=backend, transcendental=True)


# ----------------------------------------------------------------------------- float -> integer casts

CAST_VALUES = [np.nan, -np.nan, np.inf, -np.inf, -1.0, -1.5, -0.5, 0.5, 127.5, 128.0, -129.0, 255.5, 256.0, 300.0,
               65535.0, 65536.0, 2.0**31, -2.0**31 - 1, 2.0**32, 2.0**63, -2.0**63, -2.0**63 - 4096, 2.0**64, 1e19,
               -1e19, 1e30, -1e30, 3e38]
CAST_TARGETS = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _cast_values(src, dst):
    vals = np.array(CAST_VALUES, np.float64)
    if dst == np.uint32 and np.dtype(src).itemsize > 2:
        # NumPy's float32/float64 -> uint32 of NaN, -inf and values below -2**31 depends on the element's
        # position (SIMD blocks vs. the scalar tail): see docs/compiler.md. Only the defined ones here.
        with np.errstate(invalid="ignore"):
            vals = vals[~(np.isnan(vals) | (vals < -2.0**31))]
    with np.errstate(all="ignore"):
        return vals.astype(src)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("src", [np.float16, np.float32, np.float64, np.complex64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_out_of_range_float_to_int_casts(src, backend):
    """NaN, inf and out-of-range values cast as NumPy does on x86-64 (C casts); float -> uint64 of +inf
    and values >= 2**64 gave 2**63 (NumPy: 0)."""
    for dst in CAST_TARGETS:
        x = _cast_values(src, dst)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_against_numpy(lambda xp, a: a.astype(dst), x, backend=backend, np_protocol=False)


# ----------------------------------------------------------------------------- NaN signs

@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_invalid_operation_nans_have_the_x86_sign(dtype):
    """NaNs made from non-NaN inputs (log(-1), asin(2), sin(inf), pow(-1, 0.5), 0*inf, inf-inf, sqrt(-1))
    are the x86 default NaN (sign bit set) on every host; the compiled math functions gave +NaN.
    NumPy's sign depends on the code it dispatches to: its AVX-512 loops give the x86 NaN, and
    without AVX-512 its float64 log, log2, log10, arcsin and arccos gave +NaN (a Zen 3 EPYC). Where
    the hardware makes the NaN (0*inf, inf-inf, sqrt(-1)) NumPy's sign is the x86 one everywhere."""
    hardware = {"sqrt", "mul", "sub"}
    x = np.array([-1.0, -2.5, np.inf, -np.inf, 2.0, -3.0, 0.0], dtype)
    fns = {"log": np.log, "log2": np.log2, "log10": np.log10, "log1p": lambda a: np.log1p(a - 2),
           "arcsin": np.arcsin, "arccos": np.arccos, "arctanh": np.arctanh, "arccosh": lambda a: np.arccosh(a / 4),
           "sin": np.sin, "cos": np.cos, "tan": np.tan, "sqrt": np.sqrt, "pow": lambda a: np.power(a, np.full_like(a, 0.5)),
           "mul": lambda a: a * np.where(np.isinf(a), 0, np.inf).astype(a.dtype), "sub": lambda a: a - a}
    for name, f in fns.items():
        with np.errstate(all="ignore"):
            want = f(x)
        got = tracejit.jit(f, backend="cpu")(x)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), name
        assert nan.any() and np.signbit(got[nan]).all(), name
        if name in hardware:
            np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(want[nan]), err_msg=name)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.uint64, np.int64, np.bool_, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_where_casts_python_ints_unsafely(dtype, backend):
    """``np.where(c, uint8_array, -1)`` is uint8 with 255 (an unsafe cast); it raised OverflowError."""
    c = np.array([True, False, True])
    x = np.array([1, 2, 3], dtype)
    for v in [-1, 300, -129, 2**63, 2**64 - 1, 2**70, -2**63 - 1]:
        for fn in (lambda xp, c, a: xp.where(c, a, v), lambda xp, c, a: xp.where(c, v, a),
                   lambda xp, c, a: xp.select([c], [a], v)):
            want = _outcome(fn, np, c, x)
            if isinstance(want, Exception):
                with pytest.raises(OverflowError):
                    tracejit.jit(lambda c, a, fn=fn: fn(jnp, c, a), backend=backend)(c, x)
                continue
            check_against_numpy(fn, c, x, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_complex_reciprocal_is_numpys_loop(dtype, backend):
    """``reciprocal(z)`` and ``z ** -1`` bit for bit as NumPy's loop: ``reciprocal(0j)`` is nan+nanj (was
    inf+nanj, from 1/z) and finite values were up to 1 ULP off."""
    parts = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, 1e300, 3.0, -4.0, 1e-310, 1e-30, 7.25]
    rng = np.random.default_rng(1)
    re = np.concatenate([np.repeat(parts, len(parts)), rng.standard_normal(300) * 10.0 ** rng.integers(-20, 20, 300)])
    im = np.concatenate([np.tile(parts, len(parts)), rng.standard_normal(300) * 10.0 ** rng.integers(-20, 20, 300)])
    z = np.empty(re.shape, dtype)
    with np.errstate(all="ignore"):
        z.real, z.imag = re, im
    for fn in (lambda xp, a: xp.reciprocal(a), lambda xp, a: a ** -1):
        got = tracejit.jit(lambda a, fn=fn: fn(jnp, a), backend=backend)(z)
        with np.errstate(all="ignore"):
            want = fn(np, z)
        part = np.uint32 if dtype == np.complex64 else np.uint64
        np.testing.assert_array_equal(got.real.view(part), want.real.view(part))
        np.testing.assert_array_equal(got.imag.view(part), want.imag.view(part))
    # differentiable as 1/z
    g = tracejit.grad(lambda x: jnp.real(jnp.reciprocal(x * (1 + 1j))))(2.0)
    np.testing.assert_allclose(g, np.real(-(1 + 1j) / (2 * (1 + 1j)) ** 2))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.bool_] + INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_reciprocal(dtype, backend):
    """NumPy's integer reciprocal is the C cast (T)(1.0 / x) (so 1/0 is INT_MIN for int32/int64, 0 for
    narrower types); it raised NotImplementedError on traced arrays."""
    if dtype == np.bool_:
        x = np.array([True, False, True, False])
    else:
        info = np.iinfo(dtype)
        x = np.array([0, 1, 2, 3, info.max, info.min, 1, 0] + ([-1, -2] if info.min < 0 else []), dtype)
    check_against_numpy(lambda xp, a: (xp.reciprocal(a), xp.reciprocal(a[::2]), xp.reciprocal(a[1])), x,
                        backend=backend)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int8, np.uint32])
@pytest.mark.parametrize("op", ["add", "floor_divide", "multiply", "subtract"])
def test_python_int_argument_out_of_the_array_dtype_raises_at_the_call(op, dtype):
    # Found by the program fuzzer (seed 1010028): NumPy raises OverflowError for
    # `uint8_array // -3`; a Python int passed to jit is checked at each call.
    a = np.array([6, 7], dtype)
    f = tracejit.jit(lambda a, n: getattr(jnp, op)(n, a))
    info = np.iinfo(dtype)
    for n in (3, int(info.max), int(info.min)):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(f(a, n), getattr(np, op)(n, a))
    for n in (int(info.max) + 1, int(info.min) - 1):
        with pytest.raises(OverflowError):
            getattr(np, op)(n, a)
        with pytest.raises(OverflowError, match=f"out of bounds for {np.dtype(dtype).name}"):
            f(a, n)
    # Comparisons compare by value and int64 operations never raise, as in NumPy.
    g = tracejit.jit(lambda a, n: (a < n, a.astype(np.int64) + n))
    np.testing.assert_array_equal(g(a, -3)[0], a < -3)
