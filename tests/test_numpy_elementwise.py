"""tracejit.numpy elementwise ufuncs vs NumPy: values, dtypes and shapes,
eagerly and under jit, across dtypes, special values and non-contiguous views."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tracejit
import tracejit.numpy as jnp
from helpers import (ALL_DTYPES, FLOAT_DTYPES, assert_same, check_against_numpy, sample, special_values,
                     views)

# Written as formulas of other primitives, so they may differ from NumPy's loop by an ULP anywhere.
COMPOSITE = {"logaddexp", "logaddexp2"}
TRANSCENDENTAL = {"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "sinh", "cosh",
                  "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "cbrt", "power",
                  "arctan2", "hypot", "logaddexp", "logaddexp2", "deg2rad", "rad2deg"}

UNARY = ["negative", "positive", "absolute", "sign", "floor", "ceil", "trunc", "rint", "exp", "exp2", "expm1",
         "log", "log1p", "log2", "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos",
         "arctan", "arcsinh", "arccosh", "arctanh", "sqrt", "cbrt", "square", "reciprocal", "isnan", "isinf",
         "isfinite", "signbit", "logical_not", "invert", "conjugate", "deg2rad", "rad2deg"]

BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "power", "maximum",
          "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "nextafter", "bitwise_and", "bitwise_or",
          "bitwise_xor", "left_shift", "right_shift", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal", "logical_and", "logical_or", "logical_xor", "logaddexp"]

# Cases NumPy computes but tracejit deliberately rejects on traced arrays (documented limitations).
def _tol(name, dtype=None):
    if name in COMPOSITE or (name == "power" and dtype is not None and np.dtype(dtype).kind == "c"):
        return "always"
    return name in TRANSCENDENTAL


KNOWN_UNSUPPORTED = {("rint", "c")}
DTYPE_IDS = [np.dtype(d).name for d in ALL_DTYPES]


def _numpy_supports(fn, *args):
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args)
        return True
    except (TypeError, ValueError):
        return False


def _values(dtype):
    d = np.dtype(dtype)
    vals = special_values(d)
    if d.kind == "i":
        vals = vals[(vals > -1000) & (vals < 1000)]  # keep shifts/powers in range
    return vals


def _check_unary(name, x):
    npf = getattr(np, name)
    kind = np.asarray(x).dtype.kind
    if not _numpy_supports(npf, x):
        with pytest.raises((TypeError, NotImplementedError)):
            tracejit.jit(lambda a: getattr(jnp, name)(a))(x)
        return
    if (name, kind) in KNOWN_UNSUPPORTED:
        with pytest.raises(NotImplementedError, match=name):
            tracejit.jit(lambda a: getattr(jnp, name)(a))(x)
        return
    # Signs of zero are checked for real results; complex division rules differ between NumPy's own loops.
    check_against_numpy(lambda xp, a: getattr(xp, name)(a), x, transcendental=name in TRANSCENDENTAL,
                        check_zero_sign=kind != "c")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values(name, dtype):
    _check_unary(name, _values(dtype))


@pytest.mark.parametrize("name", ["sin", "exp", "sqrt", "negative", "floor", "isnan", "absolute"])
def test_unary_shapes(name):
    for x in (np.float64(1.5), np.array(-2.0, np.float32), np.zeros((0, 3)), np.ones((1, 1, 1)),
              sample((4, 5), np.float64)):
        _check_unary(name, x)
    for label, v in views(sample((6, 4), np.float32, seed=3)).items():
        _check_unary(name, v)


def _binary_args(dtype):
    x = _values(dtype)
    y = np.roll(x, 3)
    d = np.dtype(dtype)
    if d.kind in "iu":
        y = np.abs(y) % 5 if d.kind == "i" else y % 5  # non-negative, small: shifts and powers are defined
    return x, y


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_special_values(name, dtype):
    x, y = _binary_args(dtype)
    npf = getattr(np, name)
    if not _numpy_supports(npf, x, y):
        with pytest.raises((TypeError, NotImplementedError)):
            tracejit.jit(lambda a, b: getattr(jnp, name)(a, b))(x, y)
        return
    # Every pair of special values against each other.
    xx, yy = np.meshgrid(x, y) if np.dtype(dtype).kind in "fc" else (x, y)
    # The sign of max(+0, -0) is unspecified (IEEE maxNum; NumPy's SIMD loops differ), so skip it there.
    check_against_numpy(lambda xp, a, b: getattr(xp, name)(a, b), xx, yy, transcendental=_tol(name),
                        check_zero_sign=name not in ("maximum", "minimum", "fmax", "fmin"))


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_division_by_zero_and_negative(name, dtype):
    x = np.array([7, -7, 7, -7, 0, 5, -5], dtype)
    y = np.array([2, 2, -2, -2, 3, 0, 0], dtype)
    check_against_numpy(lambda xp, a, b: getattr(xp, name)(a, b), x, y)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "true_divide"])
def test_float_division_signs(name):
    x = np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1.0, np.inf, 3.0])
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 2.0, np.inf])
    check_against_numpy(lambda xp, a, b: getattr(xp, name)(a, b), x, y)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_maximum_minimum_nan_propagation(dtype):
    x = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, -np.inf], dtype)
    y = np.array([1.0, np.nan, np.nan, 0.0, -0.0, np.inf], dtype)
    for name in ("maximum", "minimum", "fmax", "fmin"):
        check_against_numpy(lambda xp, a, b: getattr(xp, name)(a, b), x, y, check_zero_sign=False)
    # NaN propagates through maximum/minimum, fmax/fmin ignore it.
    out = tracejit.jit(lambda a, b: (jnp.maximum(a, b), jnp.fmax(a, b)))(x, y)
    assert np.isnan(out[0][:3]).all() and not np.isnan(out[1][:2]).any()


def test_clip_and_where():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, np.nan, np.inf])
    check_against_numpy(lambda xp, a: xp.clip(a, -1, 1), x)
    check_against_numpy(lambda xp, a: xp.clip(a, -1.5, None), x)
    check_against_numpy(lambda xp, a: a.clip(0, 1), x)
    check_against_numpy(lambda xp, a: xp.clip(a.astype(np.int32), -1, 1), np.array([-5.0, 0.0, 3.0]))
    check_against_numpy(lambda xp, a: xp.where(a > 0, a, 0), x)
    check_against_numpy(lambda xp, a: xp.where(a > 0, a, -a.astype(np.float32)), x)
    check_against_numpy(lambda xp, a, b: xp.where(a, b, 0.5), np.array([True, False]), np.ones((3, 2), np.float32))
    check_against_numpy(lambda xp, a: xp.where(True, a, 2), x)
    check_against_numpy(lambda xp, a: xp.where(a > 0, 1, 2), x)


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round(decimals):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.25, 12.345, 155.0, np.nan, np.inf, -0.0])
    check_against_numpy(lambda xp, a: xp.round(a, decimals), x, check_zero_sign=decimals == 0)
    check_against_numpy(lambda xp, a: xp.round(a, decimals), np.array([15, 25, -15, 7], np.int64))
    check_against_numpy(lambda xp, a: a.round(decimals), x.astype(np.float32), check_zero_sign=decimals == 0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.complex128])
def test_power(dtype):
    x = sample((7,), dtype, seed=1, low=0, high=4)
    tol = _tol("power", dtype)  # NumPy's complex power multiplies out small integer exponents
    check_against_numpy(lambda xp, a: xp.power(a, 2), x, transcendental=tol)
    check_against_numpy(lambda xp, a: a ** 3, x, transcendental=tol)
    check_against_numpy(lambda xp, a: 2 ** a, x, transcendental=tol)
    if np.dtype(dtype).kind in "fc":
        check_against_numpy(lambda xp, a: a ** 0.5, x, transcendental=tol)
        check_against_numpy(lambda xp, a: a ** -1.5, x, transcendental=tol)


def test_logical_on_non_bool():
    x = np.array([0.0, 1.0, -2.0, np.nan])
    y = np.array([3, 0, 0, 1], np.int32)
    for name in ("logical_and", "logical_or", "logical_xor"):
        check_against_numpy(lambda xp, a, b: getattr(xp, name)(a, b), x, y)
    check_against_numpy(lambda xp, a: xp.logical_not(a), x)


def test_complex_parts():
    z = special_values(np.complex128)
    for fn in (lambda xp, a: xp.real(a), lambda xp, a: xp.imag(a), lambda xp, a: xp.conj(a),
               lambda xp, a: a.real, lambda xp, a: a.imag, lambda xp, a: xp.absolute(a)):
        check_against_numpy(fn, z, transcendental=True)
    check_against_numpy(lambda xp, a: xp.imag(a), np.arange(3.0))
    check_against_numpy(lambda xp, a: xp.angle(a), np.array([1 + 1j, -1 + 0j, 0 - 2j]), transcendental=True)


def test_isclose_allclose():
    x = np.array([1.0, 1.0 + 1e-9, np.nan, np.inf, -np.inf, 2.0])
    y = np.array([1.0, 1.0, np.nan, np.inf, np.inf, 2.1])
    check_against_numpy(lambda xp, a, b: xp.isclose(a, b), x, y)
    check_against_numpy(lambda xp, a, b: xp.isclose(a, b, equal_nan=True), x, y)
    check_against_numpy(lambda xp, a, b: xp.allclose(a, b), x[:2], y[:2])


# ----------------------------------------------------------------------------- operators and scalars

OPERATORS = ["a + b", "a - b", "a * b", "a / b", "a // b", "a % b", "a ** b", "a < b", "a <= b", "a > b",
             "a >= b", "a == b", "a != b"]
INT_OPERATORS = ["a << b", "a >> b", "a & b", "a | b", "a ^ b"]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("scalar", [2, 3.0, np.int32(2), np.float32(1.5)], ids=repr)
def test_operators_with_scalars(dtype, scalar):
    x = sample((2, 3), dtype, seed=5, low=1, high=6)
    ops = OPERATORS + (INT_OPERATORS if np.dtype(dtype).kind == "i" and isinstance(scalar, (int, np.integer)) else [])
    fs = [eval("lambda a, b: " + op) for op in ops]
    rs = [eval("lambda b, a: " + op) for op in ops]  # the scalar on the left: reflected operators
    # One program per case keeps compile time down; every operator is still compared separately.
    check_against_numpy(lambda xp, a: tuple(f(a, scalar) for f in fs) + tuple(r(scalar, a) for r in rs), x,
                        transcendental=True)


def test_unary_operators():
    x = np.array([[1, -2, 3]], np.int32)
    for fn in (lambda xp, a: -a, lambda xp, a: +a, lambda xp, a: ~a, lambda xp, a: abs(a),
               lambda xp, a: ~(a > 0), lambda xp, a: divmod(a, 2), lambda xp, a: divmod(7, a)):
        check_against_numpy(fn, x)


def test_numpy_array_on_the_left_dispatches_to_tracer():
    c = np.arange(3.0)
    check_against_numpy(lambda xp, a: c + a, np.ones(3))
    check_against_numpy(lambda xp, a: c * a - c / (a + 1), np.ones((2, 3), np.float32))
    check_against_numpy(lambda xp, a: c @ a, np.ones((3, 2)))
    check_against_numpy(lambda xp, a: c < a, np.ones(3))
    program = tracejit.make_jaxpr(lambda a: c + a)(np.ones(3))
    assert [e.primitive.name for e in program.eqns] == ["add"] and len(program.const_vars) == 1


def test_ufunc_methods():
    x = sample((3, 4), np.float64, seed=2)
    check_against_numpy(lambda xp, a: xp.add.reduce(a, axis=0), x)
    check_against_numpy(lambda xp, a: xp.maximum.reduce(a, axis=1), x)
    check_against_numpy(lambda xp, a: xp.add.accumulate(a, axis=1), x)
    check_against_numpy(lambda xp, a: xp.multiply.outer(a[0], a[1]), x)


# ----------------------------------------------------------------------------- hypothesis

_BIN_PROPERTY = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "less", "true_divide", "arctan2"]
_prop_dtypes = st.sampled_from([np.int32, np.float32, np.float64, np.bool_])


@st.composite
def _broadcastable_pair(draw):
    dtype = np.dtype(draw(_prop_dtypes))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    elements = None
    if dtype.kind == "i":
        elements = st.integers(-1000, 1000)
    elif dtype.kind == "f":
        elements = st.floats(width=dtype.itemsize * 8, allow_subnormal=True)
    x = draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=elements))
    y = draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=elements))
    return x, y


@settings(deadline=None, max_examples=40)
@given(pair=_broadcastable_pair(), name=st.sampled_from(_BIN_PROPERTY))
def test_property_binary_broadcasting(pair, name):
    x, y = pair
    npf = getattr(np, name)
    if not _numpy_supports(npf, x, y):
        return
    check_against_numpy(lambda xp, a, b: getattr(xp, name)(a, b), x, y, transcendental=_tol(name),
                        np_protocol=False)


@settings(deadline=None, max_examples=25)
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)),
       scalar=st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True)))
def test_property_python_scalar_keeps_array_dtype(x, scalar):
    with np.errstate(all="ignore"):
        x32 = x.astype(np.float32)
        expected = x32 * scalar + x32
    got = tracejit.jit(lambda a: a * scalar + a)(x32)
    assert_same(got, expected)
